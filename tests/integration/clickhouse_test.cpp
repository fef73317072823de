// The ClickHouse backend's foundation against a real local cluster (issue
// 10): two clickhouse-server nodes as a 2-shard cluster
// (tests/common/clickhouse_cluster.h), `dashcam ch-init` run by the real
// binary, and ChClient with the literals every query will be built from.
#include <sys/wait.h>

#include <cstdio>
#include <future>
#include <set>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "storage/clickhouse/ch_client.h"
#include "storage/clickhouse/ch_literal.h"
#include "storage/clickhouse/ch_options.h"
#include "storage/clickhouse/ch_store.h"
#include "storage/log.h"
#include "tests/common/beats_client.h"
#include "tests/common/clickhouse_cluster.h"
#include "tests/common/http_client.h"
#include "tests/common/stream_client.h"
#include "tests/common/test_server.h"

namespace dashcam::testing::clickhouse_test {
namespace {

using dashcam::StatusCode;
using storage::clickhouse::ChClient;
using storage::clickhouse::ChHost;
using storage::clickhouse::ChString;

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr
};

// Runs the real binary with `args` (each single-quoted for the shell).
CommandResult RunDashcam(const std::vector<std::string>& args) {
  std::string cmd = "'" + TestServer::BinaryPath() + "'";
  for (const std::string& a : args) cmd += " '" + a + "'";
  cmd += " 2>&1";
  CommandResult r;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  std::size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.output.append(buf, n);
  const int status = ::pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  return s;
}

ChClient Client(const ClickHouseCluster& cluster, int node, int timeout_ms = 10'000) {
  return ChClient(ChHost{"127.0.0.1", cluster.http_port(node)},
                  std::chrono::milliseconds(timeout_ms));
}

TEST(ClickHouseTest, ChInitCreatesTheTablesOnEveryNodeAndCanRunAgain) {
  ClickHouseCluster cluster(2);
  ASSERT_TRUE(cluster.Start()) << cluster.error();
  for (int round = 0; round < 2; ++round) {
    const CommandResult r = RunDashcam({"ch-init", "--storage", cluster.StorageUrl("dc")});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("cluster dashcam_test of 2 shards"), std::string::npos) << r.output;
  }
  for (int node = 0; node < 2; ++node) {
    EXPECT_EQ(Trim(cluster.Query(node,
                                 "SELECT name, engine FROM system.tables WHERE database = "
                                 "'dc' ORDER BY name FORMAT CSV")),
              "\"events\",\"Distributed\"\n\"events_local\",\"ReplacingMergeTree\"");
    // Days are cut in UTC whatever the server's time zone.
    EXPECT_EQ(Trim(cluster.Query(node,
                                 "SELECT type FROM system.columns WHERE database = 'dc' AND "
                                 "table = 'events_local' AND name = 'ts' FORMAT TabSeparatedRaw")),
              "DateTime('UTC')");
  }
  // Rows sent to either node's Distributed table land on the shard their id
  // hashes to; a batch sent twice (a retry) collapses to one copy of each.
  std::string batch;
  for (int i = 0; i < 40; ++i) {
    batch += fmt::format(
        R"({{"ts":"2026-11-29 10:00:{:02}","ms":{},"id":"ev-{}","idx":"logs","level":"INFO",)"
        R"("message":"step {}","source":"{{}}"}})"
        "\n",
        i, i * 7, i, i);
  }
  const storage::clickhouse::ChSettings sync = {{"insert_distributed_sync", "1"}};
  for (int node = 0; node < 2; ++node) {
    auto s = Client(cluster, node).Insert("INSERT INTO dc.events FORMAT JSONEachRow", batch, sync);
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
  const int on0 = std::stoi(cluster.Query(0, "SELECT count() FROM dc.events_local"));
  const int on1 = std::stoi(cluster.Query(1, "SELECT count() FROM dc.events_local"));
  EXPECT_EQ(on0 + on1, 80);
  EXPECT_GT(on0, 0);
  EXPECT_GT(on1, 0);
  EXPECT_EQ(Trim(cluster.Query(
                0, "SELECT count() FROM (SELECT id FROM dc.events ORDER BY ts, ms LIMIT 1 BY id)")),
            "40");
  for (int node = 0; node < 2; ++node) {
    cluster.Query(node, "OPTIMIZE TABLE dc.events_local FINAL");
  }
  EXPECT_EQ(Trim(cluster.Query(1, "SELECT count() FROM dc.events")), "40");
}

// Tables of the first version lacked the run columns: init adds them to the
// local and the Distributed table, or every insert would fail on them.
TEST(ClickHouseTest, ChInitAddsTheColumnsAnEarlierVersionsTablesLack) {
  ClickHouseCluster cluster(2);
  ASSERT_TRUE(cluster.Start()) << cluster.error();
  for (int node = 0; node < 2; ++node) {
    cluster.Query(node, "CREATE DATABASE old");
    cluster.Query(node,
                  "CREATE TABLE old.events_local (ts DateTime('UTC'), ms UInt16, seq UInt32, ins "
                  "UInt64, id String, idx String, level String, message String, has_msg UInt8, "
                  "tokens String, ftokens String, str_names Array(String), str_values "
                  "Array(String), num_names Array(String), num_values Array(Float64), snum_names "
                  "Array(String), snum_values Array(Float64), source String) ENGINE = "
                  "ReplacingMergeTree() PARTITION BY toYYYYMMDD(ts) ORDER BY (ts, ms, id)");
    cluster.Query(node, fmt::format("CREATE TABLE old.events AS old.events_local ENGINE = "
                                    "Distributed({}, 'old', 'events_local', sipHash64(id))",
                                    ClickHouseCluster::kClusterName));
  }
  cluster.Query(0,
                "INSERT INTO old.events_local (ts, id, source) VALUES ('2026-11-29 10:00:00', "
                "'before', '{}')");
  for (int round = 0; round < 2; ++round) {
    const CommandResult r = RunDashcam({"ch-init", "--storage", cluster.StorageUrl("old")});
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  for (int node = 0; node < 2; ++node) {
    for (const char* table : {"events_local", "events"}) {
      EXPECT_EQ(Trim(cluster.Query(node, fmt::format("SELECT name, type FROM system.columns WHERE "
                                                     "database = 'old' AND table = '{}' AND name "
                                                     "LIKE 'grp%' ORDER BY name FORMAT CSV",
                                                     table))),
                "\"grp\",\"String\"\n\"grp_end\",\"UInt8\"")
          << node << " " << table;
    }
  }
  const storage::clickhouse::ChSettings sync = {{"insert_distributed_sync", "1"}};
  auto s =
      Client(cluster, 1)
          .Insert(
              "INSERT INTO old.events FORMAT JSONEachRow",
              R"({"ts":"2026-11-29 10:00:01","id":"after","grp":"r-1","grp_end":1,"source":"{}"})"
              "\n",
              sync);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(
      Trim(cluster.Query(0, "SELECT id, grp, grp_end FROM old.events ORDER BY ts FORMAT CSV")),
      "\"before\",\"\",0\n\"after\",\"r-1\",1");
}

TEST(ClickHouseTest, ChInitFailsClearly) {
  ClickHouseCluster cluster(2);
  ASSERT_TRUE(cluster.Start()) << cluster.error();
  const std::string one = fmt::format("clickhouse://127.0.0.1:{}/dc", cluster.http_port(0));
  CommandResult r = RunDashcam({"ch-init", "--storage", one + "?cluster=no_such_cluster"});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("has no cluster 'no_such_cluster' in its remote_servers"),
            std::string::npos)
      << r.output;
  r = RunDashcam({"ch-init", "--storage", "clickhouse://127.0.0.1:notaport/dc?cluster=x"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("bad port 'notaport'"), std::string::npos) << r.output;
  // A node down: named, and the run fails.
  cluster.StopNode(1);
  r = RunDashcam({"ch-init", "--storage", cluster.StorageUrl("dc") + "&timeout_ms=3000"});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find(fmt::format("127.0.0.1:{}", cluster.http_port(1))), std::string::npos)
      << r.output;
  // It comes back: ch-init succeeds.
  ASSERT_TRUE(cluster.StartNode(1)) << cluster.error();
  r = RunDashcam({"ch-init", "--storage", cluster.StorageUrl("dc")});
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

// Every byte value, and strings made to break out of a literal, reach the
// server as the bytes they are.
TEST(ClickHouseTest, StringLiteralsRoundTripEveryByte) {
  ClickHouseCluster cluster(1);
  ASSERT_TRUE(cluster.Start()) << cluster.error();
  std::string all;
  for (int b = 0; b < 256; ++b) all.push_back(static_cast<char>(b));
  const std::vector<std::string> values = {all,
                                           "",
                                           "'",
                                           "\\",
                                           "\\'",
                                           "'; DROP TABLE t; --",
                                           "a\nb\rc\td",
                                           "显存不足 \xf0\x9f\x98\x80",
                                           std::string("nul\0inside", 10)};
  const ChClient node = Client(cluster, 0);
  for (const std::string& v : values) {
    auto answer = node.Query(
        fmt::format("SELECT hex({}), length({}) FORMAT TabSeparated", ChString(v), ChString(v)));
    ASSERT_TRUE(answer.ok()) << answer.status().ToString();
    std::string hex;
    for (unsigned char c : v) hex += fmt::format("{:02X}", c);
    EXPECT_EQ(Trim(*answer), hex + "\t" + std::to_string(v.size()));
  }
}

TEST(ClickHouseTest, ClientErrorsSayWhoAndWhy) {
  ClickHouseCluster cluster(2);
  ASSERT_TRUE(cluster.Start()) << cluster.error();
  const ChClient node = Client(cluster, 0);
  // A bug in our SQL: Internal, with ClickHouse's code.
  auto r = node.Query("SELEKT 1");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInternal);
  EXPECT_NE(r.status().message().find("ClickHouse Code 62"), std::string::npos)
      << r.status().message();
  // A shard down behind a Distributed table: Unavailable (Code 279).
  ASSERT_TRUE(RunDashcam({"ch-init", "--storage", cluster.StorageUrl("dc")}).exit_code == 0);
  cluster.StopNode(1);
  r = node.Query("SELECT count() FROM dc.events");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable) << r.status().ToString();
  // The stopped node itself: Unavailable, naming it.
  r = Client(cluster, 1, 2000).Query("SELECT 1");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(r.status().message().find(std::to_string(cluster.http_port(1))), std::string::npos)
      << r.status().message();
}

