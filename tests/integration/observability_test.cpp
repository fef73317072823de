// Observability against the real binary: GET /metrics parsed line by line
// (the Prometheus text format 0.0.4, checked by a small parser here), the
// counters and histograms moving as bulk, NDJSON, Beats and queries arrive;
// /healthz; /readyz turning 503 under a full writer queue and after a failed
// commit; /api/v1/status after ingesting into two day partitions.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>
#include <boost/json.hpp>

#include "tests/common/beats_client.h"
#include "tests/common/http_client.h"
#include "tests/common/stream_client.h"
#include "tests/common/test_server.h"
#include "tests/common/wait_for.h"

namespace dashcam::testing::observability_test {
namespace {

namespace json = boost::json;
using Labels = std::map<std::string, std::string>;

// --- A Prometheus text format parser ------------------------------------------

struct Sample {
  std::string name;
  Labels labels;
  double value = 0;
};

// One scrape, validated as it is parsed: malformed lines, samples without
// a HELP and TYPE before them, and broken histograms are test failures.
struct Exposition {
  std::map<std::string, std::string> types;  // family -> counter|gauge|histogram|...
  std::map<std::string, std::string> helps;
  std::vector<Sample> samples;

  std::optional<double> Get(const std::string& name, const Labels& labels = {}) const {
    for (const Sample& s : samples) {
      if (s.name == name && s.labels == labels) return s.value;
    }
    return std::nullopt;
  }
  // A value that must be there; -1 (and a failure) if not.
  double Must(const std::string& name, const Labels& labels = {}) const {
    auto v = Get(name, labels);
    EXPECT_TRUE(v.has_value()) << name << " is missing";
    return v.value_or(-1);
  }
};

bool IsNameStart(char c, bool colon) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || (colon && c == ':');
}
bool IsNameChar(char c, bool colon) {
  return IsNameStart(c, colon) || std::isdigit(static_cast<unsigned char>(c));
}

// Reads a metric (colon = true) or label name at `pos`; empty if none.
std::string ReadName(const std::string& line, std::size_t& pos, bool colon) {
  const std::size_t start = pos;
  if (pos < line.size() && IsNameStart(line[pos], colon)) {
    ++pos;
    while (pos < line.size() && IsNameChar(line[pos], colon)) ++pos;
  }
  return line.substr(start, pos - start);
}

std::optional<double> ParseValue(const std::string& s) {
  if (s == "+Inf") return INFINITY;
  if (s == "-Inf") return -INFINITY;
  if (s == "NaN") return NAN;
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size()) return std::nullopt;
  return v;
}

// `name{a="x",b="y"} value`; nullopt if malformed.
std::optional<Sample> ParseSample(const std::string& line) {
  Sample s;
  std::size_t pos = 0;
  s.name = ReadName(line, pos, true);
  if (s.name.empty()) return std::nullopt;
  if (pos < line.size() && line[pos] == '{') {
    ++pos;
    while (pos < line.size() && line[pos] != '}') {
      const std::string label = ReadName(line, pos, false);
      if (label.empty() || line.compare(pos, 2, "=\"") != 0) return std::nullopt;
      pos += 2;
      std::string value;
      while (pos < line.size() && line[pos] != '"') {
        if (line[pos] == '\\') {
          if (++pos >= line.size()) return std::nullopt;
          const char e = line[pos];
          if (e != '\\' && e != '"' && e != 'n') return std::nullopt;
          value += e == 'n' ? '\n' : e;
        } else {
          value += line[pos];
        }
        ++pos;
      }
      if (pos >= line.size() || !s.labels.emplace(label, value).second) return std::nullopt;
      ++pos;  // closing quote
      if (pos < line.size() && line[pos] == ',') ++pos;
    }
    if (pos >= line.size()) return std::nullopt;
    ++pos;  // '}'
  }
  if (pos >= line.size() || line[pos] != ' ') return std::nullopt;
  auto value = ParseValue(line.substr(pos + 1));  // no timestamps: dashcam sends none
  if (!value) return std::nullopt;
  s.value = *value;
  return s;
}

