// Integration tests of the query language against the real binary: every
// construct of the README's "Query language" section on hand-made events,
// errors with positions, limits, hostile input (SQL and FTS5 syntax), and
// the time budget enforced inside SQLite.
#include <sys/types.h>

#include <chrono>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <boost/json.hpp>

#include "tests/common/http_client.h"
#include "tests/common/test_server.h"
#include "tests/common/training_log_generator.h"

namespace dashcam::testing::query_language_test {
namespace {

namespace json = boost::json;
using Names = std::set<std::string>;

// The events every test here searches. `name` tells hits apart.
std::vector<std::string> Events(std::int64_t now_ms) {
  auto iso = [](std::int64_t ms) {
    const std::time_t s = ms / 1000;
    std::tm tm{};
    gmtime_r(&s, &tm);
    return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", tm.tm_year + 1900,
                       tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ms % 1000);
  };
  return {
      R"j({"name":"oom","@timestamp":"2026-11-29T10:15:00Z","message":"RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB","host":{"name":"gpu-node-07"},"user":"zhangsan","gpu_id":0,"gpu_mem_mb":79000,"log":{"level":"ERROR"}})j",
      R"j({"name":"illegal","@timestamp":"2026-11-29T10:45:00Z","message":"CUDA error: illegal memory access was encountered","host":{"name":"gpu-node-12"},"user":"alice","gpu_id":3,"log":{"level":"ERROR"}})j",
      R"j({"name":"step","@timestamp":"2026-11-29T11:00:00Z","message":"epoch 3 step 1200/5000 loss=0.4312","host":{"name":"gpu-node-07"},"user":"bob","step":1200,"loss":0.4312,"gpu_mem_mb":61234,"log":{"level":"INFO"}})j",
      R"j({"name":"step2","@timestamp":"2026-11-29T11:30:00Z","message":"epoch 4 step 100/5000 loss=1.25","host":{"name":"cpu-node-07"},"user":"bob","step":100,"loss":1.25,"gpu_mem_mb":8000,"log":{"level":"WARN"}})j",
      R"j({"name":"zh","@timestamp":"2026-11-29T12:00:00Z","message":"训练失败：CUDA显存溢出，显存不足","user":"张三","log":{"level":"ERROR"}})j",
      R"j({"name":"escaped","@timestamp":"2026-11-29T12:30:00Z","message":"path x1:y2 said \"hi\" (twice)","user":"lisi","log":{"level":"DEBUG"}})j",
      R"j({"name":"hostile","@timestamp":"2026-11-29T13:00:00Z","message":"it's '); DROP TABLE events; -- NEAR(a b) \"q\" * ^x message:y","log":{"level":"INFO"}})j",
      fmt::format(
          R"({{"name":"recent","@timestamp":"{}","message":"warmup done","log":{{"level":"INFO"}}}})",
          iso(now_ms - 10 * 60'000)),
      fmt::format(
          R"({{"name":"earlier","@timestamp":"{}","message":"warmup started","log":{{"level":"INFO"}}}})",
          iso(now_ms - 2 * 3'600'000)),
  };
}

class QueryLanguageTest : public ::testing::Test {
 protected:
  void StartServer(std::vector<std::string> args = {}) {
    server_ = std::make_unique<TestServer>(dir_.path() + "/data", std::move(args));
    ASSERT_TRUE(server_->Start()) << server_->ReadLog();
    client_ = std::make_unique<HttpClient>("127.0.0.1", server_->port());
  }
  void SetUp() override {
    StartServer();
    const auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
    std::string body;
    for (const std::string& e : Events(now)) {
      const bool app = e.find("\"name\":\"zh\"") != std::string::npos;
      body += app ? R"({"create":{"_index":"app-logs"}})"
                  : R"({"create":{"_index":"filebeat-8.17.0"}})";
      body += "\n" + e + "\n";
    }
    auto res = client_->Post("/_bulk", body, {{"Content-Type", "application/x-ndjson"}});
    ASSERT_EQ(res.status, 200) << res.body;
    const json::value v = json::parse(res.body);
    ASSERT_FALSE(v.at("errors").as_bool()) << res.body;
    first_id_ = std::string(v.at("items").at(0).at("create").at("_id").as_string());
  }
  void TearDown() override {
    if (server_ && server_->pid() > 0) {
      EXPECT_EQ(server_->Stop(), 0) << server_->ReadLog();
    }
  }

