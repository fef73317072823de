// GET /api/v1/patterns against the real binary: exact counts per template,
// series that line up with the buckets and sum to the count, `new` against
// the previous range, q narrowing, a read key's scope filter, sampling with
// per-bucket estimates, the message read as search reads it, and 400s for
// bad parameters. One server (with an auth file) for the suite, fed once with
// events of known shapes.
#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <boost/json.hpp>

#include "storage/time_format.h"
#include "tests/common/api_keys.h"
#include "tests/common/http_client.h"
#include "tests/common/test_server.h"

namespace dashcam::testing::patterns_api_test {
namespace {

namespace json = boost::json;
using Headers = std::map<std::string, std::string>;

// 2026-11-29T10:00:00Z; the events span [kT0, kT0 + 1h).
constexpr TimeMs kT0 = 1795910400000 + 10 * 3'600'000;
constexpr TimeMs kMin = 60'000;
constexpr TimeMs kHalf = kT0 + 30 * kMin, kEnd = kT0 + 60 * kMin;

const char* const kStep = "step <num> loss=<num> lr=<num>";
const char* const kBeat = "gpu-node-<num> heartbeat ok from <ip>";
const char* const kNccl = "NCCL WARN timeout after <duration> on rank <num>";
const char* const kBurst = "burst <num> of checkpoint <hex>";

std::string Event(TimeMs t, const std::string& user, const std::string& message) {
  return json::serialize(
      json::object{{"@timestamp", FormatRfc3339Ms(t)}, {"user", user}, {"message", message}});
}

// The corpus: per template, the event times (so tests can derive answers).
struct Corpus {
  std::vector<std::string> lines;
  std::map<std::string, std::vector<TimeMs>> times;  // template -> times
  void Add(const char* tmpl, TimeMs t, const std::string& user, const std::string& message) {
    lines.push_back(Event(t, user, message));
    times[tmpl].push_back(t);
  }
};

Corpus MakeCorpus() {
  Corpus c;
  for (int m = 0; m < 60; ++m) {  // every minute, all hour: alice
    c.Add(kStep, kT0 + m * kMin + 5, "alice",
          fmt::format("step {} loss={:.4f} lr={}", m * 100, 2.5 - m * 0.01,
                      m < 30 ? "1e-4" : "5e-05"));
  }
  for (int m = 0; m < 60; m += 2) {  // every other minute: bob
    c.Add(kBeat, kT0 + m * kMin + 7, "bob",
          fmt::format("gpu-node-{:02d} heartbeat ok from 10.0.{}.{}", m % 16, m, m + 1));
  }
  for (int m = 31; m < 60; m += 3) {  // only in the second half: alice
    c.Add(kNccl, kT0 + m * kMin + 11, "alice",
          fmt::format("NCCL WARN timeout after {}ms on rank {}", 600000 + m, m % 8));
  }
  // Once in the first half, four times within one 30 s bucket of the second.
  c.Add(kBurst, kT0 + 10 * kMin, "alice", "burst 0 of checkpoint 9f3a2c1d7e");
  for (int i = 1; i <= 4; ++i) {
    c.Add(
        kBurst, kT0 + 45 * kMin + i * 1000, "alice",
        fmt::format("burst {} of checkpoint {:x}", i, 0xa1b2c3d4e5ULL * static_cast<unsigned>(i)));
  }
  return c;
}

const Headers kAdmin = {{"Authorization", "Bearer root:admin-secret-1"}};
const Headers kAlice = {{"Authorization", "Bearer alice:alice-secret-2"}};

class PatternsApiTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    const std::string keys = dir_->path() + "/keys.yml";
    std::ofstream(keys) << "keys:\n"
                        << HashKeyEntry("root", "admin", "admin-secret-1")
                        << HashKeyEntry("alice", "read", "alice-secret-2", "user:alice");
    server_ = new TestServer(dir_->path() + "/data", {"--auth-file", keys});
    ASSERT_TRUE(server_->Start()) << server_->error() << server_->ReadLog();
    corpus_ = new Corpus(MakeCorpus());
    std::string body;
    for (const auto& l : corpus_->lines) body += l + "\n";
    HttpClient c("127.0.0.1", server_->port());
    auto r = c.Request("POST", "/api/v1/ingest", body, kAdmin);
    ASSERT_EQ(r.status, 200) << r.body;
    ASSERT_EQ(json::parse(r.body).at("accepted").as_int64(),
              static_cast<std::int64_t>(corpus_->lines.size()));
  }
  static void TearDownTestSuite() {
    EXPECT_EQ(server_->Stop(), 0) << server_->ReadLog();
    delete server_;
    delete corpus_;
    delete dir_;
  }

  json::object Get(const std::string& target, int status = 200, const Headers& h = kAdmin) {
    HttpClient c("127.0.0.1", server_->port());
    auto r = c.Request("GET", target, "", h);
    EXPECT_EQ(r.status, status) << target << ": " << r.body;
    boost::system::error_code ec;
    json::value v = json::parse(r.body, ec);
    EXPECT_FALSE(ec) << r.body;
    return v.is_object() ? v.as_object() : json::object{};
  }

