// QueryLatency: times one search through `GET /api/v1/search?q=<q>&limit=<n>`
// the way a user at the web page would see it: client-measured wall time of
// the whole exchange, after warm-up runs that are not counted.
//
// The answer's hit count is read from a top-level "total" (a number, with
// dashcam's "total_relation": "eq" or "gte" beside it), else from
// Elasticsearch's "hits.total" ({"value":N,"relation":"eq"}).
//
// Thread-safety: uses the caller's connection; one caller at a time.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "storage/status.h"
#include "tests/common/http_client.h"

namespace dashcam::bench {

struct QueryTiming {
  double median_ms = 0;
  std::optional<int64_t> total;  // absent if the answer did not say
  std::string total_relation;    // "eq", "gte", or empty if the answer did not say
};

// Fails if any run does not answer 200 (the message includes the body).
// REQUIRES: runs > 0.
Result<QueryTiming> TimeSearch(testing::HttpClient& conn, std::string_view query, int limit,
                               int warmups, int runs);

}  // namespace dashcam::bench