  HttpResult Get(const std::string& q, const std::string& extra = "") {
    return client_->Get("/api/v1/search?limit=100&q=" + UrlEncode(q) + extra);
  }
  // The names of the hits; the test fails on anything but 200.
  Names Find(const std::string& q) {
    const HttpResult res = Get(q);
    EXPECT_EQ(res.status, 200) << q << " -> " << res.body;
    Names out;
    if (res.status != 200) return out;
    const json::value v = json::parse(res.body);
    for (const auto& hit : v.at("hits").as_array()) {
      out.insert(std::string(hit.at("_source").at("name").as_string()));
    }
    return out;
  }
  std::int64_t Count(const std::string& q) {
    const HttpResult res = Get(q, "&track_total_hits=true");
    EXPECT_EQ(res.status, 200) << res.body;
    return res.status == 200 ? json::parse(res.body).at("total").as_int64() : -1;
  }

  TempDir dir_;
  std::unique_ptr<TestServer> server_;
  std::unique_ptr<HttpClient> client_;
  std::string first_id_;
};

TEST_F(QueryLanguageTest, EveryConstruct) {
  struct Case {
    std::string query;
    Names want;
  };
  const Names all = {"oom",     "illegal", "step",   "step2",  "zh",
                     "escaped", "hostile", "recent", "earlier"};
  const std::vector<Case> cases = {
      {"cuda", {"oom", "illegal", "zh"}},
      {"\"CUDA out of memory\"", {"oom"}},
      {"host.name:gpu-node-07", {"oom", "step"}},
      {"cud*", {"oom", "illegal", "zh"}},
      {"cud?", {"oom", "illegal", "zh"}},
      {"*memory", {"oom", "illegal"}},
      {"wa?mu*", {"recent", "earlier"}},
      {"host.name:gpu-node-*", {"oom", "illegal", "step"}},
      {"host.name:*-node-07", {"oom", "step", "step2"}},
      {"_exists_:gpu_id", {"oom", "illegal"}},
      {"gpu_id:*", {"oom", "illegal"}},
      {"NOT _exists_:gpu_mem_mb AND NOT _exists_:gpu_id AND warmup", {"recent", "earlier"}},
      {"gpu_mem_mb:>10000", {"oom", "step"}},
      {"gpu_mem_mb:>=61234", {"oom", "step"}},
      {"gpu_mem_mb:<61234", {"step2"}},
      {"gpu_mem_mb:<=61234", {"step", "step2"}},
      {"loss:[0.5 TO 2]", {"step2"}},
      {"step:{100 TO *]", {"step"}},
      {"step:[100 TO *]", {"step", "step2"}},
      {"@timestamp:[2026-11-29T10:00 TO 2026-11-29T11:00}", {"oom", "illegal"}},
      {"@timestamp:[2026-11-29T10:00 TO 2026-11-29T11:00]", {"oom", "illegal", "step"}},
      {"@timestamp:2026-11-29T10", {"oom", "illegal"}},
      {"@timestamp:>now-1h", {"recent"}},
      {"@timestamp:[now-3h TO now-1h]", {"earlier"}},
      {"message:/CUDA error: (out of memory|illegal memory access)/", {"illegal"}},
      {"/CUDA (error: illegal|out of) memory/", {"oom", "illegal"}},
      {"user:/^zh.*n$/", {"oom"}},
      {"/(?i)^cuda/", {"illegal"}},
      {"x1\\:y2", {"escaped"}},
      {"\"said \\\"hi\\\"\"", {"escaped"}},
      {"\\(twice\\)", {"escaped"}},
      {"\"cuda memory\"~3", {"oom", "illegal"}},
      {"\"error memory\"~1", {"illegal"}},
      {"\"memory error\"~1", {"illegal"}},
      {"memroy~1", {"oom", "illegal"}},
      {"ilegal~", {"illegal"}},
      {"_index:filebeat-*",
       {"oom", "illegal", "step", "step2", "escaped", "hostile", "recent", "earlier"}},
      {"_index:app*", {"zh"}},
      {"_id:" + first_id_, {"oom"}},
      {"log.level:(ERROR OR WARN)", {"oom", "illegal", "step2", "zh"}},
      {"user:(bob alice)", {}},
      {"user:(bob OR alice)", {"illegal", "step", "step2"}},
      {"+cuda -illegal", {"oom", "zh"}},
      {"cuda AND NOT illegal OR warmup", {"oom", "zh", "recent", "earlier"}},
      {"cuda && !illegal || warmup", {"oom", "zh", "recent", "earlier"}},
      {"cuda and not illegal or warmup", {"oom", "zh", "recent", "earlier"}},
      {"warmup -started", {"recent"}},
      {"cuda^2 memory", {"oom", "illegal"}},
      {"显存", {"zh"}},
      {"显存不足", {"zh"}},
      {"显存溢出", {"zh"}},
      {"CUDA显存溢出", {"zh"}},
      {"user:张三", {"zh"}},
      {"*", all},
      {"", all},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(Find(c.query), c.want) << "query: " << c.query;
  }
}

