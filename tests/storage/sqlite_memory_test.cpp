// Tests for storage/sqlite_memory.h with real database files: the page caches
// of several connections stay near a shared budget while every one reads a
// file larger than the budget (and grow to their own cache_size without one),
// the count goes back to zero as connections close, answers are the same,
// and SQLite's defaults return once the SqliteMemory is gone.
#include "storage/sqlite_memory.h"

#include <array>
#include <string>

#include <gtest/gtest.h>

#include "storage/sqlite_db.h"
#include "tests/common/test_server.h"

namespace dashcam::storage {
namespace {

constexpr int kRows = 12'000;
constexpr std::int64_t kTableBytes = std::int64_t{kRows} * 1000;  // randomblob(1000) a row
constexpr std::int64_t kMiB = 1 << 20;

class SqliteMemoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_.path() + "/pages.db";
    CreateFile();
    // This and earlier tests of the program used SQLite with its defaults;
    // each closed its connections, so SQLite may stop and be configured anew.
    ASSERT_EQ(sqlite3_shutdown(), SQLITE_OK);
  }

  void CreateFile() {
    Db db;
    ASSERT_TRUE(db.Open(path_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE).ok());
    // ~12 MiB of rows: three times what a connection's cache may hold below.
    ASSERT_TRUE(db.Exec("CREATE TABLE t(id INTEGER PRIMARY KEY, b BLOB);"
                        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n "
                        "WHERE i < " +
                        std::to_string(kRows) + ") INSERT INTO t SELECT i, randomblob(1000) FROM n")
                    .ok());
  }

  // Every row through `db`; returns the bytes read.
  static std::int64_t ReadAll(Db& db) {
    auto stmt = db.Prepare("SELECT sum(length(b)), count(*) FROM t");
    EXPECT_TRUE(stmt.ok());
    if (!stmt.ok() || stmt->Step() != SQLITE_ROW) return -1;
    EXPECT_EQ(stmt->Int(1), kRows);
    return stmt->Int(0);
  }

  // Three connections, 16 MiB of cache each, read the whole file; returns
  // the page caches' bytes while all three are open.
  std::uint64_t ReadWithThreeConnections(const SqliteMemory& memory) {
    std::array<Db, 3> dbs;
    for (Db& db : dbs) {
      EXPECT_TRUE(db.Open(path_, SQLITE_OPEN_READONLY).ok());
      EXPECT_TRUE(db.Exec("PRAGMA cache_size=-16384").ok());
      EXPECT_EQ(ReadAll(db), kTableBytes);
    }
    for (Db& db : dbs) EXPECT_EQ(ReadAll(db), kTableBytes);
    return memory.PageCacheBytes();
  }

  testing::TempDir dir_;
  std::string path_;
};

TEST_F(SqliteMemoryTest, CachesShareTheBudgetAndGrowToTheirOwnSizeWithout) {
  std::uint64_t bounded = 0, unbounded = 0;
  {
    auto memory = SqliteMemory::Configure(2 * kMiB);
    ASSERT_TRUE(memory.ok()) << memory.status().ToString();
    bounded = ReadWithThreeConnections(**memory);
    EXPECT_EQ((*memory)->PageCacheBytes(), 0u) << "every connection is closed";
  }
  {
    auto memory = SqliteMemory::Configure(0);
    ASSERT_TRUE(memory.ok()) << memory.status().ToString();
    unbounded = ReadWithThreeConnections(**memory);
    EXPECT_EQ((*memory)->PageCacheBytes(), 0u);
  }
  // At most 16 pages a connection past the budget.
  EXPECT_LE(bounded, 2 * kMiB + 3 * 16 * 4500);
  EXPECT_GT(bounded, kMiB);
  // Each connection keeps the whole file (~12 MiB) in its 16 MiB.
  EXPECT_GT(unbounded, 3 * 11 * kMiB);
}

TEST_F(SqliteMemoryTest, OnlyOneAtATimeAndDefaultsReturnAfterIt) {
  {
    auto memory = SqliteMemory::Configure(kMiB);
    ASSERT_TRUE(memory.ok());
    auto second = SqliteMemory::Configure(kMiB);
    EXPECT_FALSE(second.ok());
    Db db;
    ASSERT_TRUE(db.Open(path_, SQLITE_OPEN_READONLY).ok());
    EXPECT_EQ(ReadAll(db), kTableBytes);
    EXPECT_GT((*memory)->PageCacheBytes(), 0u);
  }
  // SQLite's own statistics are on again once it restarts.
  Db db;
  ASSERT_TRUE(db.Open(path_, SQLITE_OPEN_READONLY).ok());
  EXPECT_EQ(ReadAll(db), kTableBytes);
  EXPECT_GT(sqlite3_memory_used(), 0);
}

}  // namespace
}  // namespace dashcam::storage
