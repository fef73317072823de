// Tests for storage/stored_names.h against real partition files: a new file
// stores each event's level and index name as an id of `names` and reads
// them back as text, a file from before keeps writing text, and a name added
// by a transaction that rolled back is added again.
#include "storage/stored_names.h"

#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "storage/partition.h"
#include "storage/sqlite_db.h"
#include "tests/common/test_server.h"

namespace dashcam::storage {
namespace {

constexpr std::int64_t kNamesDay = 20786;  // 2026-11-29
constexpr TimeMs kNamesT0 = kNamesDay * kMsPerDay + 3'600'000;

using Rows = std::vector<std::vector<std::string>>;

class StoredNamesTest : public ::testing::Test {
 protected:
  std::string Path() const { return dir_.path() + "/day.db"; }
  std::string QuotaPath() const { return dir_.path() + "/quota"; }

  std::unique_ptr<PartitionWriter> OpenWriter() {
    PartitionOptions o;
    o.sync = SyncMode::kNormal;
    o.compression.sample_events = 0;  // documents as they are: the quota test needs their bytes
    o.test_quota_file = QuotaPath();
    auto w = PartitionWriter::Open(Path(), kNamesDay, o);
    EXPECT_TRUE(w.ok()) << w.status().ToString();
    return w.ok() ? std::move(*w) : nullptr;
  }

  Record Event(std::string level, std::string index, std::string source = "{}") {
    Record r;
    r.ts_ms = kNamesT0 + next_++;
    r.level = std::move(level);
    r.index = std::move(index);
    r.message = "line";
    r.source = std::move(source);
    return r;
  }

  Status Write(PartitionWriter& w, const std::vector<Record>& records) {
    std::vector<const Record*> ptrs;
    for (const Record& r : records) ptrs.push_back(&r);
    std::vector<RecordOutcome> outcomes(records.size());
    std::vector<EventKey> keys(records.size());
    return w.Write(ptrs, outcomes, keys);
  }

  // Every row of `sql` on a reader's connection (dc_name registered), NULL
  // as "<null>".
  Rows Query(const std::string& sql) {
    auto reader = PartitionReader::Open(Path(), 1024);
    EXPECT_TRUE(reader.ok()) << reader.status().ToString();
    Rows out;
    if (!reader.ok()) return out;
    auto stmt = (*reader)->Statement(sql);
    EXPECT_TRUE(stmt.ok()) << stmt.status().ToString();
    if (!stmt.ok()) return out;
    int rc;
    while ((rc = (*stmt)->Step()) == SQLITE_ROW) {
      std::vector<std::string> row;
      for (int c = 0; c < sqlite3_column_count((*stmt)->get()); ++c) {
        row.push_back((*stmt)->IsNull(c) ? "<null>" : std::string((*stmt)->Text(c)));
      }
      out.push_back(std::move(row));
    }
    EXPECT_EQ(rc, SQLITE_DONE) << sqlite3_errmsg((*reader)->db());
    (*stmt)->Reset();
    return out;
  }

