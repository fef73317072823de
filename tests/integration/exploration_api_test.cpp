// The exploration API against the real binary: GET /api/v1/histogram,
// /api/v1/fields and /api/v1/context, search's highlight and format=text,
// and ?pretty. Each test starts its own server with its own data directory
// and ingests a small, hand-made set of events whose answers are known.
#include <algorithm>
#include <chrono>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <boost/json.hpp>

#include "storage/time_format.h"
#include "tests/common/http_client.h"
#include "tests/common/test_server.h"

namespace dashcam::testing::exploration_api_test {
namespace {

namespace json = boost::json;

// 2026-11-29T10:00:00Z.
constexpr TimeMs kT0 = 1795910400000 + 10 * 3'600'000;
constexpr TimeMs kMin = 60'000;

std::string Ts(TimeMs t) {
  return FormatRfc3339Ms(t);
}

// One NDJSON event; `extra` is more members, already JSON ("\"a\":1").
std::string Event(TimeMs t, std::string_view message, std::string_view extra = "") {
  json::object o;
  o["@timestamp"] = Ts(t);
  o["message"] = message;
  std::string s = json::serialize(o);
  if (!extra.empty()) s = s.substr(0, s.size() - 1) + "," + std::string(extra) + "}";
  return s;
}

class ExplorationApiTest : public ::testing::Test {
 protected:
  void SetUp() override { StartServer({}); }
  void TearDown() override {
    if (server_) {
      EXPECT_EQ(server_->Stop(), 0) << server_->ReadLog();
    }
  }

  void StartServer(std::vector<std::string> args) {
    server_ = std::make_unique<TestServer>(dir_.path() + "/data", std::move(args));
    ASSERT_TRUE(server_->Start()) << server_->error() << server_->ReadLog();
    client_ = std::make_unique<HttpClient>("127.0.0.1", server_->port());
  }

  void Ingest(const std::vector<std::string>& events) {
    std::string body;
    for (const auto& e : events) body += e + "\n";
    auto res = client_->Post("/api/v1/ingest", body);
    ASSERT_EQ(res.status, 200) << res.body;
    ASSERT_EQ(json::parse(res.body).at("accepted").as_int64(),
              static_cast<std::int64_t>(events.size()))
        << res.body;
  }

  // GET `target`, expecting `status` and a JSON body.
  json::value GetJson(const std::string& target, int status = 200) {
    auto res = client_->Get(target);
    EXPECT_EQ(res.status, status) << target << ": " << res.body;
    EXPECT_NE(res.headers["content-type"].find("application/json"), std::string::npos) << target;
    boost::system::error_code ec;
    json::value v = json::parse(res.body, ec);
    EXPECT_FALSE(ec) << target << ": " << res.body;
    return v;
  }

  // The error body of a request that must fail with `status`.
  json::object Error(const std::string& target, int status, std::string_view type) {
    json::value v = GetJson(target, status);
    const json::object& err = v.at("error").as_object();
    EXPECT_EQ(err.at("type").as_string(), type) << target;
    return err;
  }

  static std::string Range(TimeMs from, TimeMs to) {
    return "from=" + UrlEncode(Ts(from)) + "&to=" + UrlEncode(Ts(to));
  }

