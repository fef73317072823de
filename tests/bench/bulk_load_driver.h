// BulkLoadDriver: sends every BulkBody once to `POST /_bulk` over
// `connections` keep-alive connections, one thread each, the way a fleet of
// Filebeats would (Content-Type application/json; charset=UTF-8,
// Content-Encoding gzip, Filebeat's filter_path). Threads take the next
// unsent body from a shared counter, so bodies go out roughly in order.
//
// Per body: HTTP 429 means "busy": sleep (10 ms doubling to 500 ms) and
// resend the same body. A transport error reconnects and resends, up to
// kMaxTransportAttempts. Anything but 200 with "errors":false counts as a
// failed request (the first few are described on stderr).
//
// Thread-safety: DriveBulkLoad blocks until every body is done or given up;
// `bodies` must not change meanwhile. `watchdog` (may be null) is ticked
// after every exchange.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "tests/bench/bulk_bodies.h"
#include "tests/bench/watchdog.h"

namespace dashcam::bench {

inline constexpr std::string_view kBulkTarget =
    "/_bulk?filter_path=errors,items.*.error,items.*.status";
inline constexpr int kMaxTransportAttempts = 3;

struct BulkLoadResult {
  double seconds = 0;                // wall time, first send to last answer
  std::vector<double> latencies_ms;  // per successful body, 429 retries included
  int64_t events_ok = 0;
  uint64_t raw_bytes_ok = 0;  // uncompressed bytes of the successful bodies
  int64_t failed_requests = 0;
  int64_t retries_429 = 0;
  int64_t transport_errors = 0;
};

BulkLoadResult DriveBulkLoad(uint16_t port, const std::vector<BulkBody>& bodies, int connections,
                             Watchdog* watchdog);

// True if `body` is a JSON object whose top-level "errors" is false.
bool BulkAnswerHasNoErrors(std::string_view body);

}  // namespace dashcam::bench
