// Retention, compaction and damaged partitions, against the real binary: day
// partitions dropped by age and by size (at startup, periodically, and right
// after a commit), never today's or a future day's; queries running across a
// drop; past days compacted once quiet; garbage, truncated and foreign files
// in the data directory quarantined at startup.
#include <sqlite3.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <boost/json.hpp>

#include "storage/partition_compaction.h"
#include "storage/time_format.h"
#include "tests/common/http_client.h"
#include "tests/common/test_server.h"
#include "tests/common/wait_for.h"

namespace dashcam::testing::retention_test {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;

std::int64_t Today() {
  return DayOf(std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::system_clock::now().time_since_epoch())
                   .count());
}

std::string PartitionPath(const std::string& dir, std::int64_t day) {
  return (fs::path(dir) / (FormatDay(day) + ".db")).string();
}

// Stores `n` events at noon of `day`, tagged `tag`; expects every one created.
void Ingest(HttpClient& client, std::int64_t day, int n, const std::string& tag,
            int per_request = 2000) {
  for (int begin = 0; begin < n; begin += per_request) {
    std::string body;
    const int end = std::min(n, begin + per_request);
    for (int i = begin; i < end; ++i) {
      body += "{\"create\":{}}\n";
      json::object doc{{"@timestamp", FormatRfc3339Ms(DayStart(day) + 43'200'000 + i)},
                       {"message", "retention " + tag + " event " + std::to_string(i) +
                                       " loss 0.25 step " + std::to_string(i * 7)},
                       {"tag", tag}};
      body += json::serialize(doc) + "\n";
    }
    auto res = client.Post("/_bulk", body, {{"Content-Type", "application/x-ndjson"}});
    ASSERT_EQ(res.status, 200) << res.body.substr(0, 300);
    ASSERT_EQ(json::parse(res.body).at("errors").as_bool(), false) << res.body.substr(0, 300);
  }
}

// How many events carry `tag` (exact count).
std::int64_t CountTag(HttpClient& client, const std::string& tag) {
  auto res =
      client.Get("/api/v1/search?q=" + UrlEncode("tag:" + tag) + "&limit=0&track_total_hits=true");
  EXPECT_EQ(res.status, 200) << res.body;
  if (res.status != 200) return -1;
  return json::parse(res.body).at("total").as_int64();
}

std::uint64_t MetricValue(HttpClient& client, const std::string& name) {
  const std::string text = client.Get("/metrics").body;
  const auto at = text.find("\n" + name + " ");
  if (at == std::string::npos) return 0;
  return std::stoull(text.substr(at + name.size() + 2));
}

// Whether `n` drops are done within 5 s. A drop moves the files aside first;
// its log line and then its counters follow, so files gone is not enough.
bool WaitForDrops(HttpClient& client, std::uint64_t n) {
  return WaitFor(
      [&] { return MetricValue(client, "dashcam_retention_dropped_partitions_total") >= n; },
      std::chrono::seconds(5));
}

// The log lines of `event` (as JSON objects) since the server last started
// (servers on one data directory share a log file).
std::vector<json::object> DropLines(const TestServer& server, const std::string& event) {
  std::vector<json::object> out;
  std::istringstream in(server.ReadLog());
  std::string line;
  while (std::getline(in, line)) {
    if (line.find("\"event\":\"starting\"") != std::string::npos) out.clear();
    if (line.find("\"event\":\"" + event + "\"") == std::string::npos) continue;
    out.push_back(json::parse(line).as_object());
  }
  return out;
}

std::string Str(const json::object& o, const char* key) {
  return std::string(o.at(key).as_string());
}

class RetentionTest : public ::testing::Test {
 protected:
  TempDir tmp_;
  std::string data_ = (fs::path(tmp_.path()) / "data").string();
};