TEST_F(QueryLanguageTest, ParseErrorsNameThePositionAndWhatWasExpected) {
  struct Case {
    std::string query;
    std::size_t position;
    std::string reason;
  };
  const std::vector<Case> cases = {
      {"cuda AND", 8, "expected a term after AND"},
      {"(cuda", 5, "expected ')' to close the '(' at byte 0"},
      {"size:[1 TO 5", 12, "expected ']' or '}' to close the range opened at byte 5"},
      {"loss:[0.5 2]", 10, "expected 'TO'"},
      {"/unterminated", 13, "unterminated regular expression"},
      {"/a(b/", 0, "invalid regular expression"},
      {"memory~3", 7, "expected an edit distance of 0, 1 or 2"},
      {"user:\"a b\"~2", 10, "proximity (\"a b\"~N) is supported on the message only"},
      {"@timestamp:>now-1x", 17, "expected a unit"},
      {"level:(user:x)", 7, "cannot contain another field"},
      {"- cuda", 1, "expected a term right after '-'"},
      {"a ^2", 2, "a boost (^) must directly follow"},
  };
  for (const Case& c : cases) {
    const HttpResult res = Get(c.query);
    ASSERT_EQ(res.status, 400) << c.query << " -> " << res.body;
    const json::value v = json::parse(res.body);
    EXPECT_EQ(v.at("error").at("type").as_string(), "query_parse_error") << res.body;
    EXPECT_EQ(v.at("error").at("position").as_int64(), static_cast<std::int64_t>(c.position))
        << c.query << " -> " << res.body;
    EXPECT_NE(std::string(v.at("error").at("reason").as_string()).find(c.reason), std::string::npos)
        << c.query << " -> " << res.body;
  }
}

TEST_F(QueryLanguageTest, LimitsOnLengthAndDepth) {
  HttpResult res = Get(std::string(16 * 1024, 'a'));
  EXPECT_EQ(res.status, 200) << res.body.substr(0, 200);
  // Percent-encoded, a 16 KiB query of CJK text is 48 KiB of request line.
  std::string cjk;
  while (cjk.size() + 3 <= 16 * 1024) cjk += "显";
  res = Get(cjk);
  EXPECT_EQ(res.status, 200) << res.body.substr(0, 200);
  res = Get(std::string(16 * 1024 + 1, 'a'));
  ASSERT_EQ(res.status, 400);
  EXPECT_NE(res.body.find("query is longer than 16384 bytes"), std::string::npos) << res.body;
  res = Get(std::string(65, '(') + "cuda" + std::string(65, ')'));
  ASSERT_EQ(res.status, 400);
  EXPECT_NE(res.body.find("nests deeper than 64 levels"), std::string::npos) << res.body;
  EXPECT_NE(res.body.find("\"position\":64"), std::string::npos) << res.body;
}