// The family a sample belongs to: histograms' _bucket/_sum/_count series
// belong to the histogram's name.
std::string FamilyOf(const std::string& name, const std::map<std::string, std::string>& types) {
  for (const char* suffix : {"_bucket", "_sum", "_count"}) {
    const std::string sfx(suffix);
    if (name.size() > sfx.size() && name.ends_with(sfx)) {
      const std::string base = name.substr(0, name.size() - sfx.size());
      auto it = types.find(base);
      if (it != types.end() && it->second == "histogram") return base;
    }
  }
  return name;
}

void CheckHistograms(const Exposition& e) {
  for (const auto& [family, type] : e.types) {
    if (type != "histogram") continue;
    // Series by their labels without `le`, buckets in the order sent.
    std::map<Labels, std::vector<std::pair<double, double>>> buckets;
    std::map<Labels, std::pair<int, int>> sum_count_seen;
    std::map<Labels, double> counts;
    for (const Sample& s : e.samples) {
      Labels base = s.labels;
      if (s.name == family + "_bucket") {
        ASSERT_TRUE(base.count("le")) << family << " bucket without le";
        auto le = ParseValue(base["le"]);
        ASSERT_TRUE(le) << family << " le=" << base["le"];
        base.erase("le");
        buckets[base].emplace_back(*le, s.value);
      } else if (s.name == family + "_sum") {
        ++sum_count_seen[base].first;
      } else if (s.name == family + "_count") {
        ++sum_count_seen[base].second;
        counts[base] = s.value;
      }
    }
    EXPECT_FALSE(buckets.empty()) << family << " has no buckets";
    for (const auto& [labels, list] : buckets) {
      ASSERT_FALSE(list.empty());
      for (std::size_t i = 1; i < list.size(); ++i) {
        EXPECT_LT(list[i - 1].first, list[i].first) << family << ": le not ascending";
        EXPECT_LE(list[i - 1].second, list[i].second) << family << ": buckets not cumulative";
      }
      EXPECT_TRUE(std::isinf(list.back().first)) << family << ": last bucket is not +Inf";
      EXPECT_EQ(sum_count_seen[labels], std::make_pair(1, 1)) << family << ": _sum/_count";
      EXPECT_EQ(counts[labels], list.back().second) << family << ": _count != +Inf bucket";
    }
  }
}

Exposition ParseExposition(const std::string& text) {
  Exposition e;
  std::set<std::string> sampled_families;
  std::size_t start = 0;
  EXPECT_TRUE(text.empty() || text.back() == '\n') << "the exposition must end with a newline";
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(start, end - start);
    start = end + 1;
    if (line.starts_with("# HELP ") || line.starts_with("# TYPE ")) {
      std::size_t pos = 7;
      const std::string name = ReadName(line, pos, true);
      EXPECT_FALSE(name.empty()) << line;
      EXPECT_TRUE(pos < line.size() && line[pos] == ' ') << line;
      const std::string rest = pos < line.size() ? line.substr(pos + 1) : "";
      auto& table = line[2] == 'H' ? e.helps : e.types;
      EXPECT_TRUE(table.emplace(name, rest).second) << "repeated: " << line;
      EXPECT_FALSE(sampled_families.count(name)) << "HELP/TYPE after samples: " << line;
      if (line[2] == 'T') {
        static const std::set<std::string> kTypes = {"counter", "gauge", "histogram", "summary",
                                                     "untyped"};
        EXPECT_TRUE(kTypes.count(rest)) << line;
      } else {
        EXPECT_FALSE(rest.empty()) << "empty help: " << line;
      }
      continue;
    }
    EXPECT_FALSE(line.empty() || line[0] == '#') << "unexpected line: '" << line << "'";
    auto sample = ParseSample(line);
    EXPECT_TRUE(sample) << "malformed sample: " << line;
    if (!sample) continue;
    const std::string family = FamilyOf(sample->name, e.types);
    EXPECT_TRUE(e.types.count(family)) << "no TYPE before " << line;
    EXPECT_TRUE(e.helps.count(family)) << "no HELP before " << line;
    const std::string type = e.types.count(family) ? e.types.at(family) : "";
    if (type == "counter") {
      EXPECT_TRUE(family.ends_with("_total")) << "counter not named _total: " << family;
      EXPECT_GE(sample->value, 0) << line;
    }
    sampled_families.insert(family);
    e.samples.push_back(std::move(*sample));
  }
  CheckHistograms(e);
  return e;
}