TEST_F(RetentionTest, ByAgeDropsOldDaysPeriodicallyAndKeepsTheRest) {
  TestServer server(data_, {"--retention-days", "2", "--test-retention-check-ms", "100"});
  ASSERT_TRUE(server.Start()) << server.error();
  HttpClient client("127.0.0.1", server.port());
  const std::int64_t today = Today();
  // Day D goes at the start of day D + 3: today-3 and older go.
  const std::vector<std::pair<std::int64_t, std::string>> days = {
      {today - 5, "d5"}, {today - 3, "d3"}, {today - 2, "d2"},
      {today - 1, "d1"}, {today, "d0"},     {today + 1, "future"}};
  for (const auto& [day, tag] : days) Ingest(client, day, 50, tag);
  ASSERT_TRUE(WaitFor([&] { return !fs::exists(PartitionPath(data_, today - 3)); },
                      std::chrono::seconds(5)));
  ASSERT_TRUE(WaitFor([&] { return !fs::exists(PartitionPath(data_, today - 5)); },
                      std::chrono::seconds(5)));
  ASSERT_TRUE(WaitForDrops(client, 2)) << server.ReadLog();
  EXPECT_EQ(CountTag(client, "d5"), 0);
  EXPECT_EQ(CountTag(client, "d3"), 0);
  for (const char* kept : {"d2", "d1", "d0", "future"}) EXPECT_EQ(CountTag(client, kept), 50);
  for (std::int64_t day : {today - 2, today - 1, today, today + 1}) {
    EXPECT_TRUE(fs::exists(PartitionPath(data_, day))) << FormatDay(day);
  }
  EXPECT_EQ(MetricValue(client, "dashcam_retention_dropped_partitions_total"), 2u);
  EXPECT_GT(MetricValue(client, "dashcam_retention_dropped_bytes_total"), 0u);
  const auto drops = DropLines(server, "retention_drop");
  ASSERT_EQ(drops.size(), 2u) << server.ReadLog();
  std::set<std::string> dropped;
  for (const auto& d : drops) {
    dropped.insert(Str(d, "partition"));
    EXPECT_EQ(Str(d, "reason"), "age");
    EXPECT_EQ(d.at("events").as_int64(), 50);
    EXPECT_GT(d.at("bytes").as_int64(), 0);
  }
  EXPECT_EQ(dropped, (std::set<std::string>{FormatDay(today - 5), FormatDay(today - 3)}));
  // /api/v1/status says what was dropped and what goes next: the oldest
  // remaining day, at the start of tomorrow (today - 2 + 3).
  auto status = client.Get("/api/v1/status");
  ASSERT_EQ(status.status, 200) << status.body;
  const json::object retention = json::parse(status.body).at("retention").as_object();
  EXPECT_EQ(retention.at("max_age_days").as_int64(), 2) << retention;
  EXPECT_TRUE(retention.at("max_disk_bytes").is_null()) << retention;
  EXPECT_EQ(retention.at("dropped_partitions").as_int64(), 2) << retention;
  EXPECT_EQ(retention.at("last_drop").at("reason").as_string(), "age") << retention;
  EXPECT_EQ(retention.at("next_drop").at("day").as_string(), FormatDay(today - 2)) << retention;
  EXPECT_EQ(retention.at("next_drop").at("reason").as_string(), "age") << retention;
  EXPECT_EQ(retention.at("next_drop").at("due").as_string(),
            FormatRfc3339Ms((today + 1) * 86'400'000))
      << retention;
  // Events for a dropped day are still accepted; the partition they make goes
  // at the next check.
  Ingest(client, today - 4, 10, "late");
  ASSERT_TRUE(WaitFor([&] { return CountTag(client, "late") == 0; }, std::chrono::seconds(5)));
  EXPECT_EQ(server.Stop(), 0);
}

TEST_F(RetentionTest, DropsAtStartupBeforeServing) {
  const std::int64_t today = Today();
  {
    TestServer server(data_);
    ASSERT_TRUE(server.Start()) << server.error();
    HttpClient client("127.0.0.1", server.port());
    Ingest(client, today - 30, 20, "old");
    Ingest(client, today - 1, 20, "recent");
    ASSERT_EQ(server.Stop(), 0);
  }
  ASSERT_TRUE(fs::exists(PartitionPath(data_, today - 30)));
  // The default check period is a minute: only the startup check can drop.
  TestServer server(data_, {"--retention-days", "7"});
  ASSERT_TRUE(server.Start()) << server.error();
  EXPECT_FALSE(fs::exists(PartitionPath(data_, today - 30)));
  HttpClient client("127.0.0.1", server.port());
  EXPECT_EQ(CountTag(client, "old"), 0);
  EXPECT_EQ(CountTag(client, "recent"), 20);
  EXPECT_EQ(MetricValue(client, "dashcam_retention_dropped_partitions_total"), 1u);
  EXPECT_EQ(server.Stop(), 0);
}