// --- dashcam over the cluster (--storage clickhouse://) ---------------------

namespace json = boost::json;

// Event i of a small corpus: who, where and what vary with i, so the
// queries below have known answers.
struct Event {
  std::string user, host, message;
  std::int64_t ts_ms = 0;
  int gpu = 0;
};

Event MakeEvent(int i, std::int64_t base_ms) {
  static const char* kUsers[] = {"zhangsan", "lisi", "wangwu"};
  Event e;
  e.user = kUsers[i % 3];
  e.host = fmt::format("gpu-node-{:02}", i % 8);
  e.gpu = i % 4;
  e.ts_ms = base_ms + i * 1000;
  e.message = i % 50 == 7 ? fmt::format("CUDA error: out of memory (step {})", i)
                          : fmt::format("epoch {} step {} loss=0.{:03}", i / 100, i, i % 1000);
  return e;
}

std::string Document(const Event& e) {
  return json::serialize(json::object{{"@timestamp", e.ts_ms},
                                      {"message", e.message},
                                      {"user", e.user},
                                      {"host", json::object{{"name", e.host}}},
                                      {"gpu", e.gpu}});
}

// A _bulk body of events [begin, end), without ids (as Filebeat sends).
std::string BulkBody(int begin, int end, std::int64_t base_ms) {
  std::string body;
  for (int i = begin; i < end; ++i)
    body += "{\"create\":{}}\n" + Document(MakeEvent(i, base_ms)) + "\n";
  return body;
}

