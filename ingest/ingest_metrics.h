// The ingest counters of /metrics, shared by every protocol (bulk, ndjson,
// beats) so that one family carries them all:
//   dashcam_ingest_events_total{protocol}  events stored
//   dashcam_ingest_bytes_total{protocol}   bytes received: decompressed request
//                                          bodies (HTTP), event JSON (Beats)
//   dashcam_ingest_rejected_total{reason}  events not stored
// Thread-safety: any thread (Metrics is).
#pragma once

#include <cstdint>
#include <string_view>

#include "storage/metrics.h"

namespace dashcam::ingest {

// Creates the per-protocol series at zero, so that they exist before the
// first event arrives.
void RegisterIngestMetrics(Metrics& m);
void CountIngested(Metrics& m, std::string_view protocol, std::uint64_t events,
                   std::uint64_t bytes);
void CountRejected(Metrics& m, std::string_view reason, std::uint64_t n = 1);

}  // namespace dashcam::ingest
