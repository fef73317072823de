#include "ingest/ingest_metrics.h"

#include <string>

#include <fmt/format.h>

namespace dashcam::ingest {

void RegisterIngestMetrics(Metrics& m) {
  for (std::string_view protocol : {"bulk", "ndjson", "beats"}) CountIngested(m, protocol, 0, 0);
}

void CountIngested(Metrics& m, std::string_view protocol, std::uint64_t events,
                   std::uint64_t bytes) {
  const std::string labels = fmt::format("protocol=\"{}\"", protocol);
  m.GetCounter("dashcam_ingest_events_total", "Events stored, by protocol.", labels).Add(events);
  m.GetCounter("dashcam_ingest_bytes_total",
               "Bytes received, by protocol: decompressed request bodies (bulk, ndjson), event "
               "JSON (beats).",
               labels)
      .Add(bytes);
}

void CountRejected(Metrics& m, std::string_view reason, std::uint64_t n) {
  m.GetCounter("dashcam_ingest_rejected_total", "Events not stored, by reason.",
               fmt::format("reason=\"{}\"", reason))
      .Add(n);
}

}  // namespace dashcam::ingest
