// The training insight endpoints against the real binary
// (api/insights_handler.h, api/runs_handler.h): failures folded into
// incidents across ranks and hosts, split by time gap and by run; runs and
// their statuses (finished, failed, stalled, running) with --stall-after;
// metric series; the read key's scope; --run-link; bad parameters.
// Incidents come from real failure lines (the detectors run at ingest; a
// client's own `insight` is dropped), runs from an explicit run.id.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <boost/json.hpp>

#include "tests/common/api_keys.h"
#include "tests/common/http_client.h"
#include "tests/common/test_server.h"

namespace dashcam::testing::training_api_test {
namespace {

namespace json = boost::json;

constexpr double kGiB = 1024.0 * 1024 * 1024;
constexpr std::int64_t kT0 = 1'795'947'795'000;  // 2026-11-29T10:23:15Z

std::int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string OomLine(double gib) {
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "RuntimeError: CUDA out of memory. Tried to allocate %.2f GiB (GPU 0; 79.40 GiB "
                "total capacity; 72.10 GiB already allocated; 1.20 GiB free; 74.20 GiB reserved in "
                "total by PyTorch)",
                gib);
  return buf;
}

constexpr const char* kXidLine =
    "NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the bus.";

struct Event {
  std::string id;
  std::int64_t ts = 0;
  std::string message;
  std::string host = "gpu-node-00";
  std::string user = "zhangsan";
  std::string run;          // empty: no run.id
  std::optional<int> rank;  // run.rank
  std::string more;         // more members, with a leading comma
};

std::string BulkBody(const std::vector<Event>& events) {
  std::string body;
  for (const Event& e : events) {
    body += R"({"create":{"_index":"train","_id":")" + e.id + "\"}}\n";
    json::object doc;
    doc["@timestamp"] = e.ts;
    doc["message"] = e.message;
    doc["host"] = json::object{{"name", e.host}};
    doc["user"] = e.user;
    if (!e.run.empty() || e.rank) {
      json::object run;
      if (!e.run.empty()) run["id"] = e.run;
      if (e.rank) run["rank"] = *e.rank;
      doc["run"] = run;
    }
    std::string text = json::serialize(doc);
    if (!e.more.empty()) text.insert(text.size() - 1, e.more);
    body += text + "\n";
  }
  return body;
}

class TrainingApiTest : public ::testing::Test {
 protected:
  void StartServer(std::vector<std::string> args = {}) {
    server_ = std::make_unique<TestServer>(dir_.path() + "/data", std::move(args));
    ASSERT_TRUE(server_->Start()) << server_->ReadLog();
    client_ = std::make_unique<HttpClient>("127.0.0.1", server_->port());
  }
  void TearDown() override {
    if (server_) {
      EXPECT_EQ(server_->Stop(), 0);
    }
  }

  void Ingest(const std::vector<Event>& events, std::map<std::string, std::string> headers = {}) {
    headers["Content-Type"] = "application/x-ndjson";
    auto res = client_->Post("/_bulk?refresh=true", BulkBody(events), headers);
    ASSERT_EQ(res.status, 200) << res.body;
    ASSERT_FALSE(json::parse(res.body).at("errors").as_bool()) << res.body.substr(0, 2000);
  }

  json::object GetJson(const std::string& target, int want = 200,
                       const std::map<std::string, std::string>& headers = {}) {
    auto res = client_->Request("GET", target, "", headers);
    EXPECT_EQ(res.status, want) << target << ": " << res.body;
    auto v = json::parse(res.body);
    return v.is_object() ? v.as_object() : json::object{};
  }

  static std::map<std::string, json::object> RunsById(const json::object& answer) {
    std::map<std::string, json::object> out;
    for (const auto& r : answer.at("runs").as_array()) {
      out[std::string(r.at("id").as_string())] = r.as_object();
    }
    return out;
  }

  TempDir dir_;
  std::unique_ptr<TestServer> server_;
  std::unique_ptr<HttpClient> client_;
};

std::vector<std::int64_t> Ints(const json::value& v) {
  std::vector<std::int64_t> out;
  for (const auto& x : v.as_array()) out.push_back(x.to_number<std::int64_t>());
  return out;
}
std::set<std::string> Strings(const json::value& v) {
  std::set<std::string> out;
  for (const auto& x : v.as_array()) out.insert(std::string(x.as_string()));
  return out;
}

