// BulkLoadDriver: see bulk_load_driver.h.
#include "tests/bench/bulk_load_driver.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include <boost/json/parse.hpp>

#include "storage/status.h"
#include "tests/common/http_client.h"

namespace dashcam::bench {
namespace {

using testing::HttpClient;
using testing::HttpResult;
using Clock = std::chrono::steady_clock;

constexpr std::chrono::milliseconds kFirstBackoff{10};
constexpr std::chrono::milliseconds kMaxBackoff{500};
constexpr int kMax429Retries = 2000;  // ~15 minutes of "busy" before giving up
constexpr int kFailuresDescribed = 5;

// State shared by the sending threads.
struct SharedLoad {
  const std::vector<BulkBody>& bodies;
  Watchdog* watchdog;
  std::atomic<size_t> next_body{0};
  std::atomic<int> failures_described{0};
};

// What one thread saw; merged after the threads join.
struct ThreadTally {
  std::vector<double> latencies_ms;
  int64_t events_ok = 0;
  uint64_t raw_bytes_ok = 0;
  int64_t failed_requests = 0;
  int64_t retries_429 = 0;
  int64_t transport_errors = 0;
};

const std::map<std::string, std::string> kBulkHeaders = {
    {"Content-Type", "application/json; charset=UTF-8"},
    {"Content-Encoding", "gzip"},
    {"User-Agent", "dashcam_bench (Filebeat-shaped)"}};

void DescribeFailure(SharedLoad& shared, std::string_view what) {
  if (shared.failures_described.fetch_add(1) >= kFailuresDescribed) return;
  std::fprintf(stderr, "bulk failure: %.*s\n", static_cast<int>(std::min<size_t>(what.size(), 500)),
               what.data());
}

// Sends one body until it succeeds or is given up; records the outcome.
void SendBody(HttpClient& conn, const BulkBody& body, SharedLoad& shared, ThreadTally& tally) {
  auto start = Clock::now();
  auto backoff = kFirstBackoff;
  int transport_attempts = 0;
  for (int busy = 0; busy <= kMax429Retries;) {
    HttpResult reply = conn.Post(kBulkTarget, body.gzip, kBulkHeaders);
    if (shared.watchdog) shared.watchdog->Tick();
    if (reply.status == 0) {
      ++tally.transport_errors;
      if (++transport_attempts < kMaxTransportAttempts) continue;
      DescribeFailure(shared, Status::IoError(reply.error).ToString());
      break;
    }
    if (reply.status == 429) {
      ++tally.retries_429;
      ++busy;
      std::this_thread::sleep_for(backoff);
      backoff = std::min(backoff * 2, kMaxBackoff);
      continue;
    }
    if (reply.status == 200 && BulkAnswerHasNoErrors(reply.body)) {
      tally.latencies_ms.push_back(
          std::chrono::duration<double, std::milli>(Clock::now() - start).count());
      tally.events_ok += static_cast<int64_t>(body.events);
      tally.raw_bytes_ok += body.raw_bytes;
      return;
    }
    DescribeFailure(shared, "HTTP " + std::to_string(reply.status) + ": " + reply.body);
    break;
  }
  ++tally.failed_requests;
}

void SendLoop(uint16_t port, SharedLoad& shared, ThreadTally& tally) {
  // Transport errors are counted and resent here, not inside the client.
  HttpClient conn("127.0.0.1", port, {.retry_once = false});
  for (;;) {
    size_t i = shared.next_body.fetch_add(1);
    if (i >= shared.bodies.size()) return;
    SendBody(conn, shared.bodies[i], shared, tally);
  }
}

void Merge(const ThreadTally& tally, BulkLoadResult& result) {
  result.latencies_ms.insert(result.latencies_ms.end(), tally.latencies_ms.begin(),
                             tally.latencies_ms.end());
  result.events_ok += tally.events_ok;
  result.raw_bytes_ok += tally.raw_bytes_ok;
  result.failed_requests += tally.failed_requests;
  result.retries_429 += tally.retries_429;
  result.transport_errors += tally.transport_errors;
}

}  // namespace

bool BulkAnswerHasNoErrors(std::string_view body) {
  boost::system::error_code ec;
  boost::json::value answer = boost::json::parse(body, ec);
  if (ec || !answer.is_object()) return false;
  const boost::json::value* errors = answer.get_object().if_contains("errors");
  return errors != nullptr && errors->is_bool() && !errors->get_bool();
}

BulkLoadResult DriveBulkLoad(uint16_t port, const std::vector<BulkBody>& bodies, int connections,
                             Watchdog* watchdog) {
  SharedLoad shared{bodies, watchdog};
  std::vector<ThreadTally> tallies(static_cast<size_t>(connections));
  std::vector<std::thread> threads;
  auto start = Clock::now();
  for (ThreadTally& tally : tallies) {
    threads.emplace_back([&, port] { SendLoop(port, shared, tally); });
  }
  for (std::thread& t : threads) t.join();
  BulkLoadResult result;
  result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  for (const ThreadTally& tally : tallies) Merge(tally, result);
  return result;
}

}  // namespace dashcam::bench