TEST_F(RetentionTest, BySizeDropsOldestFirstRightAfterTheCommitNeverToday) {
  // A one-byte limit and the default (one minute) period: the drops that
  // follow each commit come from the commit, and only past days can go.
  TestServer server(data_, {"--max-disk-bytes", "1"});
  ASSERT_TRUE(server.Start()) << server.error();
  HttpClient client("127.0.0.1", server.port());
  const std::int64_t today = Today();
  Ingest(client, today, 30, "today");
  Ingest(client, today + 2, 30, "future");
  Ingest(client, today - 2, 30, "old2");
  ASSERT_TRUE(WaitFor([&] { return !fs::exists(PartitionPath(data_, today - 2)); },
                      std::chrono::seconds(5)));
  Ingest(client, today - 1, 30, "old1");
  ASSERT_TRUE(WaitFor([&] { return !fs::exists(PartitionPath(data_, today - 1)); },
                      std::chrono::seconds(5)));
  ASSERT_TRUE(WaitForDrops(client, 2)) << server.ReadLog();
  EXPECT_EQ(CountTag(client, "today"), 30);
  EXPECT_EQ(CountTag(client, "future"), 30);
  EXPECT_EQ(CountTag(client, "old1"), 0);
  const auto drops = DropLines(server, "retention_drop");
  ASSERT_EQ(drops.size(), 2u) << server.ReadLog();
  EXPECT_EQ(Str(drops[0], "partition"), FormatDay(today - 2));
  EXPECT_EQ(Str(drops[1], "partition"), FormatDay(today - 1));
  for (const auto& d : drops) EXPECT_EQ(Str(d, "reason"), "disk_bytes");
  EXPECT_EQ(server.Stop(), 0);
}

TEST_F(RetentionTest, BySizeKeepsWhatFitsOldestGoesFirst) {
  const std::int64_t today = Today();
  {
    TestServer server(data_);
    ASSERT_TRUE(server.Start()) << server.error();
    HttpClient client("127.0.0.1", server.port());
    for (int ago : {3, 2, 1}) Ingest(client, today - ago, 500, "ago" + std::to_string(ago));
    ASSERT_EQ(server.Stop(), 0);
  }
  std::uint64_t total = 0, oldest = fs::file_size(PartitionPath(data_, today - 3));
  for (int ago : {3, 2, 1}) total += fs::file_size(PartitionPath(data_, today - ago));
  // Over the limit by less than the oldest partition: exactly that one goes.
  TestServer server(data_, {"--max-disk-bytes", std::to_string(total - oldest / 2)});
  ASSERT_TRUE(server.Start()) << server.error();
  HttpClient client("127.0.0.1", server.port());
  EXPECT_FALSE(fs::exists(PartitionPath(data_, today - 3)));
  EXPECT_EQ(CountTag(client, "ago3"), 0);
  EXPECT_EQ(CountTag(client, "ago2"), 500);
  EXPECT_EQ(CountTag(client, "ago1"), 500);
  EXPECT_EQ(server.Stop(), 0);
}

