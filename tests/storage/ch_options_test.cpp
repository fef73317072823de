// Tests for the ClickHouse backend's pieces that need no server
// (storage/clickhouse): the --storage URL, SQL literals, error codes. The
// server side is tests/integration/clickhouse_test.cpp.
#include <gtest/gtest.h>

#include "storage/clickhouse/ch_client.h"
#include "storage/clickhouse/ch_literal.h"
#include "storage/clickhouse/ch_options.h"

namespace dashcam::storage::clickhouse {
namespace {

TEST(ChOptionsTest, ParsesHostsDatabaseClusterAndTimeout) {
  auto o = ParseClickHouseUrl(
      "clickhouse://ch1.example:8124,10.0.0.2,[::1]:9000/"
      "logs_db?cluster=gpu_fleet&timeout_ms=2500");
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  ASSERT_EQ(o->hosts.size(), 3u);
  EXPECT_EQ(o->hosts[0].host, "ch1.example");
  EXPECT_EQ(o->hosts[0].port, 8124);
  EXPECT_EQ(o->hosts[1].host, "10.0.0.2");
  EXPECT_EQ(o->hosts[1].port, 8123);  // the HTTP default
  EXPECT_EQ(o->hosts[2].host, "::1");
  EXPECT_EQ(o->hosts[2].port, 9000);
  EXPECT_EQ(o->database, "logs_db");
  EXPECT_EQ(o->cluster, "gpu_fleet");
  EXPECT_EQ(o->timeout.count(), 2500);
  // Percent-decoding; the database's default.
  o = ParseClickHouseUrl("clickhouse://h?cluster=my%20cluster");
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->database, "dashcam");
  EXPECT_EQ(o->cluster, "my cluster");
  EXPECT_TRUE(IsClickHouseUrl("clickhouse://h"));
  EXPECT_FALSE(IsClickHouseUrl("./data"));
}

TEST(ChOptionsTest, RefusesWhatItCannotUseNamingWhy) {
  const std::pair<const char*, const char*> bad[] = {
      {"http://h:8123/db?cluster=c", "expected clickhouse://"},
      {"clickhouse://h:8123/db", "cluster=NAME is required"},
      {"clickhouse://h:port/db?cluster=c", "bad port 'port'"},
      {"clickhouse://h:0/db?cluster=c", "bad port '0'"},
      {"clickhouse://h:70000/db?cluster=c", "bad port"},
      {"clickhouse://h,,g/db?cluster=c", "a host is empty"},
      {"clickhouse://[::1/db?cluster=c", "lacks its ']'"},
      {"clickhouse://h/a/b?cluster=c", "one database"},
      {"clickhouse://h/db?cluster=c&user=x", "unknown parameter 'user'"},
      {"clickhouse://h/db?cluster=c&timeout_ms=soon", "bad timeout_ms"},
      {"clickhouse://h/db?cluster=c&timeout_ms=3600001", "bad timeout_ms"},
  };
  for (const auto& [url, why] : bad) {
    auto o = ParseClickHouseUrl(url);
    ASSERT_FALSE(o.ok()) << url;
    EXPECT_EQ(o.status().code(), StatusCode::kInvalidArgument) << url;
    EXPECT_NE(o.status().message().find(why), std::string::npos) << o.status().message();
  }
}

TEST(ChLiteralTest, EscapesQuotesBackslashesAndControlBytes) {
  EXPECT_EQ(ChString("plain"), "'plain'");
  EXPECT_EQ(ChString("it's"), "'it\\'s'");
  EXPECT_EQ(ChString("a\\b"), "'a\\\\b'");
  EXPECT_EQ(ChString(std::string("x\0y\n\x7f", 5)), "'x\\x00y\\x0A\\x7F'");
  EXPECT_EQ(ChString("显存 \xff"), "'显存 \xff'");  // bytes >= 0x80 as they are
  EXPECT_EQ(ChString("'); DROP TABLE t; --"), "'\\'); DROP TABLE t; --'");
  EXPECT_EQ(ChIdentifier("events"), "`events`");
  EXPECT_EQ(ChIdentifier("a`b"), "`a\\`b`");
}

TEST(ChClientTest, ErrorCodeIsTheBodysPrefix) {
  EXPECT_EQ(ChErrorCode("Code: 62, e.displayText() = DB::Exception: Syntax error"), 62);
  EXPECT_EQ(ChErrorCode("Code: 279, e.displayText() = DB::NetException: All connection tries"),
            279);
  EXPECT_EQ(ChErrorCode("502 Bad Gateway"), -1);
  EXPECT_EQ(ChErrorCode("Code: x"), -1);
}

}  // namespace
}  // namespace dashcam::storage::clickhouse