TEST_F(QueryLanguageTest, WildcardsPastTheExpansionLimitAre400) {
  std::string body;
  for (int i = 0; i < 1100; ++i) {
    body += R"({"create":{"_index":"jobs"}})"
            "\n";
    body +=
        fmt::format(R"({{"name":"j","@timestamp":"2026-11-30T00:00:00Z","message":"job{}"}})", i) +
        "\n";
  }
  ASSERT_EQ(client_->Post("/_bulk", body, {{"Content-Type", "application/x-ndjson"}}).status, 200);
  const HttpResult res = Get("job*1");
  ASSERT_EQ(res.status, 200) << res.body;  // 110 terms end in 1
  const HttpResult wide = Get("j?b*");
  if (ExternalTestStorage()) {
    // ClickHouse matches a wildcard with a regex over the stored tokens:
    // no list of terms to expand, so no limit to pass.
    ASSERT_EQ(wide.status, 200) << wide.body;
    EXPECT_EQ(json::parse(wide.body).at("total").as_int64(), 1100);
    return;
  }
  ASSERT_EQ(wide.status, 400) << wide.body;
  EXPECT_NE(wide.body.find("`j?b*` at byte 0 matches more than 1024 distinct terms"),
            std::string::npos)
      << wide.body;
}

// SQL and FTS5 syntax in queries is matched as text or refused with a 400:
// never a 500, never a change to the data.
TEST_F(QueryLanguageTest, InjectionIsTextOrA400) {
  const std::int64_t before = Count("*");
  const std::vector<std::string> hostile = {
      "'); DROP TABLE events; --",
      "\"'); DROP TABLE events; --\"",
      "x'); DELETE FROM events; --",
      "NEAR(",
      "NEAR(a b)",
      "NEAR(\"a\" \"b\", 1)",
      "\"",
      "\"\"\"",
      "*",
      "* *",
      "^",
      "a^",
      "\"message: y\"",
      "message:\"a message:b\"",
      "{message}:x",
      "attrs:x",
      "fts:x",
      "rowid:1",
      "x\" OR \"y",
      "\"x\" OR \"y\"",
      "/'); DROP TABLE events; --/",
      "/\"/",
      "_id:' OR 1=1 --",
      "_id:\"'); DROP TABLE events; --\"",
      "_index:*'; DROP",
      "gpu_id:[0 TO 1'); DROP TABLE events; --]",
      "@timestamp:[0 TO '1']",
      "user:\\' OR 1=1",
      std::string("a\0b", 3),
      "\x01\x02\x03\x1e\x1f",
      "*'*",
      "?'?",
      "dc_match(dc_source(e.source), dc_name(e.idx), 1)",
      "\"NEAR(a b)\"~2",
      "NEAR~1",
  };
  for (const std::string& q : hostile) {
    const HttpResult res = Get(q);
    EXPECT_TRUE(res.status == 200 || res.status == 400)
        << q << " -> " << res.status << " " << res.body;
    if (res.status == 400) {
      EXPECT_TRUE(json::parse(res.body).at("error").as_object().contains("reason")) << res.body;
    }
  }
  // Matched literally where they are text.
  EXPECT_EQ(Find("\"'); DROP TABLE events; --\""), (Names{"hostile"}));
  EXPECT_EQ(Find("\"NEAR(a b)\""), (Names{"hostile"}));
  EXPECT_EQ(Find("\"message:y\""), (Names{"hostile"}));
  EXPECT_EQ(Find("/'\\); DROP TABLE events; --/"), (Names{"hostile"}));
  EXPECT_EQ(Find("\\^x"), (Names{"hostile"}));
  EXPECT_EQ(Count("*"), before);
  // And the data is intact after a restart too.
  ASSERT_EQ(server_->Stop(), 0);
  StartServer();
  EXPECT_EQ(Count("*"), before);
  EXPECT_EQ(Find("cuda"), (Names{"oom", "illegal", "zh"}));
}