// --- The fixture ----------------------------------------------------------------

const std::map<std::string, std::string> kNdjson = {{"Content-Type", "application/x-ndjson"}};

class ObservabilityTest : public ::testing::Test {
 protected:
  void StartServer(std::vector<std::string> args = {}) {
    server_ = std::make_unique<TestServer>(dir_.path() + "/data", std::move(args));
    ASSERT_TRUE(server_->Start()) << server_->error() << server_->ReadLog();
    http_ = std::make_unique<HttpClient>("127.0.0.1", server_->port());
  }
  void TearDown() override {
    if (server_ && server_->pid() > 0) {
      EXPECT_EQ(server_->Stop(), 0) << server_->ReadLog();
    }
  }
  Exposition Scrape() {
    auto res = http_->Get("/metrics");
    EXPECT_EQ(res.status, 200);
    EXPECT_EQ(res.headers["content-type"], "text/plain; version=0.0.4; charset=utf-8");
    return ParseExposition(res.body);
  }
  std::string DataDir() const { return dir_.path() + "/data"; }

  TempDir dir_;
  std::unique_ptr<TestServer> server_;
  std::unique_ptr<HttpClient> http_;
};

std::string BulkLine(const std::string& ts, const std::string& message) {
  return R"({"index":{"_index":"obs"}})"
         "\n"
         R"({"@timestamp":")" +
         ts + R"(","message":")" + message +
         R"(","host":{"name":"h1"}})"
         "\n";
}

// --- /metrics -------------------------------------------------------------------

// The failures ParseExposition reports for `text`, one a line.
std::string ProblemsWith(const std::string& text) {
  ::testing::TestPartResultArray results;
  {
    ::testing::ScopedFakeTestPartResultReporter reporter(
        ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD, &results);
    ParseExposition(text);
  }
  std::string out;
  for (int i = 0; i < results.size(); ++i) {
    out += results.GetTestPartResult(i).message();
    out += '\n';
  }
  return out;
}

// The checker itself must be able to fail, or passing it says nothing.
TEST(ExpositionParserTest, RejectsWhatPrometheusWouldNot) {
  const std::string good =
      "# HELP a_total A.\n# TYPE a_total counter\na_total{x=\"1\",y=\"q\\\"\"} 3\n"
      "# HELP h H.\n# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 2\n"
      "h_sum 2.5\nh_count 2\n";
  EXPECT_EQ(ProblemsWith(good), "");
  const Exposition e = ParseExposition(good);
  EXPECT_EQ(e.Must("a_total", {{"x", "1"}, {"y", "q\""}}), 3);
  EXPECT_EQ(e.Must("h_count"), 2);

  const std::pair<std::string, std::string> bad[] = {
      {"a_total 1\n", "no TYPE"},
      {"# HELP a A.\n# TYPE a counter\na 1\n", "not named _total"},
      {"# HELP a_total A.\n# TYPE a_total counter\na_total{x=1} 1\n", "malformed"},
      {"# HELP g G.\n# TYPE g gauge\ng 1 2 3\n", "malformed"},
      {"# HELP g G.\n# TYPE g gauge\ng 1\n# HELP g G.\n", "repeated"},
      {"# HELP g G.\n# TYPE g gauge\ng 1", "newline"},
      {"# HELP h H.\n# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 1\n"
       "h_sum 1\nh_count 1\n",
       "not cumulative"},
      {"# HELP h H.\n# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 2\n"
       "h_sum 1\nh_count 3\n",
       "_count != +Inf"},
      {"# HELP h H.\n# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_sum 1\nh_count 1\n", "not +Inf"},
  };
  for (const auto& [text, problem] : bad) {
    EXPECT_NE(ProblemsWith(text).find(problem), std::string::npos) << text;
  }
}