struct SearchAnswer {
  int status = 0;
  std::uint64_t total = 0;
  std::vector<std::string> ids;  // newest first
  std::string body;
};

SearchAnswer Search(HttpClient& client, const std::string& q, int limit = 10000) {
  HttpResult r = client.Get(fmt::format("/api/v1/search?limit={}&q={}", limit, UrlEncode(q)));
  SearchAnswer a{r.status, 0, {}, r.body};
  if (r.status != 200) return a;
  const json::object o = json::parse(r.body).as_object();
  a.total = o.at("total").to_number<std::uint64_t>();
  for (const json::value& h : o.at("hits").as_array()) {
    a.ids.emplace_back(h.at("_id").as_string());
  }
  return a;
}

std::uint64_t Expected(int n, std::int64_t base_ms, const std::function<bool(const Event&)>& f) {
  std::uint64_t count = 0;
  for (int i = 0; i < n; ++i) count += f(MakeEvent(i, base_ms)) ? 1 : 0;
  return count;
}

// Two dashcam instances write to one cluster, one over _bulk and one over
// the Beats protocol, and then answer every query alike: same totals, same
// hits in the same order, equal to what the corpus holds.
TEST(ClickHouseStoreTest, TwoInstancesOverOneClusterAnswerAlike) {
  ClickHouseCluster cluster(2);
  ASSERT_TRUE(cluster.Start()) << cluster.error();
  TempDir dir;
  TestServer a(dir.path() + "/a", {"--storage", cluster.StorageUrl("shared"), "--no-detectors"});
  TestServer b(dir.path() + "/b", {"--storage", cluster.StorageUrl("shared"), "--no-detectors"});
  ASSERT_TRUE(a.Start()) << a.error() << a.ReadLog();
  ASSERT_TRUE(b.Start()) << b.error() << b.ReadLog();
  constexpr int kBulk = 3000, kBeats = 3000, kWindow = 500;
  const std::int64_t base_ms = 1795903200000;  // 2026-11-28T22:00:00Z: two UTC days

  // Both at once: A takes _bulk requests, B Beats windows.
  std::thread bulk([&] {
    HttpClient client("127.0.0.1", a.port());
    for (int begin = 0; begin < kBulk; begin += kWindow) {
      HttpResult r = client.Post("/_bulk", BulkBody(begin, begin + kWindow, base_ms),
                                 {{"Content-Type", "application/x-ndjson"}});
      EXPECT_EQ(r.status, 200) << r.body.substr(0, 300);
      EXPECT_NE(r.body.find("\"errors\":false"), std::string::npos) << r.body.substr(0, 300);
    }
  });
  {
    BeatsClient beats(b.beats_port());
    ASSERT_TRUE(beats.connected());
    for (int begin = kBulk; begin < kBulk + kBeats; begin += kWindow) {
      std::string frames = WindowFrame(kWindow);
      for (int i = begin; i < begin + kWindow; ++i) {
        frames +=
            JsonFrame(static_cast<std::uint32_t>(i - begin + 1), Document(MakeEvent(i, base_ms)));
      }
      ASSERT_TRUE(beats.Send(frames));
      auto ack = beats.ReadFinalAck(std::chrono::seconds(30));
      ASSERT_TRUE(ack.has_value());
      EXPECT_EQ(ack->seq, static_cast<std::uint32_t>(kWindow));
    }
  }
  bulk.join();

  constexpr int kAll = kBulk + kBeats;
  struct Case {
    std::string q;
    std::function<bool(const Event&)> matches;
  };
  const std::vector<Case> cases = {
      {"message:\"out of memory\"",
       [](const Event& e) { return e.message.find("out of memory") != std::string::npos; }},
      {"user:zhangsan AND host.name:\"gpu-node-03\"",
       [](const Event& e) { return e.user == "zhangsan" && e.host == "gpu-node-03"; }},
      {"gpu:>=2 AND NOT user:lisi", [](const Event& e) { return e.gpu >= 2 && e.user != "lisi"; }},
      {"host.name:gpu-node-0?", [](const Event&) { return true; }},
      {"/loss=0\\.00[0-9]/",
       [](const Event& e) { return e.message.find("loss=0.00") != std::string::npos; }},
      // A range on the message compares its text (query_ast.h's kRange).
      {"message:{\"epoch 1\" TO \"epoch 2\"}",
       [](const Event& e) { return e.message > "epoch 1" && e.message < "epoch 2"; }},
      {"memroy~1 OR gpu:3",
       [](const Event& e) { return e.message.find("memory") != std::string::npos || e.gpu == 3; }},
  };
  HttpClient ca("127.0.0.1", a.port()), cb("127.0.0.1", b.port());
  for (const Case& c : cases) {
    const SearchAnswer ra = Search(ca, c.q), rb = Search(cb, c.q);
    ASSERT_EQ(ra.status, 200) << c.q << ": " << ra.body.substr(0, 300);
    ASSERT_EQ(rb.status, 200) << c.q << ": " << rb.body.substr(0, 300);
    const std::uint64_t expected = Expected(kAll, base_ms, c.matches);
    EXPECT_GT(expected, 0u) << c.q;
    EXPECT_EQ(ra.total, expected) << c.q;
    EXPECT_EQ(ra.ids.size(), std::min<std::uint64_t>(expected, 10000)) << c.q;
    EXPECT_EQ(ra.ids, rb.ids) << c.q;
    EXPECT_EQ(std::set<std::string>(ra.ids.begin(), ra.ids.end()).size(), ra.ids.size()) << c.q;
    // The Elasticsearch API's count agrees.
    HttpResult count = cb.Get("/_count?q=" + UrlEncode(c.q));
    ASSERT_EQ(count.status, 200) << count.body;
    EXPECT_EQ(json::parse(count.body).at("count").to_number<std::uint64_t>(), expected) << c.q;
  }
  // Paging with the cursor walks every hit once, newest first.
  std::vector<std::string> paged;
  std::string cursor;
  for (int page = 0; page < 100; ++page) {
    HttpResult r = ca.Get("/api/v1/search?limit=1000&q=*&cursor=" + cursor);
    ASSERT_EQ(r.status, 200) << r.body.substr(0, 300);
    const json::object o = json::parse(r.body).as_object();
    for (const json::value& h : o.at("hits").as_array())
      paged.emplace_back(h.at("_id").as_string());
    if (o.at("next_cursor").is_null()) break;
    cursor = std::string(o.at("next_cursor").as_string());
  }
  EXPECT_EQ(paged.size(), static_cast<std::size_t>(kAll));
  EXPECT_EQ(std::set<std::string>(paged.begin(), paged.end()).size(), paged.size());
  EXPECT_EQ(a.Stop(), 0) << a.ReadLog();
  EXPECT_EQ(b.Stop(), 0) << b.ReadLog();
}

