// Tests for storage/fts_membership.h: dc_fts_has answers as `key IN (the
// matches)` whatever order a scan asks in (newest first, oldest first,
// random, a statement run again), reads only as far as a scan that stops
// early goes, and fails the statement with the nested one's error.
#include "storage/fts_membership.h"

#include <cstdint>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "storage/sqlite_db.h"

namespace dashcam::storage {
namespace {

constexpr const char* kAll = "SELECT rowid FROM fts WHERE fts MATCH ?1";

class FtsMembershipTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(db_.Open(":memory:", SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE).ok());
    ASSERT_TRUE(RegisterFtsMembership(db_.get()).ok());
    // counted(): 1, counting the rows the walks read.
    ASSERT_EQ(sqlite3_create_function_v2(
                  db_.get(), "counted", 0, SQLITE_UTF8, &walked_,
                  [](sqlite3_context* ctx, int, sqlite3_value**) {
                    ++*static_cast<int*>(sqlite3_user_data(ctx));
                    sqlite3_result_int(ctx, 1);
                  },
                  nullptr, nullptr, nullptr),
              SQLITE_OK);
    ASSERT_TRUE(db_.Exec("CREATE VIRTUAL TABLE fts USING fts5(body);"
                         "CREATE TABLE events(key INTEGER PRIMARY KEY)")
                    .ok());
    // Keys far apart, as event keys are; words in random subsets.
    std::mt19937 rng(3);
    const char* words[] = {"alpha", "beta", "gamma", "delta"};
    ASSERT_TRUE(db_.Exec("BEGIN").ok());
    for (int i = 0; i < 3000; ++i) {
      const std::int64_t key = (std::int64_t{1} << 40) + std::int64_t{i} * 1048576 + rng() % 1000;
      std::string body;
      for (const char* w : words) {
        if (rng() % 3 == 0) body += std::string(w) + " ";
      }
      ASSERT_TRUE(db_.Exec(fmt::format("INSERT INTO events(key) VALUES({0});"
                                       "INSERT INTO fts(rowid, body) VALUES({0}, '{1}')",
                                       key, body))
                      .ok());
    }
    ASSERT_TRUE(db_.Exec("COMMIT").ok());
  }

  std::set<std::int64_t> Matches(const std::string& fts) {
    std::set<std::int64_t> out;
    auto stmt = db_.Prepare(kAll);
    EXPECT_TRUE(stmt.ok());
    stmt->Bind(1, fts);
    while (stmt->Step() == SQLITE_ROW) out.insert(stmt->Int(0));
    return out;
  }

  // dc_fts_has over ?1, walking with `desc` and `asc` (counted) unless empty.
  static std::string Has(bool walk = true) {
    const std::string desc =
        walk ? fmt::format("{} AND rowid <= ?2 AND counted() ORDER BY rowid DESC", kAll) : "";
    const std::string asc =
        walk ? fmt::format("{} AND rowid >= ?2 AND counted() ORDER BY rowid", kAll) : "";
    return fmt::format("dc_fts_has(key, ?1, '{}', '{}', '{}')", desc, asc, kAll);
  }

  // Steps `stmt` (key, dc_fts_has) to its end, checking each answer against
  // `want`; the rows it gave.
  static int StepChecking(Stmt& stmt, const std::set<std::int64_t>& want) {
    int rows = 0, rc = SQLITE_OK;
    while ((rc = stmt.Step()) == SQLITE_ROW) {
      ++rows;
      EXPECT_EQ(stmt.Int(1) != 0, want.count(stmt.Int(0)) == 1) << stmt.Int(0);
    }
    EXPECT_EQ(rc, SQLITE_DONE);
    return rows;
  }

  Db db_;
  int walked_ = 0;
};

