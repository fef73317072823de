// Fuzz target: the _bulk body decoder (untrusted bytes from any client).
// Checks: no crash; one item per action; every stored record came from an
// item that says so.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "ingest/bulk_decoder.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // Detectors on, as the server runs by default: a client's `insight` member
  // makes the parser rebuild the source; metrics, runs and the (small,
  // bounded) anomaly state see every document too.
  static const dashcam::ingest::InsightDetectors detectors;
  static dashcam::ingest::TrainingAnomalies anomalies(64);
  static dashcam::ingest::DocumentParser parser({}, nullptr, &detectors, &anomalies);
  const std::string padded =
      dashcam::ingest::PadForParsing(std::string_view(reinterpret_cast<const char*>(data), size));
  dashcam::ingest::BulkLimits limits;
  limits.max_event_bytes = 4096;
  auto decoded = dashcam::ingest::DecodeBulk(padded, size, "fuzz", 1'000, limits, parser);
  if (!decoded.ok()) return 0;
  std::size_t stored = 0;
  for (const auto& item : decoded->items) {
    if (item.record != static_cast<std::size_t>(-1)) {
      if (item.record >= decoded->records.size() || item.status != 0) std::abort();
      ++stored;
    }
  }
  if (stored != decoded->records.size()) std::abort();
  return 0;
}
