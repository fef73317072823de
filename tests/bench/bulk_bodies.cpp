// BulkBody: see bulk_bodies.h.
#include "tests/bench/bulk_bodies.h"

#include <algorithm>

#include "tests/bench/gzip_compress.h"

namespace dashcam::bench {
namespace {

// The uncompressed NDJSON of events [begin, end).
std::string RawBulkBody(const EventCorpus& corpus, size_t begin, size_t end) {
  std::string raw;
  for (size_t i = begin; i < end; ++i) {
    raw += kBulkActionLine;
    raw += '\n';
    raw += corpus.Json(i);
    raw += '\n';
  }
  return raw;
}

}  // namespace

Result<std::vector<BulkBody>> BuildBulkBodies(const EventCorpus& corpus, size_t batch,
                                              int gzip_level) {
  std::vector<BulkBody> bodies;
  bodies.reserve((corpus.size() + batch - 1) / batch);
  for (size_t begin = 0; begin < corpus.size(); begin += batch) {
    size_t end = std::min(corpus.size(), begin + batch);
    std::string raw = RawBulkBody(corpus, begin, end);
    Result<std::string> gz = GzipCompress(raw, gzip_level);
    if (!gz.ok()) return gz.status();
    bodies.push_back(BulkBody{std::move(gz).value(), raw.size(), end - begin});
  }
  return bodies;
}

}  // namespace dashcam::bench
