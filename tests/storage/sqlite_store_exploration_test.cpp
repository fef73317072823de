// Tests for SqliteStore's exploration queries (storage/exploration.h)
// against real SQLite partitions: the level counts kept by the writer and
// their upgrade from schema version 1, histograms past the discovery limit,
// neighbours across partitions, the extent; and that the answers read from
// Scan pages (scan_exploration.h, the ClickHouse store's) equal them.
#include <algorithm>
#include <array>
#include <future>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "storage/document_reader.h"
#include "storage/log.h"
#include "storage/partition.h"
#include "storage/scan_exploration.h"
#include "storage/sqlite_db.h"
#include "storage/sqlite_store.h"
#include "tests/common/test_server.h"

namespace dashcam::storage {
namespace {

constexpr std::int64_t kExplorationDay = 20786;  // 2026-11-29
constexpr TimeMs kExplorationT0 = kExplorationDay * kMsPerDay + 10 * 3'600'000;

using Rows = std::map<std::tuple<std::int64_t, std::string>, std::int64_t>;

class SqliteStoreExplorationTest : public ::testing::Test {
 protected:
  void SetUp() override { Open(); }

  void Open() {
    store_.reset();
    SqliteStoreOptions opts;
    opts.data_dir = DataDir();
    opts.writer.partition.sync = SyncMode::kNormal;
    auto s = SqliteStore::Open(std::move(opts), log_);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(*s);
  }
  std::string DataDir() const { return dir_.path() + "/data"; }
  std::string PartitionPath(std::int64_t day) const {
    return DataDir() + "/" + FormatDay(day) + ".db";
  }

  // An event whose source is real JSON with these members ("message" first).
  static Record Ev(TimeMs ts, std::string level, std::string members = "") {
    Record r;
    r.ts_ms = ts;
    r.level = std::move(level);
    r.message = "m";
    r.index = "logs";
    r.source = "{\"message\":\"m\"" + (members.empty() ? "" : "," + members) + "}";
    // Searchable fields as ingest would give them.
    DocumentReader reader;
    DocumentView view;
    EXPECT_TRUE(reader.ReadUnpadded(r.source, view).ok()) << r.source;
    r.fields = std::move(view.fields);
    return r;
  }

  AppendResult Append(std::vector<Record> records) {
    std::promise<AppendResult> done;
    auto result = done.get_future();
    store_->Append(std::move(records), [&](AppendResult r) { done.set_value(std::move(r)); });
    return result.get();
  }
  void MustAppend(std::vector<Record> records) {
    AppendResult r = Append(std::move(records));
    ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  }

  // Rows of `sql` (unit, level, n) in the partition file of `day`.
  Rows Query(std::int64_t day, const std::string& sql) {
    Db db;
    EXPECT_TRUE(db.Open(PartitionPath(day), SQLITE_OPEN_READONLY).ok());
    EXPECT_TRUE(RegisterNameFunction(db.get()).ok());
    auto stmt = db.Prepare(sql);
    EXPECT_TRUE(stmt.ok()) << stmt.status().ToString();
    Rows out;
    while (stmt.ok() && stmt->Step() == SQLITE_ROW) {
      out[{stmt->Int(0), std::string(stmt->Text(1))}] = stmt->Int(2);
    }
    return out;
  }

  // Sets the level column of every events row of the first day to the first
  // event's, with the store closed: what reads the rows then differs from
  // what the level counts and the index say.
  void GiveEveryRowTheFirstLevel() {
    store_.reset();
    {
      Db db;
      ASSERT_TRUE(db.Open(PartitionPath(kExplorationDay), SQLITE_OPEN_READWRITE).ok());
      ASSERT_TRUE(
          db.Exec("UPDATE events SET level = (SELECT level FROM events ORDER BY key LIMIT 1)")
              .ok());
    }
    Open();
  }

  Result<HistogramTable> Histogram(const query::Node& q, TimeMs from, TimeMs to,
                                   HistogramSpec spec) {
    SearchRequest req;
    req.query = &q;
    req.from = from;
    req.to = to;
    return store_->Histogram(req, spec);
  }