// Utime + stime of a process, in clock ticks.
long CpuTicks(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::istringstream rest(stat.substr(stat.rfind(')') + 2));
  std::string field;
  long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14) utime = std::stol(field);
    if (i == 15) stime = std::stol(field);
  }
  return utime + stime;
}

// A regex with no literal to narrow by must read every row; a small time
// budget stops it inside SQLite: 503, and nothing keeps running.
TEST_F(QueryLanguageTest, TimeBudgetStopsAScanningRegex) {
  ASSERT_EQ(server_->Stop(), 0);
  StartServer({"--query-timeout-ms", "20"});
  GeneratorOptions options;
  options.expected_events = 20000;
  TrainingLogGenerator gen(options);
  for (int batch = 0; batch < 4; ++batch) {
    std::string body;
    for (int i = 0; i < 5000; ++i) {
      body += R"({"create":{"_index":"load"}})"
              "\n" +
              gen.Next().json + "\n";
    }
    ASSERT_EQ(client_
                  ->Post("/_bulk", Gzip(body),
                         {{"Content-Type", "application/x-ndjson"}, {"Content-Encoding", "gzip"}})
                  .status,
              200);
  }
  // Each regex decodes every row again in SQLite, and is another pass over
  // the column in ClickHouse: 48 make the scan slow anywhere. (No literal
  // word of 3 bytes, which the vocabulary would answer without the rows.)
  std::string q = "/[xz]q[0-9]{2}[xz]/";
  for (int i = 1; i < 48; ++i) q += fmt::format(" OR /[xz]{}[0-9][xz]/", i);
  const HttpResult res = Get(q, "&track_total_hits=true");
  ASSERT_EQ(res.status, 503) << res.body.substr(0, 300);
  const json::value v = json::parse(res.body);
  EXPECT_EQ(v.at("error").at("type").as_string(), "query_timeout");
  // No load left behind: the server is idle right after answering.
  const long before = CpuTicks(server_->pid());
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_LE(CpuTicks(server_->pid()) - before, 5);
  // A selective query still fits the budget: on SQLite. A round trip to a
  // ClickHouse cluster alone takes more than 20 ms. It takes a few ms alone,
  // but a sanitizer build on two busy cores can be descheduled past 20 ms
  // (seen in CI): a few tries, each answered 200 or as a timeout.
  if (ExternalTestStorage()) return;
  bool answered = false;
  for (int attempt = 0; attempt < 5 && !answered; ++attempt) {
    const HttpResult sel = Get("\"CUDA out of memory\"");
    if (sel.status == 200) {
      answered = true;
    } else {
      ASSERT_EQ(sel.status, 503) << sel.body.substr(0, 300);
      EXPECT_EQ(json::parse(sel.body).at("error").at("type").as_string(), "query_timeout");
    }
  }
  EXPECT_TRUE(answered);
}

TEST_F(QueryLanguageTest, ElasticsearchQueryStringReadsLowercaseOperatorsAsWords) {
  auto hits = [&](const std::string& q) {
    const HttpResult res = client_->Get("/filebeat-*/_search?q=" + UrlEncode(q));
    EXPECT_EQ(res.status, 200) << res.body;
    return json::parse(res.body).at("hits").at("total").at("value").as_int64();
  };
  EXPECT_EQ(hits("cud* AND *memory"), 2);
  EXPECT_EQ(hits("memroy~1"), 2);
  EXPECT_EQ(hits("step AND and"), 0);  // `and` is a word here, and no event has it
  EXPECT_EQ(hits("@timestamp:[2026-11-29T10:00 TO 2026-11-29T11:00}"), 2);
}

}  // namespace
}  // namespace dashcam::testing::query_language_test