// A shard down: writes are refused (503 items, nothing buffered without
// bound), searches fail with a reason (or, with --allow-partial, answer
// from the other shard flagged partial), /readyz says not ready. Once the
// shard is back, the client resends what failed (as Filebeat does) and
// every event is there exactly once, though the failed insert had written
// part of the batch to the live shard.
TEST(ClickHouseStoreTest, AShardDownRefusesThenRecoversWithNothingLostOrDuplicated) {
  ClickHouseCluster cluster(2);
  ASSERT_TRUE(cluster.Start()) << cluster.error();
  TempDir dir;
  TestServer server(
      dir.path() + "/data",
      {"--storage", cluster.StorageUrl("down") + "&timeout_ms=3000", "--no-detectors"});
  ASSERT_TRUE(server.Start()) << server.error() << server.ReadLog();
  TestServer partial_server(dir.path() + "/partial",
                            {"--storage", cluster.StorageUrl("down") + "&timeout_ms=3000",
                             "--no-detectors", "--allow-partial"});
  ASSERT_TRUE(partial_server.Start()) << partial_server.error() << partial_server.ReadLog();
  HttpClient client("127.0.0.1", server.port());
  const std::int64_t base_ms = 1795903200000;
  const std::map<std::string, std::string> headers{{"Content-Type", "application/x-ndjson"}};
  HttpResult r = client.Post("/_bulk", BulkBody(0, 500, base_ms), headers);
  ASSERT_EQ(r.status, 200);
  ASSERT_NE(r.body.find("\"errors\":false"), std::string::npos) << r.body.substr(0, 300);

  cluster.StopNode(1);
  const std::string failing = BulkBody(500, 1000, base_ms);
  r = client.Post("/_bulk", failing, headers);
  ASSERT_EQ(r.status, 200) << r.body.substr(0, 300);
  const json::object failed = json::parse(r.body).as_object();
  EXPECT_TRUE(failed.at("errors").as_bool());
  for (const json::value& item : failed.at("items").as_array()) {
    EXPECT_EQ(item.at("create").at("status").to_number<int>(), 503) << json::serialize(item);
  }
  const SearchAnswer during = Search(client, "*");
  EXPECT_EQ(during.status, 503) << during.body;
  EXPECT_NE(during.body.find("reason"), std::string::npos) << during.body;
  // With --allow-partial, the same search answers from the shard that is
  // up, and says so (here and in the Elasticsearch API's _shards).
  HttpClient lenient("127.0.0.1", partial_server.port());
  const SearchAnswer partial = Search(lenient, "*");
  ASSERT_EQ(partial.status, 200) << partial.body.substr(0, 300);
  EXPECT_NE(partial.body.find("\"partial\":true"), std::string::npos)
      << partial.body.substr(0, 300);
  // What the live shard holds: its part of the first batch, and whatever
  // the failed insert had written there before the other shard refused.
  const std::uint64_t on_live_shard =
      std::stoull(cluster.Query(0, "SELECT uniqExact(id) FROM down.events_local"));
  EXPECT_GT(on_live_shard, 0u);
  EXPECT_EQ(partial.total, on_live_shard);
  EXPECT_EQ(partial.ids.size(), partial.total);
  HttpResult es = lenient.Get("/_search?q=*");
  ASSERT_EQ(es.status, 200) << es.body.substr(0, 300);
  EXPECT_EQ(json::parse(es.body).at("_shards").at("failed").to_number<int>(), 1)
      << es.body.substr(0, 300);
  HttpResult ready = client.Get("/readyz");
  EXPECT_EQ(ready.status, 503) << ready.body;

  ASSERT_TRUE(cluster.StartNode(1)) << cluster.error();
  r = client.Post("/_bulk", failing, headers);
  ASSERT_EQ(r.status, 200);
  EXPECT_NE(r.body.find("\"errors\":false"), std::string::npos) << r.body.substr(0, 300);
  const SearchAnswer after = Search(client, "*");
  ASSERT_EQ(after.status, 200) << after.body.substr(0, 300);
  EXPECT_EQ(after.total, 1000u);
  EXPECT_EQ(after.ids.size(), 1000u);
  EXPECT_EQ(std::set<std::string>(after.ids.begin(), after.ids.end()).size(), 1000u);
  EXPECT_EQ(Search(client, "message:\"out of memory\"").total,
            Expected(1000, base_ms, [](const Event& e) {
              return e.message.find("out of memory") != std::string::npos;
            }));
  ready = client.Get("/readyz");
  EXPECT_EQ(ready.status, 200) << ready.body;
  const SearchAnswer whole = Search(lenient, "*");
  EXPECT_EQ(whole.total, 1000u);
  EXPECT_EQ(whole.body.find("\"partial\""), std::string::npos);
  EXPECT_EQ(server.Stop(), 0) << server.ReadLog();
  EXPECT_EQ(partial_server.Stop(), 0) << partial_server.ReadLog();
}

