// CountStored: what the server holds, counted by one top-level string field
// of each stored document, read through GET /api/v1/export (every event,
// oldest first). For tests that give every event a unique value (e.g. `ev`)
// and check that each was stored exactly once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace dashcam::testing {

struct StoredCounts {
  std::map<std::string, int> by_value;     // value -> how many stored events carry it
  std::size_t events = 0;                  // stored events read
  std::vector<std::string> without_field;  // the export lines of events that lack it
  std::string error;                       // why the export failed; empty on success
};

// False (with out.error) when the export does not answer 200.
bool CountStored(std::uint16_t port, std::string_view field, StoredCounts& out);

// A stored source without the `insight` member the server appends last
// when a detector fired (README "Insights at ingest"), so that it can be
// compared byte for byte with what was sent. Other sources are returned as
// they are.
std::string WithoutServerInsight(std::string_view source);

// A stored source without every member the server appends when detectors
// are on: `insight`, `run` and `train` (README "Training metrics and
// runs"), each only when it is last, in that order.
std::string WithoutServerAdditions(std::string_view source);

}  // namespace dashcam::testing
