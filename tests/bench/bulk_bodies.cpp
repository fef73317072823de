// BulkBody: see bulk_bodies.h.
#include "tests/bench/bulk_bodies.h"

#include <algorithm>
#include <stdexcept>

#include "tests/common/http_client.h"

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

Status AppendBulkBodies(const EventCorpus& corpus, size_t batch, int gzip_level,
                        std::vector<BulkBody>& bodies) {
  for (size_t begin = 0; begin < corpus.size(); begin += batch) {
    size_t end = std::min(corpus.size(), begin + batch);
    std::string raw = RawBulkBody(corpus, begin, end);
    std::string gz;
    try {
      gz = testing::Gzip(raw, gzip_level);
    } catch (const std::runtime_error& e) {
      return Status::Internal(e.what());
    }
    // Gzip fills a deflateBound-sized buffer (> the raw size) and then
    // shrinks it: without this, every body would keep ~6x its size
    // resident (3.3 GB of 8.2 GB at 10M events).
    gz.shrink_to_fit();
    bodies.push_back(BulkBody{std::move(gz), raw.size(), end - begin});
  }
  return Status::Ok();
}

}  // namespace dashcam::bench
