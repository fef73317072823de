// BulkBody: one `POST /_bulk` request body as Filebeat would send it: for
// every event the action line {"create":{"_index":"filebeat-8.17.0"}} and
// the event's JSON, each ending in '\n', the whole gzip-compressed.
// Bodies are built before the clock starts so that the client's compression
// does not compete with the server for the same cores.
//
// Thread-safety: BulkBody is immutable once built; share it freely.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "storage/status.h"
#include "tests/bench/event_corpus.h"

namespace dashcam::bench {

inline constexpr std::string_view kBulkActionLine = R"({"create":{"_index":"filebeat-8.17.0"}})";

struct BulkBody {
  std::string gzip;      // the request body as sent
  size_t raw_bytes = 0;  // its uncompressed size (action and source lines)
  size_t events = 0;
};

// Splits the corpus into bodies of `batch` events (the last may be shorter)
// and appends them to `bodies`. A corpus drawn in chunks (CorpusChunks) whose
// size is a multiple of `batch` gives the same bodies as one whole corpus.
// REQUIRES: batch > 0, 0 <= gzip_level <= 9.
Status AppendBulkBodies(const EventCorpus& corpus, size_t batch, int gzip_level,
                        std::vector<BulkBody>& bodies);

}  // namespace dashcam::bench