// Searches keep running while the partition they read is dropped: each one
// completes (200) or fails cleanly (503 with a JSON reason); afterwards the
// dropped files are gone from the disk, not held open by idle connections.
TEST_F(RetentionTest, SearchesAcrossADropCompleteOrFailCleanly) {
  const std::int64_t today = Today();
  const int kEvents = 20000;
  {
    TestServer server(data_);
    ASSERT_TRUE(server.Start()) << server.error();
    HttpClient client("127.0.0.1", server.port());
    Ingest(client, today - 5, kEvents, "victim");
    ASSERT_EQ(server.Stop(), 0);
  }
  const std::uint64_t victim = fs::file_size(PartitionPath(data_, today - 5));
  // Fits alone (with room for its -wal and -shm); with today's twice as large
  // it does not, and today's is never dropped.
  TestServer server(data_, {"--max-disk-bytes", std::to_string(victim * 3 / 2 + (1 << 20))});
  ASSERT_TRUE(server.Start()) << server.error();
  HttpClient client("127.0.0.1", server.port());
  ASSERT_EQ(CountTag(client, "victim"), kEvents);

  std::atomic<bool> stop{false};
  std::atomic<int> ok{0}, unavailable{0}, other{0};
  std::string other_body;
  std::vector<std::thread> readers;
  for (int t = 0; t < 2; ++t) {
    readers.emplace_back([&, t] {
      HttpClient c("127.0.0.1", server.port());
      const std::string q = t == 0 ? "retention AND loss" : "tag:victim OR tag:today";
      while (!stop) {
        auto res = c.Get("/api/v1/search?q=" + UrlEncode(q) + "&from=0&limit=50");
        if (res.status == 200) {
          ++ok;
        } else if (res.status == 503 &&
                   json::parse(res.body).at("error").at("reason").as_string().size() > 0) {
          ++unavailable;
        } else {
          ++other;
          other_body = std::to_string(res.status) + " " + res.body;
        }
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  Ingest(client, today, kEvents * 2, "today");
  ASSERT_TRUE(WaitFor([&] { return !fs::exists(PartitionPath(data_, today - 5)); },
                      std::chrono::seconds(10)))
      << server.ReadLog();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  stop = true;
  for (auto& t : readers) t.join();
  EXPECT_EQ(other.load(), 0) << other_body;
  EXPECT_GT(ok.load(), 0);
  EXPECT_EQ(CountTag(client, "victim"), 0);
  EXPECT_EQ(CountTag(client, "today"), kEvents * 2);
  // Every connection on the dropped files has been closed: they are unlinked.
  const fs::path trash = fs::path(data_) / ".dropped";
  EXPECT_TRUE(
      WaitFor([&] { return !fs::exists(trash) || fs::is_empty(trash); }, std::chrono::seconds(5)));
  std::printf("searches across the drop: %d complete, %d unavailable\n", ok.load(),
              unavailable.load());
  EXPECT_EQ(server.Stop(), 0);
}

// --- damaged partitions at startup ---

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

void MakeForeignDatabase(const std::string& path) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "CREATE TABLE notes(x TEXT); INSERT INTO notes VALUES('mine')",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
}

// PRAGMA `name` of the partition file at `path`, read-only.
std::int64_t FilePragma(const std::string& path, const std::string& name) {
  sqlite3* db = nullptr;
  std::int64_t out = -1;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    sqlite3_stmt* stmt = nullptr;
    const std::string sql = "PRAGMA " + name;
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr) == SQLITE_OK &&
        sqlite3_step(stmt) == SQLITE_ROW) {
      out = sqlite3_column_int64(stmt, 0);
    }
    sqlite3_finalize(stmt);
  }
  sqlite3_close(db);
  return out;
}

// Whether a partition file's FTS5 index is one segment; nullopt when the
// file cannot be read.
std::optional<bool> FtsFullyMerged(const std::string& path) {
  storage::Db db;
  if (!storage::OpenForCompaction(path, db).ok()) return std::nullopt;
  auto merged = storage::FtsFullyMerged(db);
  if (!merged.ok()) return std::nullopt;
  return *merged;
}

