// Scans over several key ranges (ScanRequest::ranges): which keys a request
// covers, and a scan of them one range at a time for a backend with no
// cheaper way to run them together (the ClickHouse store).
//
// Thread-safety: none needed; nothing is kept between calls.
#pragma once

#include <functional>
#include <span>
#include <vector>

#include "storage/event_store.h"

namespace dashcam::storage {

// The parts of `ranges` (ascending) inside [lo, hi], ascending, empty ones
// left out.
std::vector<KeyRange> ClipRanges(std::span<const KeyRange> ranges, EventKey lo, EventKey hi);
// The parts of req.ranges inside [lo, hi]; [lo, hi] itself when req.ranges
// is empty (and lo <= hi).
std::vector<KeyRange> RangesWithin(const ScanRequest& req, EventKey lo, EventKey hi);

// One page of `req` made of single-range scans (`scan_one`, given requests
// with no ranges), range after range in the scan's order, each with what is
// left of the page's limit and byte budget. Stops at the first error.
Result<ScanPage> ScanRangeByRange(
    const ScanRequest& req, const std::function<Result<ScanPage>(const ScanRequest&)>& scan_one);

}  // namespace dashcam::storage