TEST_F(ObservabilityTest, MetricsAreWellFormedAndCountIngestAndQueries) {
  StartServer();
  const Exposition before = Scrape();
  // Every documented family is there from the start.
  for (const char* family :
       {"dashcam_ingest_events_total", "dashcam_ingest_bytes_total", "dashcam_redactions_total",
        "dashcam_commit_group_events", "dashcam_commit_duration_seconds",
        "dashcam_query_duration_seconds", "dashcam_queue_bytes", "dashcam_queue_events",
        "dashcam_queue_limit_bytes", "dashcam_http_active_connections",
        "dashcam_beats_active_connections", "dashcam_tail_subscribers", "dashcam_partitions",
        "dashcam_disk_bytes", "dashcam_ready", "dashcam_uptime_seconds"}) {
    EXPECT_TRUE(before.types.count(family)) << family;
  }
  EXPECT_EQ(before.types.at("dashcam_commit_duration_seconds"), "histogram");
  EXPECT_EQ(before.types.at("dashcam_query_duration_seconds"), "histogram");
  EXPECT_EQ(before.Must("dashcam_ingest_events_total", {{"protocol", "beats"}}), 0);
  EXPECT_EQ(before.Must("dashcam_partitions"), 0);
  EXPECT_GE(before.Must("dashcam_http_active_connections"), 1);  // this scrape's
  EXPECT_EQ(before.Must("dashcam_ready"), 1);

  // Bulk: 2 stored, 1 rejected.
  const std::string bulk = BulkLine("2024-05-01T10:00:00Z", "alpha one") +
                           R"({"index":{}})"
                           "\nnot json\n" +
                           BulkLine("2024-05-01T10:00:01Z", "alpha two");
  auto b = http_->Post("/_bulk", bulk, kNdjson);
  ASSERT_EQ(b.status, 200) << b.body;
  // NDJSON: 2 stored, 1 bad line.
  auto n = http_->Post("/api/v1/ingest",
                       "{\"@timestamp\":\"2024-05-01T11:00:00Z\",\"message\":\"beta\"}\nnope\n"
                       "{\"@timestamp\":\"2024-05-01T11:00:01Z\",\"message\":\"beta\"}\n");
  ASSERT_EQ(n.status, 200) << n.body;
  // Beats: one window of 3 events.
  {
    BeatsClient beats(server_->beats_port());
    ASSERT_TRUE(beats.connected());
    std::string window = WindowFrame(3);
    for (std::uint32_t i = 1; i <= 3; ++i) {
      window += JsonFrame(i, R"({"@timestamp":"2024-05-01T12:00:00Z","message":"gamma )" +
                                 std::to_string(i) + "\"}");
    }
    ASSERT_TRUE(beats.Send(window));
    auto ack = beats.ReadFinalAck(seconds(10));
    ASSERT_TRUE(ack);
    EXPECT_EQ(ack->seq, 3u);
  }

  // One request to every query endpoint.
  const std::string range = "&from=2024-05-01T00:00:00Z&to=2024-05-02T00:00:00Z";
  auto search = http_->Get("/api/v1/search?q=alpha" + range);
  ASSERT_EQ(search.status, 200) << search.body;
  const std::string id(json::parse(search.body).at("hits").at(0).at("_id").as_string());
  EXPECT_EQ(http_->Get("/api/v1/histogram?q=*" + range).status, 200);
  EXPECT_EQ(http_->Get("/api/v1/fields?q=*" + range).status, 200);
  EXPECT_EQ(http_->Get("/api/v1/context?id=" + id).status, 200);
  auto exported = http_->Get("/api/v1/export?format=ndjson&q=*" + range);
  EXPECT_EQ(exported.status, 200);
  EXPECT_NE(exported.body.find("gamma 3"), std::string::npos);
  EXPECT_EQ(http_
                ->Post("/_search", R"({"query":{"match_all":{}}})",
                       {{"Content-Type", "application/json"}})
                .status,
            200);
  EXPECT_EQ(http_->Get("/obs/_count").status, 200);
  {
    StreamClient tail(server_->port());
    ASSERT_TRUE(tail.SendGet("/api/v1/tail?q=delta"));
    ASSERT_TRUE(tail.ReadHeader(std::chrono::milliseconds(5000)));
    EXPECT_EQ(tail.status(), 200);
    const Exposition during = Scrape();
    EXPECT_EQ(during.Must("dashcam_tail_subscribers"), 1);
    EXPECT_GE(during.Must("dashcam_http_active_connections"), 2);
  }

  // The server sees the Beats client's close when it next reads: wait for it.
  Exposition after;
  WaitFor(
      [&] {
        after = Scrape();
        return after.Must("dashcam_beats_active_connections") == 0;
      },
      std::chrono::seconds(5));
  auto delta = [&](const std::string& name, const Labels& labels = {}) {
    return after.Must(name, labels) - before.Must(name, labels);
  };
  EXPECT_EQ(delta("dashcam_ingest_events_total", {{"protocol", "bulk"}}), 2);
  EXPECT_EQ(delta("dashcam_ingest_events_total", {{"protocol", "ndjson"}}), 2);
  EXPECT_EQ(delta("dashcam_ingest_events_total", {{"protocol", "beats"}}), 3);
  EXPECT_EQ(delta("dashcam_ingest_bytes_total", {{"protocol", "bulk"}}),
            static_cast<double>(bulk.size()));
  EXPECT_GT(delta("dashcam_ingest_bytes_total", {{"protocol", "ndjson"}}), 0);
  EXPECT_GT(delta("dashcam_ingest_bytes_total", {{"protocol", "beats"}}), 0);
  EXPECT_EQ(after.Must("dashcam_ingest_rejected_total", {{"reason", "document_parsing_exception"}}),
            1);
  EXPECT_EQ(after.Must("dashcam_ingest_rejected_total", {{"reason", "ndjson_line_error"}}), 1);
  // Three commits at least (one per request), storing the 7 events.
  EXPECT_GE(delta("dashcam_commit_duration_seconds_count"), 3);
  EXPECT_EQ(delta("dashcam_commit_group_events_count"),
            delta("dashcam_commit_duration_seconds_count"));
  EXPECT_EQ(delta("dashcam_commit_group_events_sum"), 7);
  EXPECT_GT(delta("dashcam_commit_duration_seconds_sum"), 0);
  for (const char* endpoint :
       {"search", "histogram", "fields", "context", "export", "tail", "es_search", "es_count"}) {
    EXPECT_EQ(delta("dashcam_query_duration_seconds_count", {{"endpoint", endpoint}}), 1)
        << endpoint;
    EXPECT_EQ(
        delta("dashcam_query_duration_seconds_bucket", {{"endpoint", endpoint}, {"le", "+Inf"}}), 1)
        << endpoint;
  }
  EXPECT_EQ(after.Must("dashcam_partitions"), 1);
  EXPECT_GT(after.Must("dashcam_disk_bytes"), 0);
  EXPECT_EQ(after.Must("dashcam_queue_bytes"), 0);
  EXPECT_EQ(after.Must("dashcam_queue_events"), 0);
  EXPECT_EQ(after.Must("dashcam_beats_active_connections"), 0);
  EXPECT_EQ(after.Must("dashcam_beats_events_total"), 3);
}