TEST_F(FtsMembershipTest, AnswersAsInWhateverOrderTheScanAsks) {
  for (const std::string fts : {"alpha", "alpha AND beta", "gamma NOT delta", "bet*", "zeta"}) {
    const std::set<std::int64_t> want = Matches(fts);
    for (const bool walk : {true, false}) {
      for (const char* order : {"key DESC", "key", "random()", "key % 7, key"}) {
        SCOPED_TRACE(fmt::format("{} walk={} order by {}", fts, walk, order));
        auto stmt =
            db_.Prepare(fmt::format("SELECT key, {} FROM events ORDER BY {}", Has(walk), order));
        ASSERT_TRUE(stmt.ok()) << stmt.status().ToString();
        // Twice: a statement run again starts its walk afresh.
        for (int run = 0; run < 2; ++run) {
          stmt->Reset();
          stmt->Bind(1, fts);
          EXPECT_EQ(StepChecking(*stmt, want), 3000);
        }
      }
    }
  }
}

TEST_F(FtsMembershipTest, AScanThatStopsEarlyWalksOnlyAsFarAsItGoes) {
  const std::set<std::int64_t> alpha = Matches("alpha");
  ASSERT_GT(alpha.size(), 800u);
  for (const char* order : {"key DESC", "key"}) {
    SCOPED_TRACE(order);
    walked_ = 0;
    auto stmt = db_.Prepare(
        fmt::format("SELECT count(*) FROM (SELECT 1 FROM events WHERE NOT {} ORDER BY {} LIMIT 10)",
                    Has(), order));
    ASSERT_TRUE(stmt.ok()) << stmt.status().ToString();
    stmt->Bind(1, std::string("alpha"));
    ASSERT_EQ(stmt->Step(), SQLITE_ROW);
    EXPECT_EQ(stmt->Int(0), 10);
    // Ten events without alpha lie among some tens with it; the oldest
    // first scan paid for one seek the other way first.
    EXPECT_LT(walked_, 60);
    EXPECT_GT(walked_, 0);
  }
  // A whole scan reads each match once: the walk lasts the statement's run
  // (were it made afresh at every row, each row would read one at least).
  for (const char* order : {"key DESC", "key"}) {
    SCOPED_TRACE(order);
    walked_ = 0;
    auto stmt = db_.Prepare(fmt::format(
        "SELECT count(*) FROM (SELECT 1 FROM events WHERE {} ORDER BY {})", Has(), order));
    ASSERT_TRUE(stmt.ok()) << stmt.status().ToString();
    stmt->Bind(1, std::string("alpha"));
    ASSERT_EQ(stmt->Step(), SQLITE_ROW);
    EXPECT_EQ(stmt->Int(0), static_cast<std::int64_t>(alpha.size()));
    EXPECT_LE(walked_, static_cast<int>(alpha.size()) + 2);
  }
}

TEST_F(FtsMembershipTest, ScatteredKeysAreSoughtNotSteppedTo) {
  const std::set<std::int64_t> alpha = Matches("alpha");
  ASSERT_GT(alpha.size(), 900u);
  // The first, middle and last events: ~500 matches lie between each two.
  auto keys = db_.Prepare("SELECT key FROM events ORDER BY key");
  ASSERT_TRUE(keys.ok());
  std::vector<std::int64_t> all;
  while (keys->Step() == SQLITE_ROW) all.push_back(keys->Int(0));
  const std::string picked =
      fmt::format("{}, {}, {}", all.front(), all[all.size() / 2], all.back());
  for (const char* order : {"key DESC", "key"}) {
    SCOPED_TRACE(order);
    walked_ = 0;
    auto stmt = db_.Prepare(fmt::format("SELECT key, {} FROM events WHERE key IN ({}) ORDER BY {}",
                                        Has(), picked, order));
    ASSERT_TRUE(stmt.ok()) << stmt.status().ToString();
    stmt->Bind(1, std::string("alpha"));
    EXPECT_EQ(StepChecking(*stmt, alpha), 3);
    EXPECT_LT(walked_, 700) << "of " << alpha.size();
  }
}

// Counts the runs of the nested statements (a seek, or the whole set read)
// while it lives.
class NestedRuns {
 public:
  explicit NestedRuns(sqlite3* db) : db_(db) {
    sqlite3_trace_v2(db_, SQLITE_TRACE_STMT, &NestedRuns::Trace, this);
  }
  ~NestedRuns() { sqlite3_trace_v2(db_, 0, nullptr, nullptr); }
  int count() const { return count_; }