// 512 OOM lines from 8 hosts x 64 ranks of one run within a minute, sent
// in a shuffled order: one incident, whose first event is the oldest.
TEST_F(TrainingApiTest, OomAcrossRanksAndHostsIsOneIncident) {
  StartServer({"--run-link", "https://mlflow.example/#/runs/{run.id}"});
  std::vector<Event> events;
  for (int i = 0; i < 512; ++i) {
    Event e;
    e.id = "oom-" + std::to_string(i);
    e.ts = kT0 + i * 100;  // 51.2 s in all
    e.message = OomLine(i == 0 ? 2.10 : 0.50);
    e.host = "gpu-node-0" + std::to_string(i / 64);
    e.run = "r-42";
    e.rank = i;
    events.push_back(e);
  }
  std::shuffle(events.begin(), events.end(), std::mt19937(42));
  // Clean lines of the same run do not count.
  events.push_back(
      {"clean", kT0 + 5, "epoch 3 step 1200 loss=0.43", "gpu-node-00", "zhangsan", "r-42", 0, ""});
  Ingest(events);

  const json::object a = GetJson("/api/v1/insights?from=2026-11-29T00:00:00Z&to=now%2B1d");
  EXPECT_TRUE(a.at("complete").as_bool());
  EXPECT_EQ(a.at("events_read").to_number<int>(), 512);
  const auto& incidents = a.at("incidents").as_array();
  ASSERT_EQ(incidents.size(), 1u) << json::serialize(a);
  const json::object& inc = incidents[0].as_object();
  EXPECT_EQ(inc.at("kind").as_string(), "cuda_oom");
  EXPECT_EQ(inc.at("severity").as_string(), "error");
  EXPECT_EQ(inc.at("run_id").as_string(), "r-42");
  EXPECT_EQ(inc.at("count").to_number<int>(), 512);
  EXPECT_EQ(inc.at("first_seen").as_string(), "2026-11-29T10:23:15.000Z");
  EXPECT_EQ(inc.at("last_seen").as_string(), "2026-11-29T10:24:06.100Z");
  EXPECT_EQ(inc.at("id").as_string(), "oom-0");
  EXPECT_EQ(inc.at("first_event").at("id").as_string(), "oom-0");
  EXPECT_EQ(inc.at("first_event").at("_index").as_string(), "train");
  EXPECT_EQ(inc.at("first_event").at("message").as_string(), OomLine(2.10));
  EXPECT_EQ(inc.at("context").as_string(), "/api/v1/context?id=oom-0");
  std::set<std::string> hosts;
  for (int h = 0; h < 8; ++h) hosts.insert("gpu-node-0" + std::to_string(h));
  EXPECT_EQ(Strings(inc.at("hosts")), hosts);
  EXPECT_EQ(Strings(inc.at("users")), std::set<std::string>{"zhangsan"});
  const auto ranks = Ints(inc.at("ranks"));
  ASSERT_EQ(ranks.size(), 512u);
  EXPECT_EQ(ranks.front(), 0);
  EXPECT_EQ(ranks.back(), 511);
  EXPECT_EQ(Ints(inc.at("gpus")), std::vector<std::int64_t>{0});
  const json::object& facts = inc.at("facts").as_object();
  EXPECT_EQ(facts.at("bytes_requested").to_number<double>(), std::round(2.10 * kGiB));
  EXPECT_EQ(facts.at("bytes_total").to_number<double>(), std::round(79.40 * kGiB));
  EXPECT_EQ(facts.at("bytes_allocated").to_number<double>(), std::round(72.10 * kGiB));
  EXPECT_EQ(facts.at("bytes_reserved").to_number<double>(), std::round(74.20 * kGiB));
  EXPECT_EQ(facts.at("gpu").to_number<int>(), 0);
  EXPECT_EQ(inc.at("title").as_string(), "CUDA out of memory on gpu-node-00 GPU 0");
  const std::string explanation(inc.at("explanation").as_string());
  EXPECT_NE(explanation.find("run r-42, user zhangsan"), std::string::npos) << explanation;
  EXPECT_NE(explanation.find("first at 10:23:15 UTC"), std::string::npos) << explanation;
  EXPECT_NE(explanation.find("tried to allocate 2.10 GiB with 72.1 of 79.4 GiB allocated and "
                             "74.2 GiB reserved by PyTorch"),
            std::string::npos)
      << explanation;
  EXPECT_GE(inc.at("fixes").as_array().size(), 2u);
  EXPECT_EQ(inc.at("run_link").as_string(), "https://mlflow.example/#/runs/r-42");

  // The same through the run: failed, with that incident, and its link.
  const auto runs = RunsById(GetJson("/api/v1/runs"));
  ASSERT_EQ(runs.size(), 1u);
  const json::object& run = runs.at("r-42");
  EXPECT_EQ(run.at("status").as_string(), "failed");
  EXPECT_EQ(run.at("events").to_number<int>(), 513);
  EXPECT_EQ(run.at("incident").at("id").as_string(), "oom-0");
  EXPECT_EQ(run.at("incident").at("kind").as_string(), "cuda_oom");
  EXPECT_EQ(run.at("link").as_string(), "https://mlflow.example/#/runs/r-42");
  EXPECT_EQ(Strings(run.at("hosts")), hosts);
  EXPECT_EQ(run.at("first_seen").as_string(), "2026-11-29T10:23:15.000Z");
}

