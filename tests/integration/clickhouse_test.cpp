// The ClickHouse backend's foundation against a real local cluster (issue
// 10): two clickhouse-server nodes as a 2-shard cluster
// (tests/common/clickhouse_cluster.h), `dashcam ch-init` run by the real
// binary, and ChClient with the literals every query will be built from.
#include <sys/wait.h>

#include <cstdio>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "storage/clickhouse/ch_client.h"
#include "storage/clickhouse/ch_literal.h"
#include "tests/common/clickhouse_cluster.h"
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
        R"("message":"step {}","fields":"{{}}","source":"{{}}"}})"
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

}  // namespace
}  // namespace dashcam::testing::clickhouse_test