// --- /healthz and /readyz ---------------------------------------------------------

TEST_F(ObservabilityTest, ReadyzIsNotReadyWhileTheWriterQueueIsOverItsHighWaterMark) {
  // A commit takes 1.5 s and the queue holds 4 000 bytes: one 20-event bulk
  // (accepted whole, as the first batch of an empty queue always is) fills it.
  StartServer({"--queue-bytes", "4000", "--test-commit-delay-ms", "1500"});
  auto health = http_->Get("/healthz");
  EXPECT_EQ(health.status, 200);
  EXPECT_EQ(json::parse(health.body), json::parse(R"({"status":"ok"})"));
  auto ready = http_->Get("/readyz");
  ASSERT_EQ(ready.status, 200) << ready.body;
  EXPECT_EQ(json::parse(ready.body).at("status"), "ready");
  EXPECT_EQ(json::parse(ready.body).at("high_water_bytes"), 3000);

  std::string bulk;
  for (int i = 0; i < 20; ++i) {
    bulk += BulkLine("2024-05-01T10:00:00Z", "filler " + std::to_string(i) + std::string(100, 'x'));
  }
  auto ingest = std::async(std::launch::async, [&] {
    HttpClient client("127.0.0.1", server_->port());
    return client.Post("/_bulk", bulk, kNdjson).status;
  });
  HttpResult not_ready;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    not_ready = http_->Get("/readyz");
    if (not_ready.status != 200) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_EQ(not_ready.status, 503) << not_ready.body;
  const json::value v = json::parse(not_ready.body);
  EXPECT_EQ(v.at("status"), "not_ready");
  EXPECT_NE(std::string(v.at("reason").as_string()).find("high-water"), std::string::npos)
      << not_ready.body;
  EXPECT_GE(v.at("queued_bytes").to_number<double>(), 3000);
  // Alive all the while, and the gauges agree.
  EXPECT_EQ(http_->Get("/healthz").status, 200);
  const Exposition during = Scrape();
  if (during.Must("dashcam_queue_events") > 0) {  // unless the commit just ended
    EXPECT_EQ(during.Must("dashcam_ready"), 0);
    EXPECT_EQ(during.Must("dashcam_queue_events"), 20);
    EXPECT_EQ(during.Must("dashcam_queue_limit_bytes"), 4000);
  }

  EXPECT_EQ(ingest.get(), 200);
  auto again = http_->Get("/readyz");
  EXPECT_EQ(again.status, 200) << again.body;
}