 private:
  static int Trace(unsigned, void* self, void* stmt, void*) {
    const std::string sql = sqlite3_sql(static_cast<sqlite3_stmt*>(stmt));
    if (sql.rfind("SELECT rowid FROM fts", 0) == 0) ++static_cast<NestedRuns*>(self)->count_;
    return 0;
  }
  sqlite3* db_;
  int count_ = 0;
};

// FTS5 merges a prefix's doclists at every seek: such an expression is
// walked once from the top, however the scan asks, and only as far down as
// it goes.
TEST_F(FtsMembershipTest, APrefixTermIsNotSoughtAgainAndAgain) {
  auto keys = db_.Prepare("SELECT key FROM events ORDER BY key");
  ASSERT_TRUE(keys.ok());
  std::vector<std::int64_t> all;
  while (keys->Step() == SQLITE_ROW) all.push_back(keys->Int(0));
  const std::string picked = fmt::format("{}, {}, {}, {}", all.front(), all[all.size() / 3],
                                         all[2 * all.size() / 3], all.back());
  struct Case {
    std::string fts, order;
    int most_runs;
  };
  for (const Case& c : std::vector<Case>{{"bet*", "key DESC", 1},
                                         {"bet*", "key", 1},
                                         {"bet* OR gam*", "key", 1},
                                         {"bet*", "key % 2, key", 1},
                                         {"bet*", "key % 2, key DESC", 1},
                                         // Without a prefix, each far key is sought.
                                         {"beta", "key DESC", 4}}) {
    SCOPED_TRACE(c.fts + " order by " + c.order);
    const std::set<std::int64_t> want = Matches(c.fts);
    auto stmt = db_.Prepare(fmt::format("SELECT key, {} FROM events WHERE key IN ({}) ORDER BY {}",
                                        Has(), picked, c.order));
    ASSERT_TRUE(stmt.ok()) << stmt.status().ToString();
    stmt->Bind(1, c.fts);
    NestedRuns runs(db_.get());
    EXPECT_EQ(StepChecking(*stmt, want), 4);
    EXPECT_LE(runs.count(), c.most_runs);
    EXPECT_GT(runs.count(), 0);
  }
  // Newest first, ten events without a match lie among some tens with one.
  walked_ = 0;
  auto stmt = db_.Prepare(fmt::format(
      "SELECT count(*) FROM (SELECT 1 FROM events WHERE NOT {} ORDER BY key DESC LIMIT 10)",
      Has()));
  ASSERT_TRUE(stmt.ok()) << stmt.status().ToString();
  stmt->Bind(1, std::string("alph*"));
  ASSERT_EQ(stmt->Step(), SQLITE_ROW);
  EXPECT_EQ(stmt->Int(0), 10);
  EXPECT_LT(walked_, 60);
}

TEST_F(FtsMembershipTest, TheNestedStatementsErrorFailsTheStatement) {
  auto stmt = db_.Prepare(fmt::format("SELECT count(*) FROM events WHERE {}", Has()));
  ASSERT_TRUE(stmt.ok());
  stmt->Bind(1, std::string("alpha AND"));
  EXPECT_EQ(stmt->Step(), SQLITE_ERROR);
  EXPECT_NE(std::string(sqlite3_errmsg(db_.get())).find("fts5: syntax error"), std::string::npos)
      << sqlite3_errmsg(db_.get());
  stmt->Reset();

  // An interrupt in a walk (the deadline's) is the statement's.
  sqlite3_progress_handler(
      db_.get(), 100, [](void*) { return 1; }, nullptr);
  stmt->Bind(1, std::string("alpha"));
  EXPECT_EQ(stmt->Step(), SQLITE_INTERRUPT);
  sqlite3_progress_handler(db_.get(), 0, nullptr, nullptr);
}

}  // namespace
}  // namespace dashcam::storage