TEST_F(RetentionTest, PastDaysAreCompactedOnceQuietAndAnswerAlike) {
  TestServer server(data_, {"--compact-after", "1s", "--test-compaction-check-ms", "50"});
  ASSERT_TRUE(server.Start()) << server.error();
  HttpClient client("127.0.0.1", server.port());
  const std::int64_t today = Today();
  // 48 commits: segments that compaction replaces with one, its events
  // numbered (rowid_layout.h), freeing the pages it then gives back, as at
  // the end of a real day.
  Ingest(client, today - 1, 4800, "past", 100);
  Ingest(client, today, 300, "today", 100);
  const std::string past = PartitionPath(data_, today - 1);
  const std::string q = "/api/v1/search?q=" + UrlEncode("\"loss 0.25\" AND tag:past") + "&limit=50";
  const std::string before = client.Get(q).body;
  ASSERT_EQ(json::parse(before).at("total").as_int64(), 4800) << before;
  const auto compacted = [&] {
    auto res = client.Get("/api/v1/status");
    return res.status == 200 &&
           json::parse(res.body).at("compaction").at("compacted_partitions").as_int64() >= 1;
  };
  ASSERT_TRUE(WaitFor(compacted, std::chrono::seconds(30))) << client.Get("/api/v1/status").body;
  // Today's partition is never compacted, and an unchanged one not twice.
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  const json::object c =
      json::parse(client.Get("/api/v1/status").body).at("compaction").as_object();
  EXPECT_TRUE(c.at("enabled").as_bool()) << c;
  EXPECT_EQ(c.at("quiet_period_ms").as_int64(), 1000) << c;
  EXPECT_EQ(c.at("compacted_partitions").as_int64(), 1) << c;
  const json::object& last = c.at("last").as_object();
  EXPECT_EQ(last.at("day").as_string(), FormatDay(today - 1)) << c;
  EXPECT_TRUE(last.at("returns_pages").as_bool()) << c;
  EXPECT_EQ(last.at("reindexed_events").as_int64(), 4800) << c;
  EXPECT_EQ(FtsFullyMerged(past), std::optional<bool>(true));
  EXPECT_GT(last.at("vacuum_steps").as_int64(), 0) << c;
  EXPECT_LT(last.at("bytes_after").as_int64(), last.at("bytes_before").as_int64()) << c;
  EXPECT_EQ(c.at("returned_bytes").as_int64(),
            last.at("bytes_before").as_int64() - last.at("bytes_after").as_int64())
      << c;
  EXPECT_EQ(MetricValue(client, "dashcam_compacted_partitions_total"), 1u);
  EXPECT_EQ(FilePragma(past, "freelist_count"), 0);
  EXPECT_GT(FilePragma(PartitionPath(data_, today), "page_count"), 0);
  const auto lines = DropLines(server, "partition_compacted");
  ASSERT_EQ(lines.size(), 1u) << server.ReadLog();
  EXPECT_EQ(Str(lines[0], "partition"), FormatDay(today - 1));
  // The same answers, byte for byte but the time it took.
  json::object b = json::parse(before).as_object(), a = json::parse(client.Get(q).body).as_object();
  b.erase("took_ms");
  a.erase("took_ms");
  EXPECT_EQ(json::serialize(a), json::serialize(b));
  EXPECT_EQ(CountTag(client, "today"), 300);
  EXPECT_EQ(server.Stop(), 0);
}

TEST_F(RetentionTest, CompactionEncodesDocumentsAnewOnlyWhereTheWriterCompresses) {
  for (const char* compress_after : {"2000", "0"}) {
    fs::remove_all(data_);
    TestServer server(
        data_, {"--compact-after", "1s", "--test-compaction-check-ms", "50", "--compress-after",
                compress_after, "--test-day-dictionary-events", "1000"});
    ASSERT_TRUE(server.Start()) << server.error();
    HttpClient client("127.0.0.1", server.port());
    Ingest(client, Today() - 1, 1600, "past", 100);
    const auto status = [&] {
      return json::parse(client.Get("/api/v1/status").body).at("compaction").as_object();
    };
    const auto compacted = [&] { return status().at("compacted_partitions").as_int64() >= 1; };
    ASSERT_TRUE(WaitFor(compacted, std::chrono::seconds(30))) << status();
    const json::object c = status();
    const json::object& last = c.at("last").as_object();
    EXPECT_EQ(last.at("reindexed_events").as_int64(), 1600) << compress_after << c;
    EXPECT_EQ(last.at("documents_encoded").as_int64(), compress_after[0] == '0' ? 0 : 1600)
        << compress_after << c;
    EXPECT_EQ(CountTag(client, "past"), 1600);
    EXPECT_EQ(server.Stop(), 0);
  }
}