// Every line of an NDJSON body, parsed.
std::vector<json::value> NdjsonLines(const std::string& body) {
  std::vector<json::value> out;
  for (std::size_t at = 0; at < body.size();) {
    const std::size_t eol = std::min(body.find('\n', at), body.size());
    out.push_back(json::parse(std::string_view(body).substr(at, eol - at)));
    at = eol + 1;
  }
  return out;
}

// A batch sent twice with its _ids (as a client does that did not hear the
// first answer) is stored twice, with other keys, until ClickHouse merges
// the copies; merges are stopped here so that they stay. Reads find the
// keys first, one per id, then those keys' rows: searches, cursor pages and
// exports (whose pages the byte budget cuts, then read a run of keys at a
// time) all show each event once.
TEST(ClickHouseStoreTest, ABatchSentTwiceIsReadOnce) {
  ClickHouseCluster cluster(2);
  ASSERT_TRUE(cluster.Start()) << cluster.error();
  TempDir dir;
  TestServer server(dir.path() + "/data",
                    {"--storage", cluster.StorageUrl("twice"), "--no-detectors"});
  ASSERT_TRUE(server.Start()) << server.error() << server.ReadLog();
  for (int node = 0; node < cluster.nodes(); ++node) cluster.Query(node, "SYSTEM STOP MERGES");
  constexpr int kEvents = 1200;
  const std::int64_t base_ms = 1795903200000;
  std::string body;
  for (int i = 0; i < kEvents; ++i) {
    Event e = MakeEvent(i, base_ms);
    e.message += " " + std::string(2000, 'x');  // 2.4 MB: exports cut pages by bytes
    body += fmt::format("{{\"create\":{{\"_id\":\"ev-{}\"}}}}\n{}\n", i, Document(e));
  }
  HttpClient client("127.0.0.1", server.port());
  for (int send = 0; send < 2; ++send) {
    HttpResult r = client.Post("/_bulk", body, {{"Content-Type", "application/x-ndjson"}});
    ASSERT_EQ(r.status, 200) << r.body.substr(0, 300);
    ASSERT_NE(r.body.find("\"errors\":false"), std::string::npos) << r.body.substr(0, 300);
  }
  std::uint64_t rows = 0;
  for (int node = 0; node < cluster.nodes(); ++node)
    rows += std::stoull(cluster.Query(node, "SELECT count() FROM twice.events_local"));
  ASSERT_EQ(rows, 2u * kEvents);  // both copies are there

  std::set<std::string> all;
  for (int i = 0; i < kEvents; ++i) all.insert(fmt::format("ev-{}", i));
  const SearchAnswer whole = Search(client, "*");
  ASSERT_EQ(whole.status, 200) << whole.body.substr(0, 300);
  EXPECT_EQ(whole.total, static_cast<std::uint64_t>(kEvents));
  EXPECT_EQ(whole.ids.size(), static_cast<std::size_t>(kEvents));
  EXPECT_EQ(std::set<std::string>(whole.ids.begin(), whole.ids.end()), all);
  const SearchAnswer oom = Search(client, "\"out of memory\"");
  EXPECT_EQ(oom.ids.size(), Expected(kEvents, base_ms, [](const Event& e) {
              return e.message.find("out of memory") != std::string::npos;
            }));

  std::vector<std::string> paged;
  std::string cursor;
  for (int page = 0; page < 10; ++page) {
    HttpResult r = client.Get("/api/v1/search?limit=500&q=*&cursor=" + cursor);
    ASSERT_EQ(r.status, 200) << r.body.substr(0, 300);
    const json::object o = json::parse(r.body).as_object();
    for (const json::value& h : o.at("hits").as_array())
      paged.emplace_back(h.at("_id").as_string());
    if (o.at("next_cursor").is_null()) break;
    cursor = std::string(o.at("next_cursor").as_string());
  }
  EXPECT_EQ(paged, whole.ids);

  for (const char* order : {"desc", "asc"}) {
    HttpResult r = client.Get(std::string("/api/v1/export?order=") + order);
    ASSERT_EQ(r.status, 200) << r.body.substr(0, 300);
    std::vector<std::string> exported;
    for (const json::value& line : NdjsonLines(r.body))
      exported.emplace_back(line.at("_id").as_string());
    std::vector<std::string> expected = whole.ids;
    if (std::string_view(order) == "asc") std::reverse(expected.begin(), expected.end());
    EXPECT_EQ(exported, expected) << order;
  }
  for (int node = 0; node < cluster.nodes(); ++node) cluster.Query(node, "SYSTEM START MERGES");
  EXPECT_EQ(server.Stop(), 0) << server.ReadLog();
}

