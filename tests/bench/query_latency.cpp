// QueryLatency: see query_latency.h.
#include "tests/bench/query_latency.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <vector>

#include <boost/json/parse.hpp>

#include "tests/bench/report.h"
#include "tests/bench/stream_load.h"

namespace dashcam::bench {
namespace {

struct HitCount {
  std::optional<int64_t> total;
  std::string relation;
};

std::string StringOf(const boost::json::value* v) {
  return v != nullptr && v->is_string() ? std::string(v->get_string()) : std::string();
}

// `v` is a number, or an object {"value":N,"relation":R}.
HitCount CountOf(const boost::json::value* v) {
  if (v == nullptr) return {};
  if (v->is_int64()) return {v->get_int64(), ""};
  if (v->is_uint64()) return {static_cast<int64_t>(v->get_uint64()), ""};
  if (!v->is_object()) return {};
  const boost::json::object& obj = v->get_object();
  return {CountOf(obj.if_contains("value")).total, StringOf(obj.if_contains("relation"))};
}

HitCount ParseHitCount(std::string_view body) {
  boost::system::error_code ec;
  boost::json::value answer = boost::json::parse(body, ec);
  if (ec || !answer.is_object()) return {};
  const boost::json::object& obj = answer.get_object();
  if (HitCount count = CountOf(obj.if_contains("total")); count.total) {
    if (count.relation.empty()) count.relation = StringOf(obj.if_contains("total_relation"));
    return count;
  }
  const boost::json::value* hits = obj.if_contains("hits");
  if (hits == nullptr || !hits->is_object()) return {};
  return CountOf(hits->get_object().if_contains("total"));
}

// One timed exchange; the reply is kept for its total.
Result<testing::HttpResult> RunOnce(testing::HttpClient& conn, const std::string& target,
                                    double& elapsed_ms) {
  auto start = std::chrono::steady_clock::now();
  testing::HttpResult reply = conn.Get(target);
  elapsed_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (reply.status == 0) return Status::IoError(reply.error);
  if (reply.status != 200) {
    return Status::Unavailable("HTTP " + std::to_string(reply.status) + ": " +
                               reply.body.substr(0, 500));
  }
  return reply;
}

// Sum of the first field (ns on CPU) of every thread's schedstat; -1 if
// none could be read.
int64_t SchedstatNanos(pid_t pid) {
  namespace fs = std::filesystem;
  std::error_code ec;
  int64_t total = 0;
  bool any = false;
  for (fs::directory_iterator it("/proc/" + std::to_string(pid) + "/task", ec), end;
       !ec && it != end; it.increment(ec)) {
    std::ifstream in(it->path() / "schedstat");
    long long ns = 0;
    if (in >> ns) {
      total += ns;
      any = true;
    }
  }
  return any ? total : -1;
}

}  // namespace

int64_t ProcessCpuNanos(pid_t pid) {
  if (pid <= 0) return -1;
  if (int64_t ns = SchedstatNanos(pid); ns >= 0) return ns;
  const double seconds = ProcessCpuSeconds(pid);
  return seconds > 0 ? static_cast<int64_t>(seconds * 1e9) : -1;
}

Result<QueryTiming> TimeGet(testing::HttpClient& conn, const std::string& target, pid_t server_pid,
                            int warmups, int runs) {
  std::vector<double> times, cpu_ms;
  QueryTiming timing;
  for (int i = 0; i < warmups + runs; ++i) {
    double elapsed_ms = 0;
    const int64_t cpu_before = ProcessCpuNanos(server_pid);
    Result<testing::HttpResult> reply = RunOnce(conn, target, elapsed_ms);
    const int64_t cpu_after = ProcessCpuNanos(server_pid);
    if (!reply.ok()) return reply.status();
    if (i < warmups) continue;
    times.push_back(elapsed_ms);
    if (cpu_before >= 0 && cpu_after >= cpu_before) {
      cpu_ms.push_back(static_cast<double>(cpu_after - cpu_before) / 1e6);
    }
    HitCount count = ParseHitCount(reply->body);
    timing.total = count.total;
    timing.total_relation = std::move(count.relation);
    timing.last_body = std::move(reply->body);
  }
  timing.median_ms = Percentile(std::move(times), 50);
  if (!cpu_ms.empty()) timing.median_server_cpu_ms = Percentile(std::move(cpu_ms), 50);
  return timing;
}

Result<QueryTiming> TimeSearch(testing::HttpClient& conn, std::string_view query, int limit,
                               pid_t server_pid, int warmups, int runs) {
  return TimeGet(
      conn, "/api/v1/search?q=" + testing::UrlEncode(query) + "&limit=" + std::to_string(limit),
      server_pid, warmups, runs);
}

}  // namespace dashcam::bench