  static std::string Target(TimeMs from, TimeMs to, const std::string& extra = "") {
    return fmt::format("/api/v1/patterns?from={}&to={}{}", from, to, extra);
  }

  // template -> its pattern object.
  static std::map<std::string, json::object> ByTemplate(const json::object& body) {
    std::map<std::string, json::object> out;
    for (const auto& p : body.at("patterns").as_array())
      out[std::string(p.at("template").as_string())] = p.as_object();
    return out;
  }

  // How many of `tmpl`'s events fall in [from, to).
  static std::int64_t CountIn(const char* tmpl, TimeMs from, TimeMs to) {
    std::int64_t n = 0;
    for (TimeMs t : corpus_->times.at(tmpl)) n += t >= from && t < to;
    return n;
  }

  static TempDir* dir_;
  static TestServer* server_;
  static Corpus* corpus_;
};
TempDir* PatternsApiTest::dir_ = nullptr;
TestServer* PatternsApiTest::server_ = nullptr;
Corpus* PatternsApiTest::corpus_ = nullptr;

TEST_F(PatternsApiTest, SecondHalfCountsSeriesAndNew) {
  const json::object body = Get(Target(kHalf, kEnd));
  EXPECT_TRUE(body.at("complete").as_bool());
  const std::int64_t interval = body.at("interval_ms").as_int64();
  EXPECT_EQ(interval, 30'000);  // the histogram's auto interval for 30 minutes
  const auto& buckets = body.at("buckets").as_array();
  ASSERT_EQ(buckets.size(), 60u);
  EXPECT_EQ(buckets[0].as_string(), FormatRfc3339Ms(kHalf));
  EXPECT_EQ(body.at("previous").at("from").as_string(), FormatRfc3339Ms(kT0));
  EXPECT_EQ(body.at("previous").at("to").as_string(), FormatRfc3339Ms(kHalf));

  const auto pats = ByTemplate(body);
  ASSERT_EQ(pats.size(), 4u) << json::serialize(body);
  std::int64_t read = 0;
  for (const char* tmpl : {kStep, kBeat, kNccl, kBurst}) {
    ASSERT_TRUE(pats.contains(tmpl)) << tmpl << " in " << json::serialize(body);
    const json::object& p = pats.at(tmpl);
    EXPECT_EQ(p.at("count").as_int64(), CountIn(tmpl, kHalf, kEnd)) << tmpl;
    read += p.at("count").as_int64();
    EXPECT_EQ(p.at("new").as_bool(), std::string(tmpl) == kNccl) << tmpl;
    // The series: each event in its bucket.
    const auto& series = p.at("series").as_array();
    ASSERT_EQ(series.size(), buckets.size());
    std::vector<std::int64_t> want(buckets.size());
    for (TimeMs t : corpus_->times.at(tmpl))
      if (t >= kHalf && t < kEnd) ++want[static_cast<std::size_t>((t - kHalf) / interval)];
    for (std::size_t i = 0; i < series.size(); ++i)
      EXPECT_EQ(series[i].as_int64(), want[i]) << tmpl << " bucket " << i;
  }
  EXPECT_EQ(body.at("events_read").as_int64(), read);
  // Most frequent first, and the example is a real message of the template.
  const auto& list = body.at("patterns").as_array();
  EXPECT_EQ(list[0].at("template").as_string(), kStep);
  EXPECT_EQ(list[1].at("template").as_string(), kBeat);
  EXPECT_TRUE(list[2].at("example").as_string().starts_with("NCCL WARN timeout after 6000"));
}

TEST_F(PatternsApiTest, FirstHalfHasNoPreviousEventsSoEverythingIsNew) {
  const auto pats = ByTemplate(Get(Target(kT0, kHalf)));
  EXPECT_FALSE(pats.contains(kNccl));
  ASSERT_EQ(pats.size(), 3u);
  for (const auto& [tmpl, p] : pats) {
    EXPECT_TRUE(p.at("new").as_bool()) << tmpl;
    EXPECT_EQ(p.at("count").as_int64(), CountIn(tmpl.c_str(), kT0, kHalf)) << tmpl;
  }
}

// The message a template is made of is the one search reads (DocumentReader's
// rule): of a repeated `message` key the last, of an array its last string,
// else `msg`. Three events of their own, three hours after the corpus.
TEST_F(PatternsApiTest, MessagesAreReadAsSearchReadsThem) {
  const TimeMs t = kT0 + 180 * kMin;
  const std::string body = fmt::format(
      "{{\"@timestamp\":{0},\"message\":\"draft 1\",\"message\":\"final loss=0.5\"}}\n"
      "{{\"@timestamp\":{1},\"message\":[\"ignored 1\",\"array end 7\"]}}\n"
      "{{\"@timestamp\":{2},\"msg\":\"from msg 3\"}}\n",
      t + 1000, t + 2000, t + 3000);
  HttpClient c("127.0.0.1", server_->port());
  auto r = c.Request("POST", "/api/v1/ingest", body, kAdmin);
  ASSERT_EQ(r.status, 200) << r.body;
  ASSERT_EQ(json::parse(r.body).at("accepted").as_int64(), 3);

  const auto pats = ByTemplate(Get(Target(t, t + 10 * kMin)));
  std::map<std::string, std::string> examples;
  for (const auto& [tmpl, p] : pats) examples[tmpl] = p.at("example").as_string().c_str();
  EXPECT_EQ(examples, (std::map<std::string, std::string>{{"final loss=<num>", "final loss=0.5"},
                                                          {"array end <num>", "array end 7"},
                                                          {"from msg <num>", "from msg 3"}}));
}

TEST_F(PatternsApiTest, QueryNarrowsAndLimitCuts) {
  auto pats = ByTemplate(Get(Target(kHalf, kEnd, "&q=NCCL")));
  ASSERT_EQ(pats.size(), 1u);
  EXPECT_EQ(pats.at(kNccl).at("count").as_int64(), CountIn(kNccl, kHalf, kEnd));
  pats = ByTemplate(Get(Target(kT0, kEnd, "&q=user:bob")));
  ASSERT_EQ(pats.size(), 1u);
  EXPECT_EQ(pats.at(kBeat).at("count").as_int64(), 30);
  const json::object top = Get(Target(kT0, kEnd, "&limit=1"));
  ASSERT_EQ(top.at("patterns").as_array().size(), 1u);
  EXPECT_EQ(top.at("patterns").as_array()[0].at("template").as_string(), kStep);
}

TEST_F(PatternsApiTest, ScopedKeySeesOnlyItsEvents) {
  const auto pats = ByTemplate(Get(Target(kT0, kEnd), 200, kAlice));
  EXPECT_FALSE(pats.contains(kBeat));  // bob's
  ASSERT_EQ(pats.size(), 3u);
  EXPECT_EQ(pats.at(kStep).at("count").as_int64(), 60);
  // The scope also applies to the previous range: alice's own NCCL lines
  // are new in the second half, and q cannot widen the scope.
  EXPECT_TRUE(ByTemplate(Get(Target(kHalf, kEnd), 200, kAlice)).at(kNccl).at("new").as_bool());
  EXPECT_TRUE(ByTemplate(Get(Target(kT0, kEnd, "&q=user:bob"), 200, kAlice)).empty());
}

TEST_F(PatternsApiTest, SampledBucketsAreScaledByTheirExactTotals) {
  // Two of the four burst events of one bucket are read; the bucket's total
  // (four) scales the count.
  const json::object body = Get(Target(kHalf, kEnd, "&q=burst&sample=2"));
  EXPECT_FALSE(body.at("complete").as_bool());
  EXPECT_EQ(body.at("events_read").as_int64(), 2);
  const auto pats = ByTemplate(body);
  ASSERT_EQ(pats.size(), 1u);
  EXPECT_EQ(pats.at(kBurst).at("count").as_int64(), 4);
  EXPECT_FALSE(pats.at(kBurst).at("new").as_bool());  // the one at 10:10
  // Two events per one-minute bucket of the hour is enough for the steps
  // (one a minute): complete, and exact.
  const json::object steps = Get(Target(kT0, kEnd, "&q=step&sample=120"));
  EXPECT_TRUE(steps.at("complete").as_bool());
  EXPECT_EQ(ByTemplate(steps).at(kStep).at("count").as_int64(), 60);
}

TEST_F(PatternsApiTest, BadParametersAre400WithAReason) {
  for (const std::string extra : {"&limit=0", "&limit=x", "&sample=0", "&sample=999999999"}) {
    const json::object e = Get(Target(kT0, kEnd, extra), 400);
    EXPECT_EQ(e.at("error").at("type").as_string(), "illegal_argument") << extra;
    EXPECT_NE(e.at("error").at("reason").as_string().find(extra.substr(1, extra.find('=') - 1)),
              json::string::npos)
        << extra;
  }
  const json::object q = Get(Target(kT0, kEnd, "&q=loss:(x"), 400);
  EXPECT_EQ(q.at("error").at("type").as_string(), "query_parse_error");
  EXPECT_TRUE(q.at("error").as_object().contains("position"));
  EXPECT_EQ(Get(Target(kEnd, kT0), 400).at("error").at("type").as_string(), "illegal_argument");
  // Any read key may ask; none is refused for want of a role.
  HttpClient c("127.0.0.1", server_->port());
  EXPECT_EQ(c.Request("GET", Target(kT0, kEnd), "", {}).status, 401);
}

}  // namespace
}  // namespace dashcam::testing::patterns_api_test