  TempDir dir_;
  std::unique_ptr<TestServer> server_;
  std::unique_ptr<HttpClient> client_;
};

std::vector<std::int64_t> Counts(const json::value& h) {
  std::vector<std::int64_t> out;
  for (const auto& b : h.at("buckets").as_array()) out.push_back(b.at("count").as_int64());
  return out;
}

// ---- histogram ----

TEST_F(ExplorationApiTest, HistogramFillsEmptyBucketsAcrossTheRange) {
  Ingest({Event(kT0 + 10'000, "CUDA error"), Event(kT0 + 20'000, "step 1"),
          Event(kT0 + 3 * kMin + 5'000, "CUDA error again")});
  for (const std::string q : {"", "&q=step%20OR%20cuda"}) {
    json::value h = GetJson("/api/v1/histogram?interval=1m&" + Range(kT0, kT0 + 5 * kMin) + q);
    EXPECT_EQ(h.at("interval").as_string(), "1m");
    EXPECT_EQ(h.at("interval_ms").as_int64(), kMin);
    EXPECT_EQ(Counts(h), (std::vector<std::int64_t>{2, 0, 0, 1, 0})) << q;
    EXPECT_EQ(h.at("total").as_int64(), 3);
    const auto& buckets = h.at("buckets").as_array();
    for (std::size_t i = 0; i < buckets.size(); ++i) {
      EXPECT_EQ(buckets[i].at("t").as_int64(), kT0 + static_cast<TimeMs>(i) * kMin);
    }
  }
  json::value cuda = GetJson("/api/v1/histogram?interval=1m&q=cuda&" + Range(kT0, kT0 + 5 * kMin));
  EXPECT_EQ(Counts(cuda), (std::vector<std::int64_t>{1, 0, 0, 1, 0}));
  // A range not aligned to the interval: the first bucket starts before it,
  // and events before `from` in that bucket do not count.
  json::value mid =
      GetJson("/api/v1/histogram?interval=1m&" + Range(kT0 + 15'000, kT0 + 3 * kMin + 1'000));
  EXPECT_EQ(mid.at("buckets").as_array().front().at("t").as_int64(), kT0);
  EXPECT_EQ(Counts(mid), (std::vector<std::int64_t>{1, 0, 0, 0}));
}

// Whole seconds and minutes of all events come from the level counts, other
// widths and queries from the events: all must agree.
TEST_F(ExplorationApiTest, HistogramCountsAgreeWhateverAnswersThem) {
  std::vector<std::string> events;
  for (int i = 0; i < 300; ++i) {
    const char* level = i % 7 == 0 ? "ERROR" : (i % 3 == 0 ? "WARN" : "INFO");
    events.push_back(Event(kT0 + i * 997, "line", fmt::format(R"("level":"{}")", level)));
  }
  Ingest(events);
  const std::string range = Range(kT0 + 1'500, kT0 + 250'000);
  auto total = [&](const std::string& params) {
    return GetJson("/api/v1/histogram?" + range + params).at("total").as_int64();
  };
  std::int64_t expected = 0;
  for (int i = 0; i < 300; ++i) expected += (i * 997 >= 1'500 && i * 997 < 250'000) ? 1 : 0;
  for (const std::string p : {"&interval=1m", "&interval=1s", "&interval=10s", "&interval=1500ms",
                              "&interval=1m&q=line", "&interval=7s&by=level", "&interval=2m"}) {
    EXPECT_EQ(total(p), expected) << p;
  }
  // Per bucket too, by level: the counts tables vs a scan of the events.
  json::value a = GetJson("/api/v1/histogram?interval=1m&by=level&" + range);
  json::value b = GetJson("/api/v1/histogram?interval=1m&by=level&q=line&" + range);
  EXPECT_EQ(a.at("keys"), b.at("keys"));
  EXPECT_EQ(a.at("buckets"), b.at("buckets"));
  EXPECT_EQ(a.at("keys"), (json::array{"INFO", "WARN", "ERROR"}));
}

TEST_F(ExplorationApiTest, HistogramAutoIntervalGivesSixtyToOneHundredTwentyBuckets) {
  Ingest({Event(kT0, "a")});
  for (TimeMs span : {TimeMs{90'000}, 15 * kMin, 60 * kMin, 90 * kMin, 7 * 60 * kMin,
                      24 * 60 * kMin, 3 * 24 * 60 * kMin, 45 * 24 * 60 * kMin}) {
    json::value h = GetJson("/api/v1/histogram?interval=auto&" + Range(kT0, kT0 + span));
    const auto n = h.at("buckets").as_array().size();
    EXPECT_GE(n, 60u) << span << " " << h.at("interval").as_string();
    EXPECT_LE(n, 121u) << span << " " << h.at("interval").as_string();
  }
  json::value hour = GetJson("/api/v1/histogram?" + Range(kT0, kT0 + 60 * kMin));
  EXPECT_EQ(hour.at("interval").as_string(), "1m");
}

TEST_F(ExplorationApiTest, HistogramWithoutRangeCoversTheStoredEvents) {
  Ingest({Event(kT0 + 5'000, "a"), Event(kT0 + 40 * kMin, "b")});
  json::value h = GetJson("/api/v1/histogram");
  const auto& buckets = h.at("buckets").as_array();
  ASSERT_FALSE(buckets.empty());
  EXPECT_EQ(h.at("from").as_int64(), kT0 + 5'000);
  const std::int64_t first = buckets.front().at("t").as_int64();
  EXPECT_LE(first, kT0 + 5'000);
  // The auto interval grows with the time since the events (the range ends
  // now): the first bucket holds the second event too once it spans 40 min.
  const std::int64_t interval = h.at("interval_ms").as_int64();
  EXPECT_EQ(buckets.front().at("count").as_int64(), kT0 + 40 * kMin < first + interval ? 2 : 1)
      << interval;
  EXPECT_EQ(h.at("total").as_int64(), 2);
  // Decades: past the auto ladder, still 60-120 buckets.
  json::value old = GetJson("/api/v1/histogram?from=0&to=now");
  EXPECT_EQ(old.at("from").as_int64(), 0);
  EXPECT_EQ(old.at("total").as_int64(), 2);
  EXPECT_GE(old.at("buckets").as_array().size(), 60u);
  EXPECT_LE(old.at("buckets").as_array().size(), 121u);
}

TEST_F(ExplorationApiTest, HistogramByFieldKeepsTheTopTenAndCountsTheRestAsOther) {
  // user00 sends 12 events, user01 11, ... user11 1; four events have no user.
  std::vector<std::string> events;
  for (int u = 0; u < 12; ++u) {
    for (int k = 0; k < 12 - u; ++k) {
      events.push_back(
          Event(kT0 + (u * 13 + k) * 1000, "x", fmt::format(R"("user":"user{:02}")", u)));
    }
  }
  for (int k = 0; k < 4; ++k) events.push_back(Event(kT0 + 5 * kMin + k, "x"));
  Ingest(events);
  json::value h = GetJson("/api/v1/histogram?by=user&interval=10m&" + Range(kT0, kT0 + 10 * kMin));
  json::array want_keys;
  for (int u = 0; u < 10; ++u) want_keys.emplace_back(fmt::format("user{:02}", u));
  EXPECT_EQ(h.at("by").as_string(), "user");
  EXPECT_EQ(h.at("keys"), want_keys);
  EXPECT_FALSE(h.at("keys_sampled").as_bool());
  ASSERT_EQ(h.at("buckets").as_array().size(), 1u);
  const json::value& b = h.at("buckets").at(0);
  EXPECT_EQ(b.at("count").as_int64(), 78 + 4);
  EXPECT_EQ(b.at("by").at("user00").at("count").as_int64(), 12);
  EXPECT_EQ(b.at("by").at("user09").at("count").as_int64(), 3);
  EXPECT_EQ(b.at("other").at("count").as_int64(), 2 + 1);
  EXPECT_EQ(b.at("missing").at("count").as_int64(), 4);
  // top= narrows the series; by level works on events without the field.
  json::value top2 =
      GetJson("/api/v1/histogram?by=user&top=2&interval=10m&" + Range(kT0, kT0 + 10 * kMin));
  EXPECT_EQ(top2.at("keys"), (json::array{"user00", "user01"}));
  EXPECT_EQ(top2.at("buckets").at(0).at("other").at("count").as_int64(), 78 - 12 - 11);
}

TEST_F(ExplorationApiTest, HistogramValueAggregatesANumericFieldPerBucketAndKey) {
  Ingest({Event(kT0 + 1'000, "u", R"("host":{"name":"a"},"gpu_util":10)"),
          Event(kT0 + 2'000, "u", R"("host":{"name":"a"},"gpu_util":30)"),
          Event(kT0 + 3'000, "u", R"("host":{"name":"b"},"gpu_util":"50")"),
          Event(kT0 + 4'000, "u", R"("host":{"name":"b"},"gpu_util":"n/a")"),
          Event(kT0 + kMin + 1'000, "u", R"("host":{"name":"a"})")});
  const std::string range = "&interval=1m&" + Range(kT0, kT0 + 2 * kMin);
  auto values = [&](const std::string& op) {
    json::value h = GetJson("/api/v1/histogram?by=host.name&value=" + op + ":gpu_util" + range);
    EXPECT_EQ(h.at("value").as_string(), op + ":gpu_util");
    return h;
  };
  json::value avg = values("avg");
  const json::value& first = avg.at("buckets").at(0);
  EXPECT_EQ(first.at("count").as_int64(), 4);
  EXPECT_DOUBLE_EQ(first.at("value").to_number<double>(), 30.0);
  EXPECT_DOUBLE_EQ(first.at("by").at("a").at("value").to_number<double>(), 20.0);
  EXPECT_DOUBLE_EQ(first.at("by").at("b").at("value").to_number<double>(), 50.0);
  // The second minute has an event but no value: null, not 0.
  const json::value& second = avg.at("buckets").at(1);
  EXPECT_EQ(second.at("count").as_int64(), 1);
  EXPECT_TRUE(second.at("value").is_null());
  EXPECT_DOUBLE_EQ(values("max").at("buckets").at(0).at("value").to_number<double>(), 50.0);
  EXPECT_DOUBLE_EQ(values("min").at("buckets").at(0).at("value").to_number<double>(), 10.0);
  EXPECT_DOUBLE_EQ(values("sum").at("buckets").at(0).at("value").to_number<double>(), 90.0);
  // Without `by`.
  json::value plain = GetJson("/api/v1/histogram?value=max:gpu_util" + range);
  EXPECT_FALSE(plain.as_object().contains("keys"));
  EXPECT_DOUBLE_EQ(plain.at("buckets").at(0).at("value").to_number<double>(), 50.0);
}

TEST_F(ExplorationApiTest, HistogramRejectsBadParameters) {
  const std::string range = "&" + Range(kT0, kT0 + kMin);
  for (const std::string bad : {"interval=abc", "interval=0s", "interval=-5m", "interval=1M",
                                "interval=1.5h", "interval=10y"}) {
    auto err = Error("/api/v1/histogram?" + bad + range, 400, "illegal_argument");
    EXPECT_NE(err.at("reason").as_string().find("[interval]"), std::string::npos) << bad;
  }
  for (const std::string bad : {"value=median:x", "value=avg:", "value=avg", "value=:x"}) {
    auto err = Error("/api/v1/histogram?" + bad + range, 400, "illegal_argument");
    EXPECT_NE(err.at("reason").as_string().find("avg:<field>"), std::string::npos) << bad;
  }
  auto many = Error("/api/v1/histogram?interval=1ms" + range, 400, "illegal_argument");
  EXPECT_NE(many.at("reason").as_string().find("60000 buckets"), std::string::npos);
  Error("/api/v1/histogram?top=0" + range, 400, "illegal_argument");
  Error("/api/v1/histogram?from=now&to=now-1h", 400, "illegal_argument");
  Error("/api/v1/histogram?from=yesterday", 400, "illegal_argument");
  auto parse = Error("/api/v1/histogram?q=" + UrlEncode("(cuda") + range, 400, "query_parse_error");
  EXPECT_TRUE(parse.contains("position"));
}

// ---- fields ----

TEST_F(ExplorationApiTest, FieldsCountsFieldsAndTopValues) {
  std::vector<std::string> events;
  for (int i = 0; i < 30; ++i) {
    const char* host = i < 15 ? "gpu-1" : (i < 25 ? "gpu-2" : "gpu-3");
    std::string extra = fmt::format(R"("host":{{"name":"{}"}})", host);
    if (i < 20) extra += fmt::format(R"(,"gpu_id":{})", i % 4);
    if (i % 10 == 0) extra += R"(,"tags":["a","b","a"])";
    events.push_back(Event(kT0 + i * 1000, i % 2 ? "odd" : "even", extra));
  }
  Ingest(events);
  json::value f = GetJson("/api/v1/fields");
  EXPECT_FALSE(f.at("sampled").as_bool());
  EXPECT_EQ(f.at("sample_size").as_int64(), 30);
  std::map<std::string, json::object> by_name;
  std::vector<std::string> order;
  for (const auto& field : f.at("fields").as_array()) {
    order.emplace_back(field.at("field").as_string());
    by_name[order.back()] = field.as_object();
  }
  // Most common first: message and host.name (30), gpu_id (20), tags (3).
  ASSERT_EQ(order, (std::vector<std::string>{"host.name", "message", "gpu_id", "tags"}));
  const json::object& host = by_name["host.name"];
  EXPECT_EQ(host.at("count").as_int64(), 30);
  EXPECT_DOUBLE_EQ(host.at("ratio").to_number<double>(), 1.0);
  EXPECT_EQ(host.at("distinct").as_int64(), 3);
  EXPECT_EQ(host.at("types"), (json::array{"string"}));
  EXPECT_EQ(host.at("top"), (json::array{json::object{{"value", "gpu-1"}, {"count", 15}},
                                         json::object{{"value", "gpu-2"}, {"count", 10}},
                                         json::object{{"value", "gpu-3"}, {"count", 5}}}));
  const json::object& gpu = by_name["gpu_id"];
  EXPECT_EQ(gpu.at("count").as_int64(), 20);
  EXPECT_EQ(gpu.at("types"), (json::array{"number"}));
  EXPECT_EQ(gpu.at("top").as_array().size(), 4u);
  // An array counts once per event, for the field and for each value.
  const json::object& tags = by_name["tags"];
  EXPECT_EQ(tags.at("count").as_int64(), 3);
  EXPECT_EQ(tags.at("top").at(0).at("count").as_int64(), 3);

  // top= and a query.
  json::value top1 = GetJson("/api/v1/fields?top=1&q=odd");
  EXPECT_EQ(top1.at("sample_size").as_int64(), 15);
  for (const auto& field : top1.at("fields").as_array()) {
    EXPECT_LE(field.at("top").as_array().size(), 1u);
  }
}

TEST_F(ExplorationApiTest, FieldsSaysWhenItSampled) {
  std::vector<std::string> events;
  for (int i = 0; i < 50; ++i) {
    events.push_back(Event(kT0 + i * 1000, "m", fmt::format(R"("n":{})", i)));
  }
  Ingest(events);
  json::value f = GetJson("/api/v1/fields?sample=20");
  EXPECT_TRUE(f.at("sampled").as_bool());
  EXPECT_EQ(f.at("sample_size").as_int64(), 20);
  // The newest 20 events: n from 30 to 49.
  for (const auto& field : f.at("fields").as_array()) {
    if (field.at("field").as_string() != "n") continue;
    EXPECT_EQ(field.at("distinct").as_int64(), 20);
    for (const auto& v : field.at("top").as_array()) {
      EXPECT_GE(std::stoi(std::string(v.at("value").as_string())), 30);
    }
  }
  json::value all = GetJson("/api/v1/fields?sample=50");
  EXPECT_FALSE(all.at("sampled").as_bool());
  EXPECT_EQ(all.at("sample_size").as_int64(), 50);
  Error("/api/v1/fields?sample=0", 400, "illegal_argument");
  Error("/api/v1/fields?top=abc", 400, "illegal_argument");
  Error("/api/v1/fields?q=" + UrlEncode("a AND"), 400, "query_parse_error");
}

// ---- context ----

// An id of the event whose message is `message`.
std::string IdOf(HttpClient& client, const std::string& message) {
  auto res = client.Get("/api/v1/search?q=" + UrlEncode("\"" + message + "\""));
  json::value v = json::parse(res.body);
  for (const auto& hit : v.at("hits").as_array()) {
    if (hit.at("_source").at("message").as_string() == message) {
      return std::string(hit.at("_id").as_string());
    }
  }
  ADD_FAILURE() << "no event " << message;
  return "";
}

std::vector<std::string> Messages(const json::value& ctx) {
  std::vector<std::string> out;
  for (const auto& e : ctx.at("events").as_array()) {
    out.emplace_back(e.at("_source").at("message").as_string());
  }
  return out;
}

std::string FileEvent(TimeMs t, std::string_view msg, std::string_view host,
                      std::string_view path) {
  return Event(
      t, msg,
      fmt::format(R"("host":{{"name":"{}"}},"log":{{"file":{{"path":"{}"}}}})", host, path));
}

TEST_F(ExplorationApiTest, ContextShowsTheSameFileInOrderWithTheAnchorMarked) {
  std::vector<std::string> events;
  for (int i = 0; i < 10; ++i) {
    events.push_back(FileEvent(kT0 + i * 1000, fmt::format("a{}", i), "h1", "/logs/a.log"));
    events.push_back(FileEvent(kT0 + i * 1000 + 1, fmt::format("b{}", i), "h1", "/logs/b.log"));
    events.push_back(FileEvent(kT0 + i * 1000 + 2, fmt::format("c{}", i), "h2", "/logs/a.log"));
  }
  Ingest(events);
  const std::string id = IdOf(*client_, "a5");
  json::value ctx = GetJson("/api/v1/context?id=" + id + "&before=2&after=2");
  EXPECT_EQ(Messages(ctx), (std::vector<std::string>{"a3", "a4", "a5", "a6", "a7"}));
  EXPECT_EQ(ctx.at("anchor").as_string(), id);
  int anchors = 0;
  for (const auto& e : ctx.at("events").as_array()) {
    if (e.as_object().contains("anchor")) {
      ++anchors;
      EXPECT_EQ(e.at("_id").as_string(), id);
      EXPECT_TRUE(e.at("anchor").as_bool());
    }
  }
  EXPECT_EQ(anchors, 1);
  EXPECT_TRUE(ctx.at("has_more_before").as_bool());
  EXPECT_TRUE(ctx.at("has_more_after").as_bool());
  const json::array& scope = ctx.at("scope").as_array();
  ASSERT_GE(scope.size(), 2u);
  EXPECT_EQ(scope[0], (json::object{{"field", "host.name"}, {"value", "h1"}}));
  EXPECT_EQ(scope[1], (json::object{{"field", "log.file.path"}, {"value", "/logs/a.log"}}));

  // Defaults are 20 each side: the whole file; at the ends, nothing more.
  json::value all = GetJson("/api/v1/context?id=" + IdOf(*client_, "a0"));
  EXPECT_EQ(Messages(all).size(), 10u);
  EXPECT_EQ(Messages(all).front(), "a0");
  EXPECT_FALSE(all.at("has_more_before").as_bool());
  EXPECT_FALSE(all.at("has_more_after").as_bool());
  json::value none = GetJson("/api/v1/context?id=" + id + "&before=0&after=0");
  EXPECT_EQ(Messages(none), (std::vector<std::string>{"a5"}));
  // q narrows the neighbours (not the anchor).
  json::value q = GetJson("/api/v1/context?id=" + id + "&q=" + UrlEncode("a2 OR a8"));
  EXPECT_EQ(Messages(q), (std::vector<std::string>{"a2", "a5", "a8"}));
}

TEST_F(ExplorationApiTest, ContextCrossesADayPartitionBoundary) {
  constexpr TimeMs kMidnight = 1795910400000 + 86'400'000;  // 2026-11-30T00:00:00Z
  std::vector<std::string> events;
  for (int i = -3; i < 3; ++i) {
    const TimeMs t = kMidnight + i * 700;
    events.push_back(FileEvent(t, fmt::format("a{}", i + 3), "h1", "/a.log"));
    events.push_back(FileEvent(t + 1, fmt::format("x{}", i + 3), "h1", "/x.log"));
  }
  Ingest(events);
  json::value before_midnight = GetJson("/api/v1/context?id=" + IdOf(*client_, "a2"));
  EXPECT_EQ(Messages(before_midnight),
            (std::vector<std::string>{"a0", "a1", "a2", "a3", "a4", "a5"}));
  json::value after_midnight =
      GetJson("/api/v1/context?id=" + IdOf(*client_, "a3") + "&before=2&after=1");
  EXPECT_EQ(Messages(after_midnight), (std::vector<std::string>{"a1", "a2", "a3", "a4"}));
  EXPECT_TRUE(after_midnight.at("has_more_before").as_bool());
  // Two partition files hold them.
  auto parts = client_->Get("/metrics");
  EXPECT_NE(parts.body.find("dashcam_partitions 2"), std::string::npos);
}

TEST_F(ExplorationApiTest, ContextFallsBackToOtherSourceFields) {
  Ingest({// Posted straight from a host: host.name only.
          Event(kT0 + 1, "h1-direct-1", R"("host":{"name":"h1"})"),
          FileEvent(kT0 + 2, "h1-file", "h1", "/f.log"),
          Event(kT0 + 3, "h2-direct", R"("host":{"name":"h2"})"),
          Event(kT0 + 4, "h1-direct-2", R"("host":{"name":"h1"})"),
          // Bare events: nothing names a source.
          Event(kT0 + 5, "bare-1"), Event(kT0 + 6, "agent", R"("agent":{"id":"ag-1"})"),
          Event(kT0 + 7, "bare-2")});
  json::value direct = GetJson("/api/v1/context?id=" + IdOf(*client_, "h1-direct-1"));
  EXPECT_EQ(Messages(direct), (std::vector<std::string>{"h1-direct-1", "h1-direct-2"}));
  EXPECT_EQ(direct.at("scope").at(0), (json::object{{"field", "host.name"}, {"value", "h1"}}));
  json::value bare = GetJson("/api/v1/context?id=" + IdOf(*client_, "bare-2"));
  EXPECT_EQ(Messages(bare), (std::vector<std::string>{"bare-1", "bare-2"}));
  for (const auto& s : bare.at("scope").as_array()) EXPECT_TRUE(s.at("value").is_null());
  json::value agent = GetJson("/api/v1/context?id=" + IdOf(*client_, "agent"));
  EXPECT_EQ(Messages(agent), (std::vector<std::string>{"agent"}));
  EXPECT_EQ(agent.at("scope").at(0), (json::object{{"field", "agent.id"}, {"value", "ag-1"}}));
}

TEST_F(ExplorationApiTest, ContextScopeIsConfigurable) {
  ASSERT_EQ(server_->Stop(), 0);
  StartServer({"--context-scope", "user"});
  Ingest({Event(kT0 + 1, "u1-a", R"("user":"alice","host":{"name":"h1"})"),
          Event(kT0 + 2, "u2", R"("user":"bob","host":{"name":"h1"})"),
          Event(kT0 + 3, "u1-b", R"("user":"alice","host":{"name":"h2"})")});
  json::value ctx = GetJson("/api/v1/context?id=" + IdOf(*client_, "u1-b"));
  EXPECT_EQ(Messages(ctx), (std::vector<std::string>{"u1-a", "u1-b"}));
  ASSERT_EQ(server_->Stop(), 0);
  // An empty scope: neighbours in time, whatever their source.
  StartServer({"--context-scope", ""});
  json::value any = GetJson("/api/v1/context?id=" + IdOf(*client_, "u2"));
  EXPECT_EQ(Messages(any), (std::vector<std::string>{"u1-a", "u2", "u1-b"}));
  ASSERT_EQ(server_->Stop(), 0);
  // A malformed one stops startup.
  TestServer bad(dir_.path() + "/data", {"--context-scope", "host.name++x"});
  EXPECT_FALSE(bad.Start());
  ASSERT_TRUE(bad.exit_status().has_value());
  EXPECT_EQ(bad.exit_status()->value, 2) << bad.ReadLog();
  EXPECT_NE(bad.ReadLog().find("--context-scope"), std::string::npos);
  server_.reset();
}

TEST_F(ExplorationApiTest, ContextErrors) {
  Ingest({Event(kT0, "only")});
  auto missing = Error("/api/v1/context?id=0123456789abcdef", 404, "not_found");
  EXPECT_NE(missing.at("reason").as_string().find("0123456789abcdef"), std::string::npos);
  Error("/api/v1/context?id=no-such-doc-id", 404, "not_found");
  Error("/api/v1/context", 400, "illegal_argument");
  Error("/api/v1/context?id=", 400, "illegal_argument");
  const std::string id = IdOf(*client_, "only");
  Error("/api/v1/context?id=" + id + "&before=1001", 400, "illegal_argument");
  Error("/api/v1/context?id=" + id + "&after=-1", 400, "illegal_argument");
  Error("/api/v1/context?id=" + id + "&q=" + UrlEncode("\"open"), 400, "query_parse_error");
}

// ---- search: highlight, format=text ----

json::value FirstHit(const json::value& search) {
  EXPECT_FALSE(search.at("hits").as_array().empty());
  return search.at("hits").as_array().empty() ? json::value() : search.at("hits").at(0);
}

TEST_F(ExplorationApiTest, SearchHitsHighlightMatchesHtmlEscaped) {
  Ingest({Event(kT0 + 1, R"(<b>CUDA</b> error: out of memory & "oops" 'x')"),
          Event(kT0 + 2, "CUDA显存不足 on node"),
          Event(kT0 + 3, "memory memorize memo", R"("user":"memo")")});
  auto highlight = [&](const std::string& q) -> std::string {
    json::value hit = FirstHit(GetJson("/api/v1/search?q=" + UrlEncode(q)));
    if (!hit.is_object() || !hit.as_object().contains("highlight")) return "<none>";
    const json::array& frags = hit.at("highlight").at("message").as_array();
    EXPECT_EQ(frags.size(), 1u);
    return std::string(frags.at(0).as_string());
  };
  EXPECT_EQ(highlight("\"out of memory\""),
            "&lt;b&gt;CUDA&lt;/b&gt; error: <mark>out of memory</mark> &amp; &quot;oops&quot; "
            "&#39;x&#39;");
  EXPECT_EQ(highlight("oops AND cuda"),
            "&lt;b&gt;<mark>CUDA</mark>&lt;/b&gt; error: out of memory &amp; "
            "&quot;<mark>oops</mark>&quot; &#39;x&#39;");
  EXPECT_EQ(highlight("memo*"), "<mark>memory</mark> <mark>memorize</mark> <mark>memo</mark>");
  EXPECT_EQ(highlight("显存"), "CUDA<mark>显存</mark>不足 on node");
  EXPECT_EQ(highlight("message:显存"), "CUDA<mark>显存</mark>不足 on node");
  // Negated terms and terms on other fields mark nothing.
  EXPECT_EQ(highlight("NOT oops"), "<none>");
  EXPECT_EQ(highlight("oops NOT node"),
            "&lt;b&gt;CUDA&lt;/b&gt; error: out of memory &amp; &quot;<mark>oops</mark>&quot; "
            "&#39;x&#39;");
  EXPECT_EQ(highlight("user:memo"), "<none>");
  EXPECT_EQ(highlight("*"), "<none>");
}

TEST_F(ExplorationApiTest, SearchFormatTextPrintsOneLinePerEvent) {
  Ingest({Event(kT0 + 1, "first line", R"("log":{"level":"ERROR"},"host":{"name":"gpu-07"})"),
          Event(kT0 + 2, "two\nlines", R"("level":"WARN")")});
  auto res = client_->Get("/api/v1/search?format=text");
  ASSERT_EQ(res.status, 200) << res.body;
  EXPECT_EQ(res.headers["content-type"], "text/plain; charset=utf-8");
  EXPECT_EQ(res.body,
            Ts(kT0 + 2) + " WARN - two\\nlines\n" + Ts(kT0 + 1) + " ERROR gpu-07 first line\n");
  EXPECT_EQ(res.headers["x-dashcam-total"], "2");
  auto page = client_->Get("/api/v1/search?format=text&limit=1");
  EXPECT_EQ(page.body, Ts(kT0 + 2) + " WARN - two\\nlines\n");
  EXPECT_EQ(page.headers["x-dashcam-next-cursor"].size(), 16u);
  Error("/api/v1/search?format=xml", 400, "illegal_argument");
}

// ---- date math in q ----

// `now` inside q means the request's now on every endpoint, as in from/to.
TEST_F(ExplorationApiTest, NowInTheQueryIsTheRequestsNow) {
  const TimeMs now = std::chrono::duration_cast<std::chrono::milliseconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
  Ingest({Event(now - 30 * kMin, "recent step", R"("host":{"name":"h1"})"),
          Event(now - 120 * kMin, "older step", R"("host":{"name":"h1"})"),
          Event(kT0, "long ago step", R"("host":{"name":"h1"})")});
  const std::string q = "q=" + UrlEncode("step AND @timestamp:>=now-1h");
  json::value search = GetJson("/api/v1/search?" + q);
  EXPECT_EQ(search.at("total").as_int64(), 1);
  json::value hist = GetJson("/api/v1/histogram?" + q + "&from=now-1d");
  EXPECT_EQ(hist.at("total").as_int64(), 1);
  json::value fields = GetJson("/api/v1/fields?" + q);
  std::int64_t hosts = -1;
  for (const auto& f : fields.at("fields").as_array()) {
    if (f.at("field").as_string() == "host.name") hosts = f.at("count").as_int64();
  }
  EXPECT_EQ(hosts, 1) << fields;
  auto exported = client_->Get("/api/v1/export?format=text&" + q);
  ASSERT_EQ(exported.status, 200) << exported.body;
  EXPECT_EQ(std::count(exported.body.begin(), exported.body.end(), '\n'), 1) << exported.body;
  EXPECT_NE(exported.body.find("recent step"), std::string::npos);
  const std::string anchor(search.at("hits").at(0).at("_id").as_string());
  json::value context = GetJson("/api/v1/context?id=" + anchor + "&" + q);
  EXPECT_EQ(context.at("events").as_array().size(), 1u) << context;
}

// ---- pretty ----

TEST_F(ExplorationApiTest, PrettyIndentsAnyJsonAnswer) {
  Ingest({Event(kT0 + 1, "a \"quoted\" {brace} [x], y: z")});
  const std::vector<std::string> targets = {
      "/api/v1/search", "/api/v1/histogram?interval=1m&" + Range(kT0, kT0 + kMin),
      "/api/v1/fields", "/api/v1/context?id=0123456789abcdef",
      "/_search",       "/_cluster/health"};
  for (const std::string& target : targets) {
    auto compact = client_->Get(target);
    const char sep = target.find('?') == std::string::npos ? '?' : '&';
    auto pretty = client_->Get(target + sep + "pretty");
    ASSERT_EQ(compact.status, pretty.status) << target;
    EXPECT_EQ(compact.body.find('\n'), std::string::npos) << target;
    EXPECT_NE(pretty.body.find("{\n  \""), std::string::npos) << target << pretty.body;
    // Same JSON, ignoring what varies between two runs.
    json::value a = json::parse(compact.body), b = json::parse(pretty.body);
    for (json::value* v : {&a, &b}) {
      if (v->is_object()) {
        v->as_object().erase("took_ms");
        v->as_object().erase("took");
      }
    }
    EXPECT_EQ(a, b) << target;
    auto off = client_->Get(target + sep + "pretty=false");
    EXPECT_EQ(off.body.find('\n'), std::string::npos) << target;
  }
  auto text = client_->Get("/api/v1/search?format=text&pretty");
  EXPECT_EQ(std::count(text.body.begin(), text.body.end(), '\n'), 1);
}

}  // namespace
}  // namespace dashcam::testing::exploration_api_test
