// QueryLatency: times one GET of the query API (`/api/v1/search`,
// `/histogram`, `/fields`, `/context` ...) the way a user at the web page
// would see it: client-measured wall time of the whole exchange, after
// warm-up runs that are not counted; and, when given the server's pid, the
// server's CPU time for each run, which a shared machine disturbs far less.
//
// CPU time is the sum over the server's threads of the nanoseconds they ran
// (/proc/<pid>/task/*/schedstat), read before and after each exchange; it
// falls back to /proc/<pid>/stat (10 ms ticks) where schedstat is missing.
// It includes whatever else the server did meanwhile (nothing, when the
// benchmark runs queries after ingest has finished).
//
// The answer's hit count is read from a top-level "total" (a number, with
// dashcam's "total_relation": "eq" or "gte" beside it), else from
// Elasticsearch's "hits.total" ({"value":N,"relation":"eq"}).
//
// Thread-safety: uses the caller's connection; one caller at a time.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>

#include "storage/status.h"
#include "tests/common/http_client.h"

namespace dashcam::bench {

struct QueryTiming {
  double median_ms = 0;
  std::optional<double> median_server_cpu_ms;  // absent if not measured
  std::optional<int64_t> total;                // absent if the answer did not say
  std::string total_relation;                  // "eq", "gte", or empty if the answer did not say
  std::string last_body;                       // the last answer, for ids to follow up with
};

// GETs `target` warmups + runs times. Fails at the first answer that is not
// 200 (the message includes the status and the body's start), so a query
// that times out on the server costs one budget, not runs + warmups.
// `server_pid` 0: CPU time not measured. REQUIRES: runs > 0.
Result<QueryTiming> TimeGet(testing::HttpClient& conn, const std::string& target, pid_t server_pid,
                            int warmups, int runs);

// TimeGet of `/api/v1/search?q=<query>&limit=<limit>`.
Result<QueryTiming> TimeSearch(testing::HttpClient& conn, std::string_view query, int limit,
                               pid_t server_pid, int warmups, int runs);

// Nanoseconds of CPU the process `pid` has used so far, all threads; -1 if
// unreadable.
int64_t ProcessCpuNanos(pid_t pid);

}  // namespace dashcam::bench