// An event is found by its id (context's anchor) whatever the id: one
// dashcam made (it leads with the event's time, which narrows the read), a
// client's of that very form but naming another time, and any other.
TEST(ClickHouseStoreTest, AnEventIsFoundByItsIdWhateverItsForm) {
  ClickHouseCluster cluster(2);
  ASSERT_TRUE(cluster.Start()) << cluster.error();
  TempDir dir;
  TestServer server(dir.path() + "/data",
                    {"--storage", cluster.StorageUrl("byid"), "--no-detectors"});
  ASSERT_TRUE(server.Start()) << server.error() << server.ReadLog();
  const std::int64_t base_ms = 1795903200000;
  // Events 0..9 without ids, 10 with an id shaped like dashcam's own but
  // naming a time a day later, 11 with an ordinary one.
  const std::string lookalike = fmt::format("{:011x}0123456789abcdef", base_ms + 86'400'000);
  std::string body = BulkBody(0, 10, base_ms);
  body += fmt::format("{{\"create\":{{\"_id\":\"{}\"}}}}\n{}\n", lookalike,
                      Document(MakeEvent(10, base_ms)));
  body += "{\"create\":{\"_id\":\"mine-11\"}}\n" + Document(MakeEvent(11, base_ms)) + "\n";
  HttpClient client("127.0.0.1", server.port());
  HttpResult r = client.Post("/_bulk", body, {{"Content-Type", "application/x-ndjson"}});
  ASSERT_EQ(r.status, 200) << r.body.substr(0, 300);
  const json::value answer = json::parse(r.body);
  std::vector<std::string> ids;
  for (const json::value& item : answer.at("items").as_array())
    ids.emplace_back(item.at("create").at("_id").as_string());
  ASSERT_EQ(ids.size(), 12u);
  EXPECT_EQ(ids[10], lookalike);
  EXPECT_EQ(ids[11], "mine-11");
  for (int i = 0; i < 12; ++i) {
    HttpResult c = client.Get("/api/v1/context?before=1&after=1&id=" + UrlEncode(ids[i]));
    ASSERT_EQ(c.status, 200) << ids[i] << ": " << c.body.substr(0, 300);
    const json::value context = json::parse(c.body);
    EXPECT_EQ(context.at("anchor").as_string(), ids[i]);
    bool found = false;
    for (const json::value& ev : context.at("events").as_array()) {
      if (!ev.as_object().contains("anchor")) continue;
      found = true;
      EXPECT_EQ(ev.at("_id").as_string(), ids[i]);
      EXPECT_EQ(ev.at("_source").at("message").as_string(), MakeEvent(i, base_ms).message)
          << ids[i];
    }
    EXPECT_TRUE(found) << c.body.substr(0, 300);
  }
  // An id of dashcam's form that no event has is still not found.
  HttpResult missing =
      client.Get(fmt::format("/api/v1/context?id={:011x}fedcba9876543210", base_ms));
  EXPECT_EQ(missing.status, 404) << missing.body.substr(0, 300);
  EXPECT_EQ(server.Stop(), 0) << server.ReadLog();
}