  dashcam::testing::TempDir dir_;
  Log log_ = Log::Null();
  std::unique_ptr<SqliteStore> store_;
};

// The level counts must equal a count of the events table after inserts,
// duplicates and replacements (which move an event to another second,
// minute and level).
TEST_F(SqliteStoreExplorationTest, LevelCountsFollowTheEventsTable) {
  std::vector<Record> batch;
  for (int i = 0; i < 200; ++i) {
    batch.push_back(Ev(kExplorationT0 + i * 700, i % 5 == 0 ? "ERROR" : (i % 2 ? "INFO" : "")));
  }
  Record doc = Ev(kExplorationT0 + 1'000, "INFO");
  doc.doc_id = "d1";
  doc.op = WriteOp::kIndex;
  batch.push_back(doc);
  MustAppend(std::move(batch));
  doc.ts_ms = kExplorationT0 + 125'000;  // another minute, another level
  doc.level = "WARN";
  Record dup = doc;
  dup.op = WriteOp::kCreate;  // a duplicate: changes nothing
  MustAppend({doc, dup});
  Record again = Ev(kExplorationT0 + 61'000, "DEBUG");
  again.doc_id = "d1";
  again.op = WriteOp::kIndex;
  MustAppend({again});

  const Rows seconds =
      Query(kExplorationDay, "SELECT second, level, n FROM level_seconds WHERE n != 0");
  const Rows minutes =
      Query(kExplorationDay, "SELECT minute, level, n FROM level_minutes WHERE n != 0");
  EXPECT_EQ(seconds, Query(kExplorationDay,
                           "SELECT (key >> 20) / 1000, dc_name(level), count(*) FROM events "
                           "GROUP BY 1, 2"));
  EXPECT_EQ(minutes, Query(kExplorationDay,
                           "SELECT (key >> 20) / 60000, dc_name(level), count(*) FROM events "
                           "GROUP BY 1, 2"));
  std::int64_t total = 0;
  for (const auto& [k, n] : minutes) total += n;
  EXPECT_EQ(total, 201);
  EXPECT_EQ(minutes.count({(kExplorationT0 + 61'000) / 60'000, "DEBUG"}), 1u);
  EXPECT_EQ(minutes.count({(kExplorationT0 + 125'000) / 60'000, "WARN"}), 0u);
}

TEST_F(SqliteStoreExplorationTest, VersionOnePartitionsAreUpgradedWhenOpened) {
  std::vector<Record> batch;
  for (int i = 0; i < 90; ++i)
    batch.push_back(Ev(kExplorationT0 + i * 2'000, i % 3 ? "INFO" : "WARN"));
  MustAppend(std::move(batch));
  store_->Close();
  store_.reset();
  {
    Db db;
    ASSERT_TRUE(db.Open(PartitionPath(kExplorationDay), SQLITE_OPEN_READWRITE).ok());
    ASSERT_TRUE(db.Exec("DROP TABLE level_seconds; DROP TABLE level_minutes; "
                        "PRAGMA user_version=1")
                    .ok());
  }
  Open();
  const Rows minutes = Query(kExplorationDay, "SELECT minute, level, n FROM level_minutes");
  EXPECT_EQ(minutes, Query(kExplorationDay,
                           "SELECT (key >> 20) / 60000, dc_name(level), count(*) FROM events "
                           "GROUP BY 1, 2"));
  EXPECT_EQ(Query(kExplorationDay, "SELECT 0, '', user_version FROM pragma_user_version"),
            (Rows{{{0, ""}, kPartitionSchemaVersion}}));
  HistogramSpec spec;
  spec.interval = 60'000;
  spec.split_field = kLevelSplit;
  auto h = Histogram(query::Node::MatchAll(), kExplorationT0, kExplorationT0 + 3 * 60'000, spec);
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  EXPECT_EQ(h->keys, (std::vector<std::string>{"INFO", "WARN"}));
  ASSERT_EQ(h->buckets.size(), 3u);
  EXPECT_EQ(h->buckets[0].total.count, 30u);
  EXPECT_EQ(h->buckets[0].by_key[1].count, 10u);
}

// A split by level (the web page's histogram) reads the events' level
// column, never their documents: it answers even when every document is
// unreadable, which a split by a document field cannot.
TEST_F(SqliteStoreExplorationTest, ASplitByLevelReadsNoDocument) {
  std::vector<Record> batch;
  for (int i = 0; i < 90; ++i) {
    batch.push_back(
        Ev(kExplorationT0 + i * 2'000, i % 3 ? "INFO" : "WARN", R"("host":{"name":"a"})"));
  }
  MustAppend(std::move(batch));
  {
    Db db;
    ASSERT_TRUE(db.Open(PartitionPath(kExplorationDay), SQLITE_OPEN_READWRITE).ok());
    // A zstd frame with no dictionary to read it by: dc_source fails on it.
    ASSERT_TRUE(db.Exec("UPDATE events SET source = x'28B52FFD0000'").ok());
  }
  const query::Node m = query::Node::MakeTerm(query::Term{"", "m", false, false}, 0);
  HistogramSpec spec;
  spec.interval = 60'000;
  spec.split_field = kLevelSplit;
  auto h = Histogram(m, kExplorationT0, kExplorationT0 + 3 * 60'000, spec);
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  EXPECT_EQ(h->keys, (std::vector<std::string>{"INFO", "WARN"}));
  ASSERT_EQ(h->buckets.size(), 3u);
  EXPECT_EQ(h->buckets[0].total.count, 30u);
  EXPECT_EQ(h->buckets[0].by_key[1].count, 10u);
  spec.split_field = "host.name";
  EXPECT_FALSE(Histogram(m, kExplorationT0, kExplorationT0 + 3 * 60'000, spec).ok());
}

// Meta level_terms (partition.h) says "either" while every event's level is
// its one log.level string, its one level string or both, of one token,
// distinct when folded, or it has no level and neither field; the first
// event that breaks that turns it off for good.
TEST_F(SqliteStoreExplorationTest, LevelTermsStayExactUntilAnEventBreaksTheRule) {
  auto level_terms = [&](std::int64_t day) {
    Rows rows = Query(day, "SELECT 0, value, 0 FROM meta WHERE key = 'level_terms'");
    return rows.empty() ? std::string("absent") : std::get<1>(rows.begin()->first);
  };
  auto at = [](int day) { return kExplorationT0 + day * kMsPerDay; };
  MustAppend({Ev(at(0), "INFO", R"("log":{"level":"INFO"})"),
              Ev(at(0) + 1, "WARN", R"("log":{"level":"WARN"},"level":"WARN")"), Ev(at(0) + 2, ""),
              Ev(at(0) + 3, "ERROR", R"("level":"ERROR")"),
              Ev(at(0) + 4, "DEBUG", R"("log.level":"DEBUG")")});
  EXPECT_EQ(level_terms(kExplorationDay), "either");
  Open();  // the levels are read again
  MustAppend({Ev(at(0) + 5, "INFO", R"("level":"INFO")")});
  EXPECT_EQ(level_terms(kExplorationDay), "either");
  MustAppend({Ev(at(0) + 6, "info", R"("log":{"level":"info"})")});  // INFO's term
  EXPECT_EQ(level_terms(kExplorationDay), "no");
  MustAppend({Ev(at(0) + 7, "INFO", R"("log":{"level":"INFO"})")});
  EXPECT_EQ(level_terms(kExplorationDay), "no");  // for good

  // A day each: a `level` that is not log.level's, of two tokens, an array
  // in either field, a level without its field, a numeric `level` (its
  // number term meets text terms), and the same after a reopen.
  const std::vector<Record> breaking = {
      Ev(at(1), "WARN", R"("log":{"level":"WARN"},"level":"x")"),
      Ev(at(2), "very bad", R"("log":{"level":"very bad"})"),
      Ev(at(3), "INFO", R"("log":{"level":["INFO","WARN"]})"),
      Ev(at(4), "INFO", R"("level":["INFO","INFO"])"),
      Ev(at(5), "", R"("log":{"level":"INFO"})"),
      Ev(at(6), "INFO"),
      Ev(at(7), "", R"("level":30)"),
  };
  for (std::size_t i = 0; i < breaking.size(); ++i) {
    const std::int64_t day = kExplorationDay + 1 + static_cast<std::int64_t>(i);
    MustAppend({Ev(at(1 + static_cast<int>(i)) - 1, "INFO", R"("log":{"level":"INFO"})")});
    ASSERT_EQ(level_terms(day), "either") << i;
    MustAppend({breaking[i]});
    EXPECT_EQ(level_terms(day), "no") << i;
  }
  const std::int64_t last = kExplorationDay + 1 + static_cast<std::int64_t>(breaking.size());
  MustAppend({Ev(DayStart(last), "Info", R"("level":"Info")")});
  Open();
  MustAppend({Ev(DayStart(last) + 1, "INFO", R"("log":{"level":"INFO"})")});
  EXPECT_EQ(level_terms(last), "no");
}

// A file written at version 13 says "exact": log.level alone tells the
// level, so an event whose level comes from `level` turns it off.
TEST_F(SqliteStoreExplorationTest, LevelTermsOfVersion13TrustLogLevelAlone) {
  MustAppend({Ev(kExplorationT0, "INFO", R"("log":{"level":"INFO"})")});
  store_.reset();
  {
    Db db;
    ASSERT_TRUE(db.Open(PartitionPath(kExplorationDay), SQLITE_OPEN_READWRITE).ok());
    ASSERT_TRUE(
        db.Exec("UPDATE meta SET value = 'exact' WHERE key = 'level_terms'; PRAGMA user_version=13")
            .ok());
  }
  Open();
  auto level_terms = [&] {
    Rows rows = Query(kExplorationDay, "SELECT 0, value, 0 FROM meta WHERE key = 'level_terms'");
    return rows.empty() ? std::string("absent") : std::get<1>(rows.begin()->first);
  };
  MustAppend({Ev(kExplorationT0 + 1, "WARN", R"("log":{"level":"WARN"},"level":"x")")});
  EXPECT_EQ(level_terms(), "exact");  // `level` is not looked at
  MustAppend({Ev(kExplorationT0 + 2, "ERROR", R"("level":"ERROR")")});
  EXPECT_EQ(level_terms(), "no");
}

// The split by level from the index counts events whose level came from
// log.level, from `level` or from both. Every events row is then given one
// level: the rows would now say otherwise, the index does not, so the
// counts can only come from the index.
TEST_F(SqliteStoreExplorationTest, AHistogramByLevelFromTheIndexTakesEitherLevelField) {
  std::vector<Record> batch;
  std::map<std::string, std::uint64_t> want;
  for (int i = 0; i < 200; ++i) {
    const char* level = i % 5 == 0 ? "WARN" : i % 5 == 1 ? "" : i % 5 == 2 ? "ERROR" : "INFO";
    std::string members;
    if (*level) {
      members = i % 3 == 0   ? fmt::format(R"("level":"{}")", level)
                : i % 3 == 1 ? fmt::format(R"("log":{{"level":"{}"}})", level)
                             : fmt::format(R"("log.level":"{0}","level":"{0}")", level);
    }
    batch.push_back(Ev(kExplorationT0 + i * 100, level, members));
    ++want[level];
  }
  MustAppend(std::move(batch));
  HistogramSpec spec;
  spec.interval = 3'600'000;
  spec.split_field = kLevelSplit;
  auto split = [&] {
    std::map<std::string, std::uint64_t> got;
    auto h = Histogram(query::Node::MakeTerm(query::Term{"", "m", false, false}, 0), kExplorationT0,
                       kExplorationT0 + 3'600'000, spec);
    EXPECT_TRUE(h.ok()) << h.status().ToString();
    if (!h.ok() || h->buckets.size() != 1) return got;
    for (std::size_t k = 0; k < h->keys.size(); ++k) {
      got[h->keys[k]] = h->buckets[0].by_key[k].count;
    }
    got[""] = h->buckets[0].missing.count;
    return got;
  };
  EXPECT_EQ(split(), want);
  ASSERT_NO_FATAL_FAILURE(GiveEveryRowTheFirstLevel());
  EXPECT_EQ(split(), want);
}

// A histogram by level of a query the index answers alone counts each
// level's matches from the index while the day's level terms are exact, and
// reads the rows once they are not: the counts are the same either way.
TEST_F(SqliteStoreExplorationTest, AHistogramByLevelFromTheIndexCountsAsTheRows) {
  std::vector<Record> batch;
  for (int i = 0; i < 120; ++i) {
    const char* level = i % 4 == 0 ? "WARN" : i % 4 == 1 ? "" : "INFO";
    std::string members = *level ? fmt::format(R"("log":{{"level":"{}"}})", level) : "";
    Record r = Ev(kExplorationT0 + i * 1'500, level, members);
    if (i % 3 == 0) r.message = "x";  // not a match of m
    batch.push_back(std::move(r));
  }
  MustAppend(std::move(batch));
  const query::Node m = query::Node::MakeTerm(query::Term{"", "m", false, false}, 0);
  HistogramSpec spec;
  spec.interval = 60'000;
  spec.split_field = kLevelSplit;
  // Per minute: [INFO, WARN, missing].
  auto counts = [&]() {
    std::vector<std::array<std::uint64_t, 3>> out;
    auto h = Histogram(m, kExplorationT0, kExplorationT0 + 3 * 60'000, spec);
    EXPECT_TRUE(h.ok()) << h.status().ToString();
    if (!h.ok()) return out;
    EXPECT_EQ(h->keys, (std::vector<std::string>{"INFO", "WARN"}));
    for (const auto& b : h->buckets) {
      if (b.by_key.size() != 2) continue;
      out.push_back({b.by_key[0].count, b.by_key[1].count, b.missing.count});
    }
    return out;
  };
  std::vector<std::array<std::uint64_t, 3>> want(3, {0, 0, 0});
  for (int i = 0; i < 120; ++i) {
    if (i % 3 == 0) continue;
    want[static_cast<std::size_t>(i * 1'500 / 60'000)][i % 4 == 0 ? 1 : i % 4 == 1 ? 2 : 0]++;
  }
  EXPECT_EQ(counts(), want);
  // Another spelling of INFO shares its term: from now on the rows count.
  Record info = Ev(kExplorationT0 + 2 * 60'000 + 1, "info", R"("log":{"level":"info"})");
  MustAppend({info});
  auto h = Histogram(m, kExplorationT0, kExplorationT0 + 3 * 60'000, spec);
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  ASSERT_EQ(h->keys, (std::vector<std::string>{"INFO", "WARN", "info"}));
  std::uint64_t info_total = 0, all = 0;
  for (const auto& b : h->buckets) {
    info_total += b.by_key[2].count;
    all += b.total.count;
  }
  EXPECT_EQ(info_total, 1u);
  EXPECT_EQ(all, 81u);
}

// A histogram of a negation (`NOT x`, `NOT a AND NOT b`) by level or by
// nothing is the level counts minus x's matches in the index, at whole
// seconds or minutes; the counts equal the events'. Every events row is
// then given one level: the rows would now say otherwise for the split by
// level, the level counts and the index do not.
TEST_F(SqliteStoreExplorationTest, AHistogramOfANegationIsTheLevelCountsLessTheIndex) {
  std::vector<Record> batch;
  struct Made {
    TimeMs t;
    std::string level, user;
  };
  std::vector<Made> made;
  for (int i = 0; i < 300; ++i) {
    const char* level = i % 5 == 0 ? "WARN" : i % 7 == 1 ? "" : "INFO";
    const char* user = i % 3 == 0 ? "bob" : i % 3 == 1 ? "eve" : "ann";
    std::string members = fmt::format(R"("user":"{}")", user);
    if (*level) members += fmt::format(R"(,"log":{{"level":"{}"}})", level);
    const TimeMs t = kExplorationT0 + i * 1'300;
    batch.push_back(Ev(t, level, members));
    made.push_back({t, level, user});
  }
  MustAppend(std::move(batch));
  auto term = [](std::string user) {
    return query::Node::MakeTerm(query::Term{"user", std::move(user), false, false}, 0);
  };
  const query::Node not_bob = query::Node::MakeNot(term("bob"), 0);
  const query::Node neither{
      query::NodeKind::kAnd,
      0,
      {query::Node::MakeNot(term("bob"), 0), query::Node::MakeNot(term("eve"), 0)},
      {},
      {}};
  // Cells (bucket start, level or "") of a histogram.
  using Cells = std::map<std::pair<TimeMs, std::string>, std::uint64_t>;
  auto histogram = [&](const query::Node& q, TimeMs from, TimeMs to, TimeMs interval,
                       bool by_level) {
    HistogramSpec spec;
    spec.interval = interval;
    if (by_level) spec.split_field = kLevelSplit;
    Cells out;
    auto h = Histogram(q, from, to, spec);
    EXPECT_TRUE(h.ok()) << h.status().ToString();
    if (!h.ok()) return out;
    for (const auto& b : h->buckets) {
      if (!by_level) {
        out[{b.start, ""}] = b.total.count;
        continue;
      }
      for (std::size_t k = 0; k < h->keys.size(); ++k) {
        if (b.by_key[k].count > 0) out[{b.start, h->keys[k]}] = b.by_key[k].count;
      }
      if (b.missing.count > 0) out[{b.start, ""}] = b.missing.count;
    }
    return out;
  };
  auto want = [&](std::set<std::string> excluded, TimeMs from, TimeMs to, TimeMs interval,
                  bool by_level) {
    Cells out;
    for (const Made& m : made) {
      if (m.t < from || m.t >= to || excluded.count(m.user)) continue;
      ++out[{m.t / interval * interval, by_level ? m.level : ""}];
    }
    return out;
  };
  using Ranges = std::vector<std::pair<TimeMs, TimeMs>>;
  auto check = [&](const char* when, const Ranges& ranges) {
    for (const TimeMs interval : {TimeMs{60'000}, TimeMs{1'000}, TimeMs{20'000}}) {
      for (const auto& [from, to] : ranges) {
        for (const bool by_level : {false, true}) {
          SCOPED_TRACE(fmt::format("{}: every {} ms from +{} to +{}{}", when, interval,
                                   from - kExplorationT0, to - kExplorationT0,
                                   by_level ? " by level" : ""));
          EXPECT_EQ(histogram(not_bob, from, to, interval, by_level),
                    want({"bob"}, from, to, interval, by_level));
          EXPECT_EQ(histogram(neither, from, to, interval, by_level),
                    want({"bob", "eve"}, from, to, interval, by_level));
        }
      }
    }
  };
  const std::pair<TimeMs, TimeMs> hour{kExplorationT0, kExplorationT0 + 3'600'000};
  check("as written", {hour, {kExplorationT0 + 1'500, kExplorationT0 + 250'700}});
  ASSERT_NO_FATAL_FAILURE(GiveEveryRowTheFirstLevel());
  // Whole minutes: the level counts read no event row at the range's ends.
  check("every row WARN", {hour});
}

// Past the values the accumulator discovers, keys come from a sample of the
// newest events and the counts stay exact.
TEST_F(SqliteStoreExplorationTest, SplitWithManyValuesChoosesKeysFromASample) {
  std::vector<Record> batch;
  int n = 0;
  for (int v = 0; v < 40; ++v) {
    for (int k = 0; k <= v; ++k) {
      batch.push_back(Ev(kExplorationT0 + (n++) * 10, "INFO", fmt::format(R"("run":"r{:02}")", v)));
    }
  }
  MustAppend(std::move(batch));
  HistogramSpec spec;
  spec.interval = 3'600'000;
  spec.split_field = "run";
  spec.split_size = 3;
  auto h = Histogram(query::Node::MatchAll(), kExplorationT0, kExplorationT0 + 3'600'000, spec);
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  EXPECT_EQ(h->keys, (std::vector<std::string>{"r39", "r38", "r37"}));
  EXPECT_FALSE(h->keys_sampled);  // the sample held every event
  ASSERT_EQ(h->buckets.size(), 1u);
  const auto& b = h->buckets[0];
  EXPECT_EQ(b.total.count, static_cast<std::uint64_t>(n));
  EXPECT_EQ(b.by_key[0].count, 40u);
  EXPECT_EQ(b.other.count, static_cast<std::uint64_t>(n - 40 - 39 - 38));
  EXPECT_EQ(b.missing.count, 0u);
}

// Wildcard and fuzzy terms expand against each partition's own vocabulary,
// in every kind of query, not only in searches: day one knows "a1", day two
// "a2", and both must be found.
TEST_F(SqliteStoreExplorationTest, WildcardAndFuzzyTermsExpandPerPartitionEverywhere) {
  const TimeMs day1 = kExplorationT0, day2 = kExplorationT0 + kMsPerDay;
  MustAppend(
      {Ev(day1 + 1, "INFO", R"("host":"gpu-a1")"), Ev(day1 + 2, "INFO", R"("host":"gpu-b1")"),
       Ev(day1 + 3, "INFO", R"("host":"cpu-a1")"), Ev(day2 + 1, "INFO", R"("host":"cpu-a2")"),
       Ev(day2 + 2, "INFO", R"("host":"gpu-a2")")});
  auto leaf = [](query::NodeKind kind, std::string text, unsigned distance) {
    query::Term t;
    t.field = "host";
    t.text = std::move(text);
    t.distance = distance;
    return query::Node::MakeLeaf(kind, std::move(t), 0);
  };
  struct Case {
    query::Node q;
    std::vector<std::string> hosts;  // newest first
  };
  const Case cases[] = {{leaf(query::NodeKind::kWildcard, "g?u-a*", 0), {"gpu-a2", "gpu-a1"}},
                        {leaf(query::NodeKind::kFuzzy, "gpo", 1), {"gpu-a2", "gpu-b1", "gpu-a1"}}};
  const TimeMs from = day1, to = day2 + kMsPerDay / 2;
  for (const Case& c : cases) {
    SCOPED_TRACE(query::DebugString(c.q));
    SearchRequest req;
    req.query = &c.q;
    req.from = from;
    req.to = to;
    // Scan (export, metric series).
    ScanRequest scan;
    scan.query = &c.q;
    auto page = store_->Scan(scan);
    ASSERT_TRUE(page.ok()) << page.status().ToString();
    std::vector<std::string> scanned;
    DocumentReader reader;
    DocumentView view;
    for (const StoredEvent& ev : page->events) {
      ASSERT_TRUE(reader.ReadUnpadded(ev.source, view).ok());
      for (const Field& f : view.fields) {
        if (f.name == "host") scanned.push_back(f.text);
      }
    }
    EXPECT_EQ(scanned, c.hosts);
    // A histogram split by the field.
    HistogramSpec spec;
    spec.interval = 2 * kMsPerDay;
    spec.split_field = "host";
    auto h = Histogram(c.q, from, to, spec);
    ASSERT_TRUE(h.ok()) << h.status().ToString();
    std::vector<std::string> keys = h->keys, want = c.hosts;
    std::sort(keys.begin(), keys.end());
    std::sort(want.begin(), want.end());
    EXPECT_EQ(keys, want);
    ASSERT_FALSE(h->buckets.empty());
    std::uint64_t total = 0;
    for (const auto& b : h->buckets) total += b.total.count;
    EXPECT_EQ(total, c.hosts.size());
    // Field statistics.
    auto fields = store_->SummarizeFields(req, FieldsSpec{});
    ASSERT_TRUE(fields.ok()) << fields.status().ToString();
    EXPECT_EQ(fields->events_read, c.hosts.size());
    // Neighbours of the newest match: every other match, across the day.
    NeighborsSpec around;
    around.anchor = page->events.empty() ? 0 : page->events.front().key;
    auto n = store_->FindNeighbors(req, around);
    ASSERT_TRUE(n.ok()) << n.status().ToString();
    EXPECT_EQ(n->before.size(), c.hosts.size() - 1);
  }
}

TEST_F(SqliteStoreExplorationTest, HistogramRefusesTooManyBuckets) {
  HistogramSpec spec;
  spec.interval = 1;
  auto h = Histogram(query::Node::MatchAll(), kExplorationT0,
                     kExplorationT0 + kMaxHistogramBuckets + 1, spec);
  ASSERT_FALSE(h.ok());
  EXPECT_EQ(h.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(Histogram(query::Node::MatchAll(), kExplorationT0,
                        kExplorationT0 + kMaxHistogramBuckets, spec)
                  .ok());
}

TEST_F(SqliteStoreExplorationTest, NeighborsMatchScopeValuesExactly) {
  // "gpu-1" and "gpu-1-b" share the tokens of the phrase the index is asked
  // for; only the exact check tells them apart. "---" has no tokens at all.
  MustAppend({Ev(kExplorationT0 + 1, "INFO", R"("host":"gpu-1")"),
              Ev(kExplorationT0 + 2, "INFO", R"("host":"gpu-1-b")"),
              Ev(kExplorationT0 + 3, "INFO", R"("host":"gpu-1")"),
              Ev(kExplorationT0 + 4, "INFO", R"("host":"---")"),
              Ev(kExplorationT0 + 5, "INFO", R"("host":"gpu-1","tag":"x")"),
              Ev(kExplorationT0 + 6, "INFO", R"("host":"---")")});
  SearchRequest req;
  const query::Node all = query::Node::MatchAll();
  req.query = &all;
  auto anchor_of = [&](TimeMs t) { return FirstKeyAt(t); };
  NeighborsSpec spec;
  spec.anchor = anchor_of(kExplorationT0 + 3);
  spec.scope = {{"host", {"gpu-1"}}, {"tag", {}}};
  auto n = store_->FindNeighbors(req, spec);
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  ASSERT_EQ(n->before.size(), 1u);
  EXPECT_EQ(n->before[0].key, anchor_of(kExplorationT0 + 1));
  EXPECT_TRUE(n->after.empty());  // kExplorationT0+5 has a tag
  EXPECT_FALSE(n->more_after);
  // With none asked for, "more" still means more in scope.
  spec.before = spec.after = 0;
  n = store_->FindNeighbors(req, spec);
  ASSERT_TRUE(n.ok());
  EXPECT_TRUE(n->before.empty() && n->after.empty());
  EXPECT_TRUE(n->more_before);
  EXPECT_FALSE(n->more_after);
  spec.before = spec.after = 20;
  spec.anchor = anchor_of(kExplorationT0 + 6);
  spec.scope = {{"host", {"---"}}};
  n = store_->FindNeighbors(req, spec);
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  ASSERT_EQ(n->before.size(), 1u);
  EXPECT_EQ(n->before[0].key, anchor_of(kExplorationT0 + 4));
  // A bound on the candidates read per side says there may be more.
  spec.anchor = anchor_of(kExplorationT0 + 4);
  spec.max_examined = 2;
  n = store_->FindNeighbors(req, spec);
  ASSERT_TRUE(n.ok());
  EXPECT_TRUE(
      n->before.empty());  // kExplorationT0+3 and kExplorationT0+2 read, kExplorationT0+1 not
  EXPECT_TRUE(n->more_before);
  ASSERT_EQ(n->after.size(), 1u);
  EXPECT_EQ(n->after[0].key, anchor_of(kExplorationT0 + 6));
  EXPECT_FALSE(n->more_after);
  // No such anchor.
  spec.anchor = anchor_of(kExplorationT0 + 7);
  EXPECT_EQ(store_->FindNeighbors(req, spec).status().code(), StatusCode::kNotFound);
  spec.anchor = anchor_of(kExplorationT0 + 40 * kMsPerDay);
  EXPECT_EQ(store_->FindNeighbors(req, spec).status().code(), StatusCode::kNotFound);
}

TEST_F(SqliteStoreExplorationTest, ExtentSpansPartitions) {
  auto empty = store_->Extent(Clock::time_point::max());
  ASSERT_TRUE(empty.ok());
  EXPECT_FALSE(empty->has_value());
  MustAppend({Ev(kExplorationT0 + 2 * kMsPerDay, "INFO"), Ev(kExplorationT0, "INFO"),
              Ev(kExplorationT0 + kMsPerDay, "INFO")});
  auto extent = store_->Extent(Clock::time_point::max());
  ASSERT_TRUE(extent.ok() && extent->has_value());
  EXPECT_EQ((*extent)->first, kExplorationT0);
  EXPECT_EQ((*extent)->last, kExplorationT0 + 2 * kMsPerDay);
}

TEST_F(SqliteStoreExplorationTest, PastDeadlineIsDeadlineExceeded) {
  std::vector<Record> batch;
  for (int i = 0; i < 2000; ++i) batch.push_back(Ev(kExplorationT0 + i, "INFO", R"("n":1)"));
  MustAppend(std::move(batch));
  SearchRequest req;
  const query::Node all = query::Node::MatchAll();
  req.query = &all;
  req.deadline = Clock::now() - std::chrono::seconds(1);
  HistogramSpec spec;
  spec.interval = 10;  // not from the level counts: a scan
  spec.value_field = "n";
  req.from = kExplorationT0;
  req.to = kExplorationT0 + 2000;
  EXPECT_EQ(store_->Histogram(req, spec).status().code(), StatusCode::kDeadlineExceeded);
  EXPECT_EQ(store_->SummarizeFields(req, FieldsSpec{}).status().code(),
            StatusCode::kDeadlineExceeded);
}

std::string Describe(const HistogramCell& c) {
  return fmt::format("{}/{}/{}/{}/{}", c.count, c.value.count, c.value.sum, c.value.min,
                     c.value.max);
}

std::string Describe(const HistogramTable& t) {
  std::string out = fmt::format("keys={} sampled={}\n", fmt::join(t.keys, ","), t.keys_sampled);
  for (const auto& b : t.buckets) {
    out += fmt::format("{} total={} other={} missing={}", b.start, Describe(b.total),
                       Describe(b.other), Describe(b.missing));
    for (const auto& k : b.by_key) out += " " + Describe(k);
    out += "\n";
  }
  return out;
}

std::string Describe(const FieldsSummary& f) {
  std::string out = fmt::format("read={} complete={} truncated={}\n", f.events_read, f.complete,
                                f.fields_truncated);
  for (const auto& field : f.fields) {
    out += fmt::format("{} {} {}{}{} distinct={}{}:", field.name, field.events, field.has_string,
                       field.has_number, field.has_bool, field.distinct, field.distinct_exact);
    for (const auto& v : field.top) out += fmt::format(" {}={}", v.text, v.events);
    out += "\n";
  }
  return out;
}

std::string Describe(const Neighbors& n) {
  std::string out = fmt::format("more {} {}:", n.more_before, n.more_after);
  for (const auto& e : n.before) out += " b" + FormatEventKey(e.key);
  for (const auto& e : n.after) out += " a" + FormatEventKey(e.key);
  return out;
}

// The answers read from Scan pages are the SQLite store's own, over more
// events than one page holds, two days, and a split with more values than
// the accumulator discovers (so keys are sampled).
TEST_F(SqliteStoreExplorationTest, AnswersFromScanPagesEqualTheStoresOwn) {
  std::vector<Record> batch;
  for (int i = 0; i < 5000; ++i) {
    // Every 7th event has no host; hosts are skewed so the top is stable.
    const std::string host =
        i % 7 == 0 ? "" : fmt::format(R"("host":"gpu-{}",)", (i * i) % 97 % (1 + i % 50));
    batch.push_back(Ev(kExplorationT0 + 14 * 3'600'000 + i * 997, i % 5 ? "INFO" : "ERROR",
                       host + fmt::format(R"("gpu":{},"loss":"{}.5")", i % 8, i % 3)));
  }
  MustAppend(std::move(batch));
  const query::Node all = query::Node::MatchAll();
  const query::Node gpu3 = query::Node::MakeTerm(query::Term{"gpu", "3"}, 0);
  SearchRequest req;
  req.query = &all;
  req.from = kExplorationT0;
  req.to = kExplorationT0 + 2 * kMsPerDay;
  for (const char* split : {"", "host", "level", "gpu"}) {
    for (const char* value : {"", "loss", "gpu"}) {
      HistogramSpec spec;
      spec.interval = 600'000;
      spec.split_field = split;
      spec.split_size = 4;
      spec.value_field = value;
      auto own = store_->Histogram(req, spec);
      auto scanned = HistogramByScan(*store_, req, spec);
      ASSERT_TRUE(own.ok() && scanned.ok()) << split << " " << value;
      EXPECT_EQ(Describe(*scanned), Describe(*own)) << split << " " << value;
    }
  }
  for (std::size_t max_events : {10, 2500, 10'000}) {
    FieldsSpec spec;
    spec.top = 3;
    spec.max_events = max_events;
    auto own = store_->SummarizeFields(req, spec);
    auto scanned = SummarizeFieldsByScan(*store_, req, spec);
    ASSERT_TRUE(own.ok() && scanned.ok());
    EXPECT_EQ(Describe(*scanned), Describe(*own)) << max_events;
  }
  auto own_top = store_->TopValues(req, "host", 3, 4000);
  ASSERT_TRUE(own_top.ok());
  EXPECT_EQ(own_top->events_read, 4000u);
  EXPECT_FALSE(own_top->complete);
  const auto anchors = {FirstKeyAt(kExplorationT0 + 14 * 3'600'000 + 2100 * 997),
                        FirstKeyAt(kExplorationT0 + 14 * 3'600'000 + 4900 * 997)};
  for (EventKey anchor : anchors) {
    // The whole range; one that ends before the anchor; one that starts after.
    const TimeMs at = KeyTime(anchor);
    const std::pair<TimeMs, TimeMs> ranges[] = {
        {req.from, req.to}, {req.from, at - 60'000}, {at + 60'000, req.to}};
    for (const auto& [from, to] : ranges) {
      for (const query::Node* q : {&all, &gpu3}) {
        NeighborsSpec spec;
        spec.anchor = anchor;
        spec.scope = {{"host", {"gpu-1"}}};
        spec.before = 30;
        spec.after = 5;
        SearchRequest r = req;
        r.query = q;
        r.from = from;
        r.to = to;
        auto own = store_->FindNeighbors(r, spec);
        auto scanned = FindNeighborsByScan(*store_, r, spec);
        ASSERT_TRUE(own.ok() && scanned.ok()) << own.status().ToString();
        EXPECT_EQ(Describe(*scanned), Describe(*own)) << from << " " << to;
        for (const auto* side : {&own->before, &own->after}) {
          for (const StoredEvent& e : *side) {
            EXPECT_TRUE(e.ts_ms >= from && e.ts_ms < to)
                << e.ts_ms << " not in " << from << " " << to;
          }
        }
        if (q == &all && from == req.from && to == req.to) {
          EXPECT_FALSE(own->before.empty());
        }
      }
    }
  }
}

}  // namespace
}  // namespace dashcam::storage