// A gap longer than --incident-gap splits; another run, or a host without
// a run, is another incident. Newest first.
TEST_F(TrainingApiTest, GapsRunsAndHostsSeparateIncidents) {
  StartServer();
  std::vector<Event> events;
  for (int burst = 0; burst < 2; ++burst) {
    for (int i = 0; i < 10; ++i) {
      const std::int64_t t = kT0 + burst * 20 * 60'000 + i * 1'000;
      events.push_back({"a" + std::to_string(burst) + "-" + std::to_string(i), t, OomLine(1),
                        "gpu-node-01", "u", "r-1", i, ""});
      events.push_back({"b" + std::to_string(burst) + "-" + std::to_string(i), t + 1, OomLine(1),
                        "gpu-node-02", "u", "r-2", i, ""});
    }
  }
  events.push_back({"xid", kT0 + 30'000, kXidLine, "gpu-node-05", "root", "", std::nullopt, ""});
  Ingest(events);
  const json::object a = GetJson("/api/v1/insights");
  const auto& list = a.at("incidents").as_array();
  ASSERT_EQ(list.size(), 5u) << json::serialize(a);
  std::map<std::string, int> by_run_first;
  std::string previous = "9999";
  for (const auto& v : list) {
    const auto& inc = v.as_object();
    const std::string first(inc.at("first_seen").as_string());
    EXPECT_LE(first, previous);  // newest first
    previous = first;
    if (inc.at("kind") == "xid") {
      EXPECT_TRUE(inc.at("run_id").is_null());
      EXPECT_EQ(inc.at("severity").as_string(), "critical");
      EXPECT_EQ(Strings(inc.at("hosts")), std::set<std::string>{"gpu-node-05"});
      EXPECT_EQ(inc.at("facts").at("xid").to_number<int>(), 79);
      EXPECT_NE(std::string(inc.at("explanation").as_string()).find("fallen off the bus"),
                std::string::npos);
      EXPECT_TRUE(inc.at("run_link").is_null());
      continue;
    }
    EXPECT_EQ(inc.at("count").to_number<int>(), 10);
    ++by_run_first[std::string(inc.at("run_id").as_string())];
    const std::string id(inc.at("id").as_string());
    EXPECT_TRUE(id == "a0-0" || id == "a1-0" || id == "b0-0" || id == "b1-0") << id;
  }
  EXPECT_EQ(by_run_first, (std::map<std::string, int>{{"r-1", 2}, {"r-2", 2}}));

  // limit and q narrow it; q's scope applies to the insight events.
  const json::object one = GetJson("/api/v1/insights?limit=1");
  ASSERT_EQ(one.at("incidents").as_array().size(), 1u);
  EXPECT_EQ(one.at("incidents").as_array()[0].at("first_seen").as_string(),
            list[0].at("first_seen").as_string());
  const json::object node2 = GetJson("/api/v1/insights?q=" + UrlEncode("host.name:gpu-node-02"));
  EXPECT_EQ(node2.at("incidents").as_array().size(), 2u);
  // A longer gap folds the bursts.
  server_->Stop();
  server_.reset();
  StartServer({"--incident-gap", "30m"});
  EXPECT_EQ(GetJson("/api/v1/insights").at("incidents").as_array().size(), 3u);
}

TEST_F(TrainingApiTest, RunStatusesAndExactRunIds) {
  StartServer({"--stall-after", "2s", "--run-link", "https://wandb.example/runs/{run.id}"});
  const std::int64_t hour_ago = NowMs() - 3'600'000;
  const std::int64_t soon = NowMs() + 600'000;  // "running" whatever the test's speed
  std::vector<Event> events;
  auto add = [&](const std::string& run, std::int64_t t, std::string message, std::string more = "",
                 std::string host = "gpu-node-00", std::string user = "zhangsan",
                 std::optional<int> rank = std::nullopt) {
    events.push_back({run + "-" + std::to_string(events.size()), t, std::move(message),
                      std::move(host), std::move(user), run, rank, std::move(more)});
  };
  for (int i = 0; i < 5; ++i) add("r-fin", hour_ago + i, "step", "", "n1", "alice", i);
  add("r-fin", hour_ago + 10, "training finished", R"(,"run.end":"finished")", "n1", "alice");
  for (int i = 0; i < 3; ++i) add("r-fail", hour_ago + i, "step");
  add("r-fail", hour_ago + 5, OomLine(3));
  add("r-fail", hour_ago + 6, "CUDA available: False");  // a warning only
  for (int i = 0; i < 3; ++i) add("r-stall", hour_ago + i, "step", "", "n2", "bob", i);
  add("r-warn", hour_ago, "step");
  add("r-warn", soon, "torch.cuda.is_available() returned False");  // warning: not failed
  for (int i = 0; i < 3; ++i) add("r-42", soon + i, "step");
  for (int i = 0; i < 2; ++i) add("r-42-b", soon + i, "step");
  add("exp/7 b", soon, "step");
  Ingest(events);

  const json::object a = GetJson("/api/v1/runs");
  EXPECT_EQ(a.at("stall_after_s").to_number<int>(), 2);
  const auto runs = RunsById(a);
  ASSERT_EQ(runs.size(), 7u) << json::serialize(a);
  EXPECT_EQ(runs.at("r-fin").at("status").as_string(), "finished");
  EXPECT_EQ(runs.at("r-fin").at("events").to_number<int>(), 6);
  EXPECT_EQ(Strings(runs.at("r-fin").at("hosts")), std::set<std::string>{"n1"});
  EXPECT_EQ(Strings(runs.at("r-fin").at("users")), std::set<std::string>{"alice"});
  EXPECT_EQ(Ints(runs.at("r-fin").at("ranks")), (std::vector<std::int64_t>{0, 1, 2, 3, 4}));
  EXPECT_TRUE(runs.at("r-fin").at("incident").is_null());
  EXPECT_EQ(runs.at("r-fail").at("status").as_string(), "failed");
  EXPECT_EQ(runs.at("r-fail").at("incident").at("kind").as_string(), "cuda_oom");
  EXPECT_EQ(runs.at("r-fail").at("incident").at("title").as_string(),
            "CUDA out of memory on gpu-node-00 GPU 0");
  EXPECT_EQ(runs.at("r-stall").at("status").as_string(), "stalled");
  EXPECT_EQ(runs.at("r-warn").at("status").as_string(), "running");
  EXPECT_EQ(runs.at("r-42").at("status").as_string(), "running");
  EXPECT_EQ(runs.at("r-42").at("events").to_number<int>(), 3);
  EXPECT_EQ(runs.at("r-42-b").at("events").to_number<int>(), 2);
  EXPECT_EQ(runs.at("exp/7 b").at("link").as_string(), "https://wandb.example/runs/exp%2F7%20b");
  // Newest last_seen first.
  const auto& list = a.at("runs").as_array();
  for (std::size_t i = 1; i < list.size(); ++i) {
    EXPECT_GE(list[i - 1].at("last_seen").as_string(), list[i].at("last_seen").as_string());
  }
  // q: runs with a matching event; from/to: runs overlapping the range.
  EXPECT_EQ(RunsById(GetJson("/api/v1/runs?q=" + UrlEncode("user:bob"))).size(), 1u);
  const auto recent = RunsById(GetJson("/api/v1/runs?from=now-10m&to=now%2B1d"));
  EXPECT_EQ(recent.count("r-fin"), 0u);
  EXPECT_EQ(recent.count("r-42"), 1u);
}

TEST_F(TrainingApiTest, MetricSeriesAreOldestFirstAndThinned) {
  StartServer();
  std::vector<Event> events;
  for (int i = 0; i < 3000; ++i) {
    events.push_back({"m" + std::to_string(i), kT0 + i * 1'000, "step", "n", "u", "r-big",
                      std::nullopt,
                      ",\"train\":{\"loss\":" + std::to_string(3000 - i) + ".5" +
                          ",\"step\":" + std::to_string(i) + "}"});
  }
  std::shuffle(events.begin(), events.end(), std::mt19937(7));
  for (int i = 0; i < 5; ++i) {
    events.push_back({"s" + std::to_string(i), kT0 + i * 60'000, "step", "n", "u", "r-42",
                      std::nullopt,
                      i == 2 ? "" : ",\"train\":{\"loss\":" + std::to_string(5 - i) + "}"});
    events.push_back({"sb" + std::to_string(i), kT0 + i * 60'000, "step", "n", "u", "r-42-b",
                      std::nullopt, ",\"train\":{\"loss\":100}"});
  }
  Ingest(events);

  const json::object small = GetJson("/api/v1/runs/r-42/metrics?name=loss");
  EXPECT_EQ(small.at("run").as_string(), "r-42");
  EXPECT_EQ(small.at("field").as_string(), "train.loss");
  EXPECT_FALSE(small.at("sampled").as_bool());
  const auto& pts = small.at("points").as_array();
  ASSERT_EQ(pts.size(), 4u) << json::serialize(small);  // the event without a loss is not one
  const double want[] = {5, 4, 2, 1};
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(pts[i].at("value").to_number<double>(), want[i]);
    EXPECT_TRUE(pts[i].at("step").is_null());
  }
  EXPECT_EQ(pts[0].at("t").as_string(), "2026-11-29T10:23:15.000Z");

  const json::object big = GetJson("/api/v1/runs/r-big/metrics?name=loss");
  EXPECT_TRUE(big.at("sampled").as_bool());
  const auto& bp = big.at("points").as_array();
  ASSERT_EQ(bp.size(), 2000u);
  EXPECT_EQ(bp.front().at("step").to_number<int>(), 0);
  EXPECT_EQ(bp.back().at("step").to_number<int>(), 2999);
  for (std::size_t i = 1; i < bp.size(); ++i) {
    ASSERT_LT(bp[i - 1].at("step").to_number<int>(), bp[i].at("step").to_number<int>());
    ASSERT_LT(bp[i].at("value").to_number<double>(), bp[i - 1].at("value").to_number<double>());
  }
  // A range narrows it; the step series is there too.
  const json::object ranged = GetJson(
      "/api/v1/runs/r-big/metrics?name=step&from=2026-11-29T10:23:15Z&to=2026-11-29T10:23:25Z");
  EXPECT_EQ(ranged.at("points").as_array().size(), 10u);

  const json::object bad = GetJson("/api/v1/runs/r-42/metrics?name=accuracy", 400);
  EXPECT_NE(std::string(bad.at("error").at("reason").as_string()).find("[name]"),
            std::string::npos);
  GetJson("/api/v1/runs/r-42/metrics", 400);
  const json::object missing = GetJson("/api/v1/runs/r-4/metrics?name=loss", 404);
  EXPECT_NE(std::string(missing.at("error").at("reason").as_string()).find("r-4"),
            std::string::npos);
}

TEST_F(TrainingApiTest, BadParametersAre400WithAReason) {
  StartServer();
  for (const std::string target :
       {"/api/v1/insights?limit=0", "/api/v1/insights?limit=x", "/api/v1/insights?from=yesterday",
        "/api/v1/runs?limit=100000", "/api/v1/runs?from=now&to=now-1h",
        "/api/v1/insights?from=now&to=now-1h"}) {
    const json::object e = GetJson(target, 400);
    ASSERT_TRUE(e.contains("error")) << target;
    EXPECT_EQ(e.at("error").at("type").as_string(), "illegal_argument") << target;
    EXPECT_FALSE(e.at("error").at("reason").as_string().empty()) << target;
  }
  const json::object q = GetJson("/api/v1/insights?q=" + UrlEncode("user:(x"), 400);
  EXPECT_EQ(q.at("error").at("type").as_string(), "query_parse_error");
  EXPECT_TRUE(q.at("error").as_object().contains("position"));
  GetJson("/api/v1/runs?q=" + UrlEncode("a AND"), 400);
}

// A read key with filter user:x sees only x's incidents, runs and events.
TEST_F(TrainingApiTest, ReadKeyScopeApplies) {
  const std::string keys = dir_.path() + "/keys.yml";
  {
    std::ofstream f(keys);
    f << "keys:\n"
      << HashKeyEntry("ingester", "ingest", "ingest-secret-1")
      << HashKeyEntry("x", "read", "x-secret-value", "user:x")
      << HashKeyEntry("reader", "read", "read-secret-2");
  }
  // The options reach a scoped key's requests too.
  StartServer({"--auth-file", keys, "--run-link", "https://mlflow.example/#/runs/{run.id}"});
  const std::map<std::string, std::string> ingest = {
      {"Authorization", "ApiKey " + Base64("ingester:ingest-secret-1")}};
  const std::map<std::string, std::string> x = {
      {"Authorization", "ApiKey " + Base64("x:x-secret-value")}};
  const std::map<std::string, std::string> all = {
      {"Authorization", "ApiKey " + Base64("reader:read-secret-2")}};
  std::vector<Event> events;
  for (int i = 0; i < 4; ++i) {
    events.push_back(
        {"x" + std::to_string(i), kT0 + i, "step", "n1", "x", "r-x", i, ",\"train\":{\"loss\":1}"});
    events.push_back(
        {"y" + std::to_string(i), kT0 + i, "step", "n2", "y", "r-y", i, ",\"train\":{\"loss\":2}"});
    events.push_back({"sx" + std::to_string(i), kT0 + 10 + i, "step", "n1", "x", "r-shared", i,
                      ",\"train\":{\"loss\":3}"});
  }
  events.push_back({"oom-x", kT0 + 100, OomLine(1), "n1", "x", "r-x", 0, ""});
  events.push_back({"oom-y", kT0 + 100, OomLine(2), "n2", "y", "r-y", 0, ""});
  events.push_back({"oom-sy", kT0 + 200, OomLine(2), "n2", "y", "r-shared", 9, ""});
  Ingest(events, ingest);

  const json::object xi = GetJson("/api/v1/insights", 200, x);
  ASSERT_EQ(xi.at("incidents").as_array().size(), 1u) << json::serialize(xi);
  EXPECT_EQ(xi.at("incidents").as_array()[0].at("id").as_string(), "oom-x");
  EXPECT_EQ(xi.at("incidents").as_array()[0].at("run_link").as_string(),
            "https://mlflow.example/#/runs/r-x");
  EXPECT_EQ(GetJson("/api/v1/insights", 200, all).at("incidents").as_array().size(), 3u);

  const auto xr = RunsById(GetJson("/api/v1/runs", 200, x));
  ASSERT_EQ(xr.size(), 2u);
  EXPECT_EQ(xr.count("r-y"), 0u);
  EXPECT_EQ(xr.at("r-x").at("status").as_string(), "failed");
  EXPECT_EQ(xr.at("r-x").at("link").as_string(), "https://mlflow.example/#/runs/r-x");
  EXPECT_EQ(xr.at("r-shared").at("events").to_number<int>(), 4);  // y's OOM is not x's
  EXPECT_NE(xr.at("r-shared").at("status").as_string(), "failed");
  EXPECT_EQ(Strings(xr.at("r-shared").at("users")), std::set<std::string>{"x"});
  EXPECT_EQ(
      RunsById(GetJson("/api/v1/runs", 200, all)).at("r-shared").at("events").to_number<int>(), 5);
  // Another user's run has no metrics for x: not found, as if absent.
  GetJson("/api/v1/runs/r-y/metrics?name=loss", 404, x);
  EXPECT_EQ(GetJson("/api/v1/runs/r-x/metrics?name=loss", 200, x).at("points").as_array().size(),
            4u);
  // Without a key: 401.
  EXPECT_EQ(client_->Get("/api/v1/runs").status, 401);
}

}  // namespace
}  // namespace dashcam::testing::training_api_test