TEST_F(RetentionTest, CompactionCanBeTurnedOff) {
  TestServer server(data_, {"--compact-after", "off", "--test-compaction-check-ms", "50"});
  ASSERT_TRUE(server.Start()) << server.error();
  HttpClient client("127.0.0.1", server.port());
  Ingest(client, Today() - 1, 1600, "past", 100);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const json::object c =
      json::parse(client.Get("/api/v1/status").body).at("compaction").as_object();
  EXPECT_FALSE(c.at("enabled").as_bool()) << c;
  EXPECT_EQ(c.at("compacted_partitions").as_int64(), 0) << c;
  EXPECT_EQ(FtsFullyMerged(PartitionPath(data_, Today() - 1)), std::optional<bool>(false));
  EXPECT_EQ(server.Stop(), 0);
}

TEST_F(RetentionTest, DamagedPartitionsAreQuarantinedAndTheRestServed) {
  const std::int64_t today = Today();
  const std::int64_t healthy = today - 10, truncated = today - 11, garbage = today - 12,
                     foreign = today - 13;
  {
    TestServer server(data_);
    ASSERT_TRUE(server.Start()) << server.error();
    HttpClient client("127.0.0.1", server.port());
    Ingest(client, healthy, 100, "healthy");
    Ingest(client, truncated, 3000, "truncated");
    ASSERT_EQ(server.Stop(), 0);
  }
  const std::string truncated_path = PartitionPath(data_, truncated);
  const auto full = fs::file_size(truncated_path);
  fs::resize_file(truncated_path, full / 2);
  std::string noise(10000, '\0');
  for (std::size_t i = 0; i < noise.size(); ++i) noise[i] = static_cast<char>(i * 131 + 7);
  WriteFile(PartitionPath(data_, garbage), noise);
  MakeForeignDatabase(PartitionPath(data_, foreign));

  TestServer server(data_);
  ASSERT_TRUE(server.Start()) << server.error() << server.ReadLog();
  HttpClient client("127.0.0.1", server.port());
  const auto lines = DropLines(server, "partition_quarantined");
  ASSERT_EQ(lines.size(), 3u) << server.ReadLog();
  std::set<std::string> names;
  for (const auto& l : lines) {
    names.insert(Str(l, "partition"));
    EXPECT_FALSE(Str(l, "error").empty());
    EXPECT_TRUE(fs::exists(Str(l, "moved_to"))) << Str(l, "moved_to");
  }
  EXPECT_EQ(names,
            (std::set<std::string>{FormatDay(truncated), FormatDay(garbage), FormatDay(foreign)}));
  for (std::int64_t day : {truncated, garbage, foreign}) {
    EXPECT_FALSE(fs::exists(PartitionPath(data_, day))) << FormatDay(day);
  }
  // The foreign database is kept intact for its owner.
  std::size_t quarantined = 0;
  for (const auto& e : fs::directory_iterator(fs::path(data_) / "quarantine")) {
    (void)e;
    ++quarantined;
  }
  EXPECT_GE(quarantined, 3u);
  EXPECT_EQ(CountTag(client, "healthy"), 100);
  EXPECT_EQ(CountTag(client, "truncated"), 0);
  // Ingest into a quarantined day makes a fresh partition.
  Ingest(client, truncated, 5, "fresh");
  EXPECT_EQ(CountTag(client, "fresh"), 5);
  EXPECT_TRUE(fs::exists(truncated_path));
  EXPECT_EQ(server.Stop(), 0);
  // And the fresh one is healthy on the next start.
  TestServer again(data_);
  ASSERT_TRUE(again.Start()) << again.error();
  HttpClient c2("127.0.0.1", again.port());
  EXPECT_EQ(CountTag(c2, "fresh"), 5);
  EXPECT_TRUE(DropLines(again, "partition_quarantined").empty()) << again.ReadLog();
  EXPECT_EQ(again.Stop(), 0);
}

}  // namespace
}  // namespace dashcam::testing::retention_test