// The live tail works across instances: a tail opened on B shows the
// matching events written through A, once each, within a few seconds, and
// what B writes itself once too.
TEST(ClickHouseStoreTest, ALiveTailShowsWhatOtherInstancesWrite) {
  ClickHouseCluster cluster(2);
  ASSERT_TRUE(cluster.Start()) << cluster.error();
  TempDir dir;
  TestServer a(dir.path() + "/a", {"--storage", cluster.StorageUrl("tail"), "--no-detectors"});
  TestServer b(dir.path() + "/b", {"--storage", cluster.StorageUrl("tail"), "--no-detectors"});
  ASSERT_TRUE(a.Start()) << a.error() << a.ReadLog();
  ASSERT_TRUE(b.Start()) << b.error() << b.ReadLog();
  StreamClient tail(b.port());
  ASSERT_TRUE(tail.SendGet("/api/v1/tail?format=text&q=" + UrlEncode("\"out of memory\"")));
  ASSERT_TRUE(tail.ReadHeader(std::chrono::seconds(10)));
  ASSERT_EQ(tail.status(), 200) << tail.body();

  const std::int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                  std::chrono::system_clock::now().time_since_epoch())
                                  .count();
  // Events 0..499 through A, 500..999 through B: MakeEvent puts "out of
  // memory" in every 50th, from 7 on.
  HttpClient ca("127.0.0.1", a.port()), cb("127.0.0.1", b.port());
  const std::map<std::string, std::string> ndjson{{"Content-Type", "application/x-ndjson"}};
  HttpResult r = ca.Post("/_bulk", BulkBody(0, 500, now_ms - 600'000), ndjson);
  ASSERT_EQ(r.status, 200);
  r = cb.Post("/_bulk", BulkBody(500, 1000, now_ms - 600'000), ndjson);
  ASSERT_EQ(r.status, 200);
  const std::uint64_t expected = Expected(1000, now_ms - 600'000, [](const Event& e) {
    return e.message.find("out of memory") != std::string::npos;
  });
  ASSERT_EQ(expected, 20u);
  auto lines = [](const std::string& body) {
    return static_cast<std::uint64_t>(std::count(body.begin(), body.end(), '\n'));
  };
  EXPECT_TRUE(tail.ReadUntil([&](const std::string& b) { return lines(b) >= expected; },
                             std::chrono::seconds(15)))
      << tail.body();
  // Nothing twice: wait for a few more polls.
  tail.ReadSome(std::chrono::seconds(3));
  EXPECT_EQ(lines(tail.body()), expected) << tail.body();
  for (int i = 7; i < 1000; i += 50) {
    EXPECT_NE(tail.body().find(fmt::format("(step {})", i)), std::string::npos) << i;
  }
  tail.Close();
  EXPECT_EQ(a.Stop(), 0) << a.ReadLog();
  EXPECT_EQ(b.Stop(), 0) << b.ReadLog();
}

// A store in this process over `cluster`'s database `db`, without live tails.
Result<std::unique_ptr<storage::clickhouse::ClickHouseStore>> OpenStore(
    const ClickHouseCluster& cluster, const std::string& db, const Log& log) {
  auto options = storage::clickhouse::ParseClickHouseUrl(cluster.StorageUrl(db));
  if (!options.ok()) return options.status();
  storage::clickhouse::ChStoreOptions store_options;
  store_options.cluster = *options;
  store_options.tail_poll = std::chrono::milliseconds(0);
  return storage::clickhouse::ClickHouseStore::Open(std::move(store_options), log);
}

// The store itself, in this process: a client told its events are stored
// (the batch's callback) and then reading /api/v1/status sees them counted.
TEST(ClickHouseStoreTest, ABatchIsCountedBeforeItsCallbackRuns) {
  ClickHouseCluster cluster(2);
  ASSERT_TRUE(cluster.Start()) << cluster.error();
  const Log log = Log::Null();
  auto store = OpenStore(cluster, "counted", log);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  const std::int64_t base_ms = 1795903200000;
  std::uint64_t sent = 0;
  for (int batch = 1; batch <= 3; ++batch) {
    std::vector<storage::Record> records;
    for (int i = 0; i < batch * 10; ++i) {
      const Event e = MakeEvent(static_cast<int>(sent) + i, base_ms);
      storage::Record r;
      r.ts_ms = e.ts_ms;
      r.message = e.message;
      r.source = Document(e);
      records.push_back(std::move(r));
    }
    sent += records.size();
    std::promise<std::uint64_t> counted;
    (*store)->Append(std::move(records), [&](storage::AppendResult r) {
      EXPECT_TRUE(r.status.ok()) << r.status.ToString();
      counted.set_value((*store)->writer_stats().committed_events);
    });
    EXPECT_EQ(counted.get_future().get(), sent) << "batch " << batch;
  }
  (*store)->Close();
}

// Every event a scan of the store can return, page after page, the range
// narrowed past each page's last key as a caller does.
std::vector<storage::StoredEvent> ScanAll(storage::EventStore& store, const query::Node& q,
                                          storage::EventKey lo, storage::EventKey hi,
                                          bool ascending, std::size_t limit,
                                          std::span<const storage::KeyRange> ranges = {}) {
  std::vector<storage::StoredEvent> out;
  storage::ScanRequest scan;
  scan.query = &q;
  scan.lo = lo;
  scan.hi = hi;
  scan.ranges = ranges;
  scan.ascending = ascending;
  scan.limit = limit;
  for (int pages = 0; pages < 100 && scan.lo <= scan.hi; ++pages) {
    auto page = store.Scan(scan);
    EXPECT_TRUE(page.ok()) << page.status().ToString();
    if (!page.ok()) break;
    EXPECT_LE(page->events.size(), limit);
    for (storage::StoredEvent& e : page->events) out.push_back(std::move(e));
    if (!page->more || out.empty()) break;
    (ascending ? scan.lo : scan.hi) = out.back().key + (ascending ? 1 : -1);
  }
  return out;
}

// A scan finds every match across long empty stretches of time, once and in
// key order, whatever its page size, direction and key bounds. (A scan reads
// windows of time; one that has found nothing counts its matches further on
// to skip the empty ones, and one after sparse matches is sized from them.)
TEST(ClickHouseStoreTest, ScansCrossEmptyHoursAndReadEveryMatchOnce) {
  ClickHouseCluster cluster(2);
  ASSERT_TRUE(cluster.Start()) << cluster.error();
  const Log log = Log::Null();
  auto opened = OpenStore(cluster, "gaps", log);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  storage::EventStore& store = **opened;
  // Bunches within a millisecond, a minute on, hours apart and the next day.
  const std::int64_t base_ms = 1795903200000;
  const std::vector<std::int64_t> offsets = {0,          0,          0,          1,
                                             30'000,     7'200'000,  7'200'001,  32'400'000,
                                             93'600'000, 93'659'000, 93'659'000, 93'659'999};
  std::vector<storage::Record> records;
  for (std::size_t i = 0; i < offsets.size(); ++i) {
    storage::Record r;
    r.ts_ms = base_ms + offsets[i];
    r.message = fmt::format("{} line {}", i % 3 == 0 ? "needle" : "hay", i);
    r.doc_id = fmt::format("ev-{:02}", i);
    r.source = json::serialize(json::object{{"@timestamp", r.ts_ms}, {"message", r.message}});
    records.push_back(std::move(r));
  }
  std::promise<Status> stored;
  store.Append(std::move(records), [&](storage::AppendResult r) { stored.set_value(r.status); });
  const Status s = stored.get_future().get();
  ASSERT_TRUE(s.ok()) << s.ToString();

  const query::Node all{query::NodeKind::kMatchAll, 0, {}, {}, {}};
  query::Term needle_term;
  needle_term.field = "message";
  needle_term.text = "needle";
  const query::Node needle = query::Node::MakeTerm(needle_term, 0);
  query::Term none_term = needle_term;
  none_term.text = "absent";
  const query::Node none = query::Node::MakeTerm(none_term, 0);
  const storage::EventKey kAny = std::numeric_limits<storage::EventKey>::max();

  // The whole store, oldest first, read at once: what the other scans must agree with.
  const std::vector<storage::StoredEvent> every = ScanAll(store, all, 0, kAny, true, 1000);
  ASSERT_EQ(every.size(), offsets.size());
  for (std::size_t i = 1; i < every.size(); ++i) ASSERT_LT(every[i - 1].key, every[i].key);
  auto ids_of = [](const std::vector<storage::StoredEvent>& events) {
    std::vector<std::string> ids;
    for (const auto& e : events) ids.push_back(e.id);
    return ids;
  };
  // The ids of `every[first..last]` that `q` matches, in the scan's order.
  auto expected = [&](const query::Node* q, std::size_t first, std::size_t last, bool ascending) {
    std::vector<std::string> ids;
    for (std::size_t i = first; i <= last; ++i) {
      const std::size_t n = std::stoul(every[i].id.substr(3));
      if (q == &all || (q == &needle && n % 3 == 0)) ids.push_back(every[i].id);
    }
    if (!ascending) std::reverse(ids.begin(), ids.end());
    return ids;
  };
  const std::size_t last = every.size() - 1;
  for (const query::Node* q : {&all, &needle, &none}) {
    for (bool ascending : {true, false}) {
      for (std::size_t limit : {1, 2, 5, 1000}) {
        SCOPED_TRACE(fmt::format("{} {} limit {}",
                                 q == &all      ? "*"
                                 : q == &needle ? "needle"
                                                : "absent",
                                 ascending ? "ascending" : "descending", limit));
        EXPECT_EQ(ids_of(ScanAll(store, *q, 0, kAny, ascending, limit)),
                  expected(q, 0, last, ascending));
        // Key bounds inside a bunch's millisecond and hours from either end.
        EXPECT_EQ(ids_of(ScanAll(store, *q, every[1].key, every[last - 2].key, ascending, limit)),
                  expected(q, 1, last - 2, ascending));
        EXPECT_EQ(ids_of(ScanAll(store, *q, every[4].key, every[8].key, ascending, limit)),
                  expected(q, 4, 8, ascending));
        // Ranges (a live tail's new keys): a bunch, one event, and hours
        // apart; only what they hold, clipped to the bounds.
        const std::vector<storage::KeyRange> ranges = {{every[1].key, every[3].key},
                                                       {every[5].key, every[5].key},
                                                       {every[7].key, every[9].key}};
        std::vector<std::string> in_ranges;
        for (auto [a, b] : {std::pair{1, 3}, std::pair{5, 5}, std::pair{7, 9}}) {
          const auto part = expected(q, a, b, true);
          in_ranges.insert(in_ranges.end(), part.begin(), part.end());
        }
        if (!ascending) std::reverse(in_ranges.begin(), in_ranges.end());
        EXPECT_EQ(ids_of(ScanAll(store, *q, 0, kAny, ascending, limit, ranges)), in_ranges);
        std::erase_if(in_ranges, [&](const std::string& id) {
          return id == every[1].id || id == every[9].id;
        });
        EXPECT_EQ(ids_of(ScanAll(store, *q, every[2].key, every[8].key, ascending, limit, ranges)),
                  in_ranges);
      }
    }
  }
  (*opened)->Close();
}

// Retention drops a whole day on every shard: events of three days, with
// --retention-days 1, leave only yesterday's and today's on either node.
TEST(ClickHouseStoreTest, RetentionDropsADayOnEveryShard) {
  ClickHouseCluster cluster(2);
  ASSERT_TRUE(cluster.Start()) << cluster.error();
  TempDir dir;
  TestServer server(dir.path() + "/data",
                    {"--storage", cluster.StorageUrl("ret"), "--no-detectors", "--retention-days",
                     "1", "--test-retention-check-ms", "200"});
  ASSERT_TRUE(server.Start()) << server.error() << server.ReadLog();
  HttpClient client("127.0.0.1", server.port());
  auto now_ms = [] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  };
  const std::int64_t day_ms = 86'400'000;
  // The server's check must see the same `today` as the test: not within a
  // minute of midnight UTC.
  if (now_ms() % day_ms > day_ms - 60'000) {
    std::this_thread::sleep_for(std::chrono::milliseconds(day_ms - now_ms() % day_ms + 1000));
  }
  const std::int64_t today = now_ms() / day_ms;
  // 400 events on each of three days: three days ago (due), yesterday and
  // today (kept). The first events of a day start at its midnight.
  constexpr int kPerDay = 400;
  for (std::int64_t day : {today - 3, today - 1, today}) {
    HttpResult r = client.Post("/_bulk", BulkBody(0, kPerDay, day * day_ms),
                               {{"Content-Type", "application/x-ndjson"}});
    ASSERT_EQ(r.status, 200);
    ASSERT_NE(r.body.find("\"errors\":false"), std::string::npos) << r.body.substr(0, 300);
  }
  auto rows_of = [&](int node, std::int64_t day) {
    return std::stoull(cluster.Query(
        node, fmt::format("SELECT count() FROM ret.events_local WHERE toRelativeDayNum(ts) - "
                          "toRelativeDayNum(toDateTime(0, 'UTC')) = {}",
                          day)));
  };
  // The old day was on both shards before the drop or is being dropped:
  // wait for the check to take it.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < deadline &&
         rows_of(0, today - 3) + rows_of(1, today - 3) > 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  for (int node = 0; node < 2; ++node) {
    EXPECT_EQ(rows_of(node, today - 3), 0u) << "node " << node;
    EXPECT_GT(rows_of(node, today - 1), 0u) << "node " << node;
    EXPECT_GT(rows_of(node, today), 0u) << "node " << node;
  }
  EXPECT_EQ(rows_of(0, today - 1) + rows_of(1, today - 1), static_cast<std::uint64_t>(kPerDay));
  EXPECT_EQ(Search(client, "*").total, 2u * kPerDay);
  // The enforcer records the drop once every node has done it.
  json::object retention;
  for (int i = 0; i < 100; ++i) {
    HttpResult status = client.Get("/api/v1/status");
    ASSERT_EQ(status.status, 200);
    retention = json::parse(status.body).at("retention").as_object();
    if (retention.at("dropped_partitions").as_int64() > 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(retention.at("dropped_partitions").as_int64(), 1) << retention;
  EXPECT_EQ(retention.at("last_drop").at("events").as_int64(), kPerDay) << retention;
  EXPECT_EQ(server.Stop(), 0) << server.ReadLog();
}

}  // namespace
}  // namespace dashcam::testing::clickhouse_test
