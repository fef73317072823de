#include "storage/scan_ranges.h"

#include <algorithm>
#include <limits>

namespace dashcam::storage {

std::vector<KeyRange> ClipRanges(std::span<const KeyRange> ranges, EventKey lo, EventKey hi) {
  std::vector<KeyRange> out;
  for (const KeyRange& r : ranges) {
    const KeyRange clipped{std::max(r.lo, lo), std::min(r.hi, hi)};
    if (clipped.lo <= clipped.hi) out.push_back(clipped);
  }
  return out;
}

std::vector<KeyRange> RangesWithin(const ScanRequest& req, EventKey lo, EventKey hi) {
  if (!req.ranges.empty()) return ClipRanges(req.ranges, lo, hi);
  if (lo > hi) return {};
  return {KeyRange{lo, hi}};
}

Result<ScanPage> ScanRangeByRange(
    const ScanRequest& req, const std::function<Result<ScanPage>(const ScanRequest&)>& scan_one) {
  if (req.limit == 0) return ScanPage{};
  std::vector<KeyRange> ranges = RangesWithin(req, req.lo, req.hi);
  if (!req.ascending) std::reverse(ranges.begin(), ranges.end());
  ScanPage page;
  std::size_t bytes = 0;
  for (const KeyRange& r : ranges) {
    if (page.events.size() >= req.limit) {  // ranges are left
      page.more = true;
      break;
    }
    ScanRequest one = req;
    one.ranges = {};
    one.lo = r.lo;
    one.hi = r.hi;
    one.limit = req.limit - page.events.size();
    if (req.max_bytes != std::numeric_limits<std::size_t>::max()) {
      one.max_bytes = req.max_bytes - bytes;
    }
    auto part = scan_one(one);
    if (!part.ok()) return part.status();
    for (StoredEvent& e : part->events) {
      bytes += e.source.size();
      page.events.push_back(std::move(e));
    }
    if (part->more) {
      page.more = true;
      break;
    }
  }
  return page;
}

}  // namespace dashcam::storage