TEST_F(ObservabilityTest, ReadyzIsNotReadyAfterAFailedCommitUntilOneSucceeds) {
  StartServer();
  // A directory where the writer would create 2024-06-01's partition: its
  // commit fails (as a broken disk would make it).
  std::filesystem::create_directories(DataDir() + "/2024-06-01.db");
  auto failed = http_->Post("/_bulk", BulkLine("2024-06-01T10:00:00Z", "doomed"), kNdjson);
  ASSERT_EQ(failed.status, 200) << failed.body;
  EXPECT_TRUE(json::parse(failed.body).at("errors").as_bool()) << failed.body;
  auto not_ready = http_->Get("/readyz");
  ASSERT_EQ(not_ready.status, 503) << not_ready.body;
  EXPECT_NE(not_ready.body.find("the last commit failed"), std::string::npos) << not_ready.body;
  EXPECT_EQ(Scrape().Must("dashcam_commit_failures_total"), 1);

  auto ok = http_->Post("/_bulk", BulkLine("2024-06-02T10:00:00Z", "fine"), kNdjson);
  ASSERT_EQ(ok.status, 200);
  ASSERT_FALSE(json::parse(ok.body).at("errors").as_bool()) << ok.body;
  auto ready = http_->Get("/readyz");
  EXPECT_EQ(ready.status, 200) << ready.body;
}

// --- /api/v1/status ---------------------------------------------------------------