  dashcam::testing::TempDir dir_;
  TimeMs next_ = 0;
};

TEST_F(StoredNamesTest, ANewFileStoresNamesOnceAndReadsThemAsText) {
  auto w = OpenWriter();
  ASSERT_TRUE(w);
  ASSERT_TRUE(Write(*w, {Event("INFO", "filebeat-8.17.0"), Event("ERROR", "filebeat-8.17.0"),
                         Event("", "logs"), Event("INFO", "")})
                  .ok());
  ASSERT_TRUE(Write(*w, {Event("ERROR", "logs"), Event("WARN", "filebeat-8.17.0")}).ok());
  w.reset();

  EXPECT_EQ(Query("SELECT typeof(level), typeof(idx) FROM events ORDER BY key"),
            (Rows{{"integer", "integer"},
                  {"integer", "integer"},
                  {"integer", "integer"},
                  {"integer", "null"},
                  {"integer", "integer"},
                  {"integer", "integer"}}));
  // Each distinct name once, whichever column uses it.
  EXPECT_EQ(Query("SELECT name FROM names ORDER BY name"),
            (Rows{{""}, {"ERROR"}, {"INFO"}, {"WARN"}, {"filebeat-8.17.0"}, {"logs"}}));
  EXPECT_EQ(Query("SELECT dc_name(level), dc_name(idx) FROM events ORDER BY key"),
            (Rows{{"INFO", "filebeat-8.17.0"},
                  {"ERROR", "filebeat-8.17.0"},
                  {"", "logs"},
                  {"INFO", "<null>"},
                  {"ERROR", "logs"},
                  {"WARN", "filebeat-8.17.0"}}));
  EXPECT_EQ(Query("SELECT value FROM meta WHERE key = 'names'"), (Rows{{"level,idx"}}));
}

// A file created before version 8 has TEXT columns, which would turn an id
// into text: it goes on storing the names themselves.
TEST_F(StoredNamesTest, AFileFromBeforeKeepsItsNamesAsText) {
  OpenWriter().reset();
  {
    Db db;
    ASSERT_TRUE(db.Open(Path(), SQLITE_OPEN_READWRITE).ok());
    ASSERT_TRUE(db.Exec("DROP TABLE events; DROP TABLE names; DELETE FROM meta WHERE key = 'names';"
                        "CREATE TABLE events(key INTEGER PRIMARY KEY, level TEXT, idx TEXT, "
                        "doc_id TEXT, source BLOB NOT NULL);"
                        "CREATE UNIQUE INDEX events_doc_id ON events(doc_id) WHERE doc_id IS NOT "
                        "NULL;"
                        "INSERT INTO events VALUES(1, 'DEBUG', 'old', NULL, '{}');"
                        "PRAGMA user_version=7")
                    .ok());
  }
  auto w = OpenWriter();
  ASSERT_TRUE(w);
  ASSERT_TRUE(Write(*w, {Event("INFO", "filebeat-8.17.0"), Event("", "")}).ok());
  w.reset();
  EXPECT_EQ(Query("SELECT typeof(level), typeof(idx), dc_name(level), dc_name(idx) FROM events "
                  "ORDER BY key"),
            (Rows{{"text", "text", "DEBUG", "old"},
                  {"text", "text", "INFO", "filebeat-8.17.0"},
                  {"text", "null", "", "<null>"}}));
  EXPECT_EQ(Query("SELECT count(*) FROM names"), (Rows{{"0"}}));
  EXPECT_EQ(Query("SELECT user_version FROM pragma_user_version"),
            (Rows{{std::to_string(kPartitionSchemaVersion)}}));
}

// The ids a rolled-back transaction gave out are free again: the next new
// name may get the same one, so the writer must not keep them.
TEST_F(StoredNamesTest, ANameAddedByARolledBackWriteIsAddedAgain) {
  auto w = OpenWriter();
  ASSERT_TRUE(w);
  ASSERT_TRUE(Write(*w, {Event("INFO", "logs")}).ok());

  // Cap the file where it is; 2 MB of documents that do not compress cannot
  // fit, so the transaction that names "fresh" fails and rolls back.
  { std::ofstream(QuotaPath()) << std::filesystem::file_size(Path()); }
  std::mt19937_64 rng(7);
  std::vector<Record> big;
  big.push_back(Event("INFO", "fresh"));
  for (int i = 0; i < 500; ++i) {
    std::string doc = "{\"blob\":\"";
    for (int j = 0; j < 4000; ++j) doc += static_cast<char>('a' + rng() % 26);
    big.push_back(Event("INFO", "logs", doc + "\"}"));
  }
  const Status full = Write(*w, big);
  ASSERT_FALSE(full.ok());
  EXPECT_EQ(full.code(), StatusCode::kNoSpace) << full.ToString();

  std::filesystem::remove(QuotaPath());
  ASSERT_TRUE(Write(*w, {Event("INFO", "other"), Event("INFO", "fresh")}).ok());
  w.reset();
  EXPECT_EQ(Query("SELECT dc_name(idx) FROM events ORDER BY key"),
            (Rows{{"logs"}, {"other"}, {"fresh"}}));
}

}  // namespace
}  // namespace dashcam::storage