std::string VersionOfBinary() {
  std::string out;
  FILE* p = popen((TestServer::BinaryPath() + " --version").c_str(), "r");
  if (!p) return out;
  char buf[256];
  while (std::fgets(buf, sizeof buf, p)) out += buf;
  pclose(p);
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

// --search-helpers: idle helper threads read days of a search beside it
// (storage/search_helpers.h), which the counter shows; the answers are the
// same with them and without (--search-helpers 0).
TEST_F(ObservabilityTest, SearchHelpersReadDaysOfASearchAndCanBeTurnedOff) {
  StartServer({"--search-helpers", "1"});
  std::string body;
  for (int day = 1; day <= 4; ++day) {
    for (int i = 0; i < 40; ++i) {
      body += fmt::format(R"({{"@timestamp":"2024-05-0{}T10:00:{:02}Z","message":"step {}{}"}})",
                          day, i, i, i % 10 == 3 ? " needle" : "");
      body += '\n';
    }
  }
  auto ingest = http_->Post("/api/v1/ingest", body, kNdjson);
  ASSERT_EQ(ingest.status, 200) << ingest.body;
  const std::string range = "&from=2024-05-01T00:00:00Z&to=2024-05-06T00:00:00Z";
  auto search = [&](const std::string& q, int limit) {
    auto res =
        http_->Get("/api/v1/search?q=" + UrlEncode(q) + "&limit=" + std::to_string(limit) + range);
    EXPECT_EQ(res.status, 200) << res.body;
    const json::value v = json::parse(res.body);
    std::vector<std::string> messages;
    for (const json::value& h : v.at("hits").as_array()) {
      messages.emplace_back(h.at("_source").at("message").as_string());
    }
    return std::make_pair(v.at("total").to_number<std::int64_t>(), messages);
  };
  const std::vector<std::string> newest_needles = {"step 33 needle", "step 23 needle"};
  auto check = [&] {
    EXPECT_EQ(search("needle", 2), std::make_pair(std::int64_t{16}, newest_needles));
    EXPECT_EQ(search("step", 1).first, 160);
    EXPECT_EQ(search("absent", 5).first, 0);
  };
  // Helpers join once they wait for work: search until they have read a day.
  double helped = 0;
  for (int round = 0; round < 50 && helped == 0; ++round) {
    check();
    helped = Scrape().Must("dashcam_search_helper_partitions_total");
  }
  EXPECT_GT(helped, 0);

  ASSERT_EQ(server_->Stop(), 0) << server_->ReadLog();
  StartServer({"--search-helpers", "0"});
  for (int round = 0; round < 5; ++round) check();
  EXPECT_EQ(Scrape().Must("dashcam_search_helper_partitions_total"), 0);
}

// --sqlite-memory-mib bounds SQLite's page caches together
// (dashcam_sqlite_memory_bytes) while reads cover every day: without it, each
// day's read connection keeps the pages it read in its own page cache.
TEST_F(ObservabilityTest, SqliteMemoryStaysNearItsLimitWhileEveryDayIsRead) {
  StartServer({"--sqlite-memory-mib", "0"});
  std::mt19937_64 rng(7);
  for (int day = 1; day <= 4; ++day) {
    std::string body;
    for (int i = 0; i < 4000; ++i) {
      std::string message = fmt::format("step {}", i);
      for (int w = 0; w < 80; ++w) message += fmt::format(" w{:x}", rng() % 10'000'000);
      body += fmt::format(R"({{"@timestamp":"2024-05-0{}T{}:{:02}:{:02}Z","message":"{}"}})", day,
                          10 + i / 3600, i / 60 % 60, i % 60, message);
      body += '\n';
    }
    auto ingest = http_->Post("/api/v1/ingest", body, kNdjson);
    ASSERT_EQ(ingest.status, 200) << ingest.body;
  }
  const std::string range = "&from=2024-05-01T00:00:00Z&to=2024-05-06T00:00:00Z";
  // Every document of every day, then every day's index.
  auto read_everything = [&] {
    auto exported = http_->Get("/api/v1/export?format=ndjson&q=*" + range);
    EXPECT_EQ(exported.status, 200);
    EXPECT_EQ(std::count(exported.body.begin(), exported.body.end(), '\n'), 16'000);
    auto search = http_->Get("/api/v1/search?limit=1&q=" + UrlEncode("step AND NOT w1*") + range);
    EXPECT_EQ(search.status, 200) << search.body;
    return Scrape().Must("dashcam_sqlite_memory_bytes");
  };
  const double unbounded = read_everything();
  ASSERT_EQ(server_->Stop(), 0) << server_->ReadLog();
  StartServer({"--sqlite-memory-mib", "2"});
  const double bounded = read_everything();
  EXPECT_GT(unbounded, 12 << 20);
  EXPECT_LT(bounded, 4 << 20) << "unbounded: " << unbounded;
  std::printf("sqlite memory: unbounded %.1f MiB, bounded %.1f MiB\n", unbounded / (1 << 20),
              bounded / (1 << 20));
  auto status = json::parse(http_->Get("/api/v1/status").body);
  EXPECT_EQ(status.at("config").at("sqlite_memory_mib").to_number<int>(), 2);
}

TEST_F(ObservabilityTest, StatusListsPartitionsNewestFirstWithTheirEventsAndNoSecrets) {
  // A rules file whose contents must not show: only its path may.
  const std::string rules_path = dir_.path() + "/rules.yml";
  {
    std::ofstream rules(rules_path);
    rules << "rules:\n  - name: obs_private_rule\n    pattern: 'zz_very_private_[0-9]+'\n";
  }
  StartServer({"--queue-bytes", "12345678", "--redaction-rules", rules_path});
  std::string bulk;
  for (int i = 0; i < 3; ++i) bulk += BulkLine("2024-05-01T10:00:0" + std::to_string(i) + "Z", "a");
  for (int i = 0; i < 2; ++i) bulk += BulkLine("2024-05-02T10:00:0" + std::to_string(i) + "Z", "b");
  auto b = http_->Post("/_bulk", bulk, kNdjson);
  ASSERT_EQ(b.status, 200);
  ASSERT_FALSE(json::parse(b.body).at("errors").as_bool()) << b.body;

  auto res = http_->Get("/api/v1/status");
  ASSERT_EQ(res.status, 200) << res.body;
  EXPECT_EQ(res.body.find("zz_very_private"), std::string::npos) << res.body;
  EXPECT_EQ(res.body.find("obs_private_rule"), std::string::npos) << res.body;
  const json::value v = json::parse(res.body);
  EXPECT_EQ("dashcam " + std::string(v.at("version").as_string()), VersionOfBinary());
  EXPECT_GE(v.at("uptime_seconds").to_number<double>(), 0);
  EXPECT_EQ(v.at("listen").at("http"), json::value("127.0.0.1:" + std::to_string(server_->port())));
  EXPECT_EQ(v.at("listen").at("beats"),
            json::value("127.0.0.1:" + std::to_string(server_->beats_port())));

  const auto& parts = v.at("partitions").as_array();
  ASSERT_EQ(parts.size(), 2u) << res.body;
  EXPECT_EQ(parts[0].at("day"), "2024-05-02");
  EXPECT_EQ(parts[0].at("events"), 2);
  EXPECT_EQ(parts[1].at("day"), "2024-05-01");
  EXPECT_EQ(parts[1].at("events"), 3);
  std::uint64_t bytes = 0;
  for (const auto& p : parts) {
    EXPECT_GT(p.at("bytes").to_number<std::uint64_t>(), 0u);
    bytes += p.at("bytes").to_number<std::uint64_t>();
  }
  EXPECT_EQ(v.at("totals").at("partitions"), 2);
  EXPECT_EQ(v.at("totals").at("events"), 5);
  EXPECT_EQ(v.at("totals").at("bytes").to_number<std::uint64_t>(), bytes);

  const auto& ingest = v.at("ingest");
  EXPECT_EQ(ingest.at("events_since_start"), 5);
  EXPECT_EQ(ingest.at("events_last_minute"), 5);
  EXPECT_GT(ingest.at("events_per_second_last_minute").to_number<double>(), 0);
  EXPECT_GT(ingest.at("events_per_second_since_start").to_number<double>(), 0);
  EXPECT_EQ(ingest.at("queue_limit_bytes"), 12345678);

  const auto& config = v.at("config");
  EXPECT_EQ(config.at("queue_bytes"), 12345678);
  EXPECT_EQ(config.at("data_dir"), json::value(DataDir()));
  EXPECT_EQ(config.at("redaction").at("rules_file"), json::value(rules_path));
  EXPECT_EQ(config.at("redaction").at("enabled"), true);
  EXPECT_GE(v.at("connections").at("http").to_number<int>(), 1);

  // The counts come from the partitions, not from memory: a restart keeps
  // them, while the ingest rate starts over.
  ASSERT_EQ(server_->Stop(), 0);
  StartServer({"--queue-bytes", "12345678"});
  const json::value after = json::parse(http_->Get("/api/v1/status").body);
  EXPECT_EQ(after.at("totals").at("events"), 5);
  EXPECT_EQ(after.at("partitions").at(0).at("events"), 2);
  EXPECT_EQ(after.at("ingest").at("events_since_start"), 0);
}

}  // namespace
}  // namespace dashcam::testing::observability_test
