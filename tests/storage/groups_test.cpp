// Tests for the per-partition group rollup (partition.h `groups`) and
// EventStore::Groups over real SQLite files: merging across day partitions,
// closing events, replacements, reopening, the upgrade of a version-3
// partition, and the filtered view's per-group checks (exact values: r-42
// and r-42-b stay apart).
#include <future>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "storage/document_reader.h"
#include "storage/exact_value.h"
#include "storage/filtered_event_store.h"
#include "storage/log.h"
#include "storage/partition.h"
#include "storage/sqlite_db.h"
#include "storage/sqlite_store.h"
#include "tests/common/test_server.h"

namespace dashcam::storage {
namespace {

constexpr std::int64_t kGroupsDay = 20786;  // 2026-11-29
constexpr TimeMs kGroupsT0 =
    kGroupsDay * kMsPerDay + 23 * 3'600'000;  // 23:00, an hour before the next day

class GroupsTest : public ::testing::Test {
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

  // An event of run `run` (none when empty) by `user`, as ingest makes it.
  static Record Ev(TimeMs ts, const std::string& run, const std::string& user = "a",
                   bool end = false) {
    Record r;
    r.ts_ms = ts;
    r.message = "step";
    r.source = fmt::format(R"({{"message":"step","user":{{"name":"{}"}}{}{}}})", user,
                           run.empty() ? "" : fmt::format(R"(,"run":{{"id":"{}"}})", run),
                           end ? R"(,"run.end":"finished")" : "");
    DocumentReader reader;
    DocumentView view;
    EXPECT_TRUE(reader.ReadUnpadded(r.source, view).ok()) << r.source;
    r.fields = std::move(view.fields);
    r.group = run;
    r.group_end = end;
    return r;
  }

  void MustAppend(std::vector<Record> records) {
    std::promise<AppendResult> done;
    auto result = done.get_future();
    store_->Append(std::move(records), [&](AppendResult r) { done.set_value(std::move(r)); });
    AppendResult r = result.get();
    ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  }

  GroupsPage MustGroups(EventStore& store, TimeMs from, TimeMs to, std::size_t limit = 100) {
    GroupsRequest req;
    req.from = from;
    req.to = to;
    req.limit = limit;
    req.group_field = "run.id";
    auto page = store.Groups(req);
    EXPECT_TRUE(page.ok()) << page.status().ToString();
    return page.ok() ? *page : GroupsPage{};
  }

  dashcam::testing::TempDir dir_;
  Log log_ = Log::Null();
  std::unique_ptr<SqliteStore> store_;
};

const GroupSummary* Find(const GroupsPage& page, const std::string& key) {
  for (const auto& g : page.groups)
    if (g.key == key) return &g;
  return nullptr;
}

TEST_F(GroupsTest, RollupMergesPartitionsAndSurvivesReopen) {
  // r-42 runs from 23:00 into the next day (two partitions) and finishes;
  // r-7 stays in the first day; ungrouped events count nowhere.
  std::vector<Record> batch;
  for (int i = 0; i < 120; ++i) batch.push_back(Ev(kGroupsT0 + i * 60'000, "r-42"));  // 2 hours
  batch.push_back(Ev(kGroupsT0 + 120 * 60'000, "r-42", "a", /*end=*/true));
  for (int i = 0; i < 10; ++i) batch.push_back(Ev(kGroupsT0 + 1'000 + i, "r-7"));
  for (int i = 0; i < 5; ++i) batch.push_back(Ev(kGroupsT0 + 2'000 + i, ""));
  MustAppend(batch);
  MustAppend({Ev(kGroupsT0 + 30'000, "r-7")});  // a second transaction adds to the row

  for (int pass = 0; pass < 2; ++pass) {
    const GroupsPage page = MustGroups(*store_, kMinEventTime, kMaxEventTime);
    ASSERT_EQ(page.groups.size(), 2u) << "pass " << pass;
    EXPECT_TRUE(page.complete);
    EXPECT_EQ(page.groups[0].key, "r-42");  // newest last first
    EXPECT_EQ(page.groups[0].first, kGroupsT0);
    EXPECT_EQ(page.groups[0].last, kGroupsT0 + 120 * 60'000);
    EXPECT_EQ(page.groups[0].events, 121u);
    EXPECT_EQ(page.groups[0].ended, kGroupsT0 + 120 * 60'000);
    EXPECT_EQ(page.groups[1].key, "r-7");
    EXPECT_EQ(page.groups[1].first, kGroupsT0 + 1'000);
    EXPECT_EQ(page.groups[1].last, kGroupsT0 + 30'000);
    EXPECT_EQ(page.groups[1].events, 11u);
    EXPECT_FALSE(page.groups[1].ended.has_value());
    Open();  // the rollup is on disk, not in memory
  }
  // A range inside the second day sees only that day's part of r-42.
  const GroupsPage day2 = MustGroups(*store_, (kGroupsDay + 1) * kMsPerDay, kMaxEventTime);
  ASSERT_EQ(day2.groups.size(), 1u);
  EXPECT_EQ(day2.groups[0].first, (kGroupsDay + 1) * kMsPerDay);
  EXPECT_EQ(day2.groups[0].events, 61u);
  // A range before r-7's first event but inside the day: r-42 only.
  EXPECT_EQ(MustGroups(*store_, kGroupsT0, kGroupsT0 + 500).groups.size(), 1u);
  // limit: newest first, incomplete.
  const GroupsPage one = MustGroups(*store_, kMinEventTime, kMaxEventTime, 1);
  ASSERT_EQ(one.groups.size(), 1u);
  EXPECT_EQ(one.groups[0].key, "r-42");
  EXPECT_FALSE(one.complete);
}

// The rollup commits with the events: a replacement (same doc_id) does not
// count twice, a duplicate not at all.
TEST_F(GroupsTest, ReplacementsAndDuplicatesDoNotCountAgain) {
  Record a = Ev(kGroupsT0, "r-1");
  a.doc_id = "d";
  a.op = WriteOp::kIndex;
  MustAppend({a});
  Record again = a;
  again.ts_ms = kGroupsT0 + 5'000;
  Record dup = a;
  dup.op = WriteOp::kCreate;
  MustAppend({again, dup});
  const GroupsPage page = MustGroups(*store_, kMinEventTime, kMaxEventTime);
  ASSERT_EQ(page.groups.size(), 1u);
  EXPECT_EQ(page.groups[0].events, 1u);
  EXPECT_EQ(page.groups[0].last, kGroupsT0 + 5'000);
}

TEST_F(GroupsTest, VersionThreePartitionIsUpgradedWithAnEmptyRollup) {
  MustAppend({Ev(kGroupsT0, "")});
  store_->Close();
  store_.reset();
  {
    Db db;
    ASSERT_TRUE(db.Open(PartitionPath(kGroupsDay), SQLITE_OPEN_READWRITE).ok());
    ASSERT_TRUE(db.Exec("DROP TABLE groups; PRAGMA user_version=3").ok());
  }
  Open();
  EXPECT_TRUE(MustGroups(*store_, kMinEventTime, kMaxEventTime).groups.empty());
  MustAppend({Ev(kGroupsT0 + 1, "r-9")});
  const GroupsPage page = MustGroups(*store_, kMinEventTime, kMaxEventTime);
  ASSERT_EQ(page.groups.size(), 1u);
  EXPECT_EQ(page.groups[0].events, 1u);
  Db db;
  ASSERT_TRUE(db.Open(PartitionPath(kGroupsDay), SQLITE_OPEN_READONLY).ok());
  auto stmt = db.Prepare("SELECT user_version FROM pragma_user_version");
  ASSERT_TRUE(stmt.ok());
  ASSERT_EQ(stmt->Step(), SQLITE_ROW);
  EXPECT_EQ(stmt->Int(0), kPartitionSchemaVersion);
}

// A scoped reader learns that a run finished only from a closing line it can
// see (the rollup's `ended` is everyone's).
TEST_F(GroupsTest, FilteredViewShowsAnEndOnlyWhenTheClosingEventIsVisible) {
  MustAppend({Ev(kGroupsT0, "r-1", "x"), Ev(kGroupsT0 + 1'000, "r-1", "y", /*end=*/true),
              Ev(kGroupsT0 + 2'000, "r-2", "x"), Ev(kGroupsT0 + 3'000, "r-2", "x", /*end=*/true)});
  const query::Node end = ExactValueQuery("run.end", "finished");
  query::Term t;
  t.field = "user.name";
  t.text = "x";
  FilteredEventStore x(*store_, query::Node::MakeTerm(t, 0));
  GroupsRequest req;
  req.group_field = "run.id";
  req.end_query = &end;
  auto page = x.Groups(req);
  ASSERT_TRUE(page.ok()) << page.status().ToString();
  const GroupSummary* r1 = Find(*page, "r-1");
  const GroupSummary* r2 = Find(*page, "r-2");
  ASSERT_NE(r1, nullptr);
  ASSERT_NE(r2, nullptr);
  EXPECT_FALSE(r1->ended.has_value());
  ASSERT_TRUE(r2->ended.has_value());
  EXPECT_EQ(*r2->ended, kGroupsT0 + 3'000);
  // Unfiltered, r-1 ended; filtered without the closing query, nothing can be told.
  const GroupsPage unfiltered = MustGroups(*store_, kMinEventTime, kMaxEventTime);
  const GroupSummary* all = Find(unfiltered, "r-1");
  ASSERT_NE(all, nullptr);
  ASSERT_TRUE(all->ended.has_value());
  EXPECT_EQ(*all->ended, kGroupsT0 + 1'000);
  const GroupsPage without_end_query = MustGroups(x, kMinEventTime, kMaxEventTime);
  const GroupSummary* blind = Find(without_end_query, "r-2");
  ASSERT_NE(blind, nullptr);
  EXPECT_FALSE(blind->ended.has_value());
}

// A filtered view shows a group only with its visible events; r-42 and
// r-42-b are different groups although `run.id:r-42` matches both.
TEST_F(GroupsTest, FilteredViewCountsOnlyVisibleEventsOfExactGroups) {
  std::vector<Record> batch;
  for (int i = 0; i < 6; ++i) batch.push_back(Ev(kGroupsT0 + i * 1'000, "r-42", i < 4 ? "x" : "y"));
  for (int i = 0; i < 3; ++i) batch.push_back(Ev(kGroupsT0 + 10'000 + i, "r-42-b", "x"));
  for (int i = 0; i < 3; ++i) batch.push_back(Ev(kGroupsT0 + 20'000 + i, "r-43", "y"));
  MustAppend(batch);
  query::Term t;
  t.field = "user.name";
  t.text = "x";
  FilteredEventStore x(*store_, query::Node::MakeTerm(t, 0));
  const GroupsPage page = MustGroups(x, kMinEventTime, kMaxEventTime);
  ASSERT_EQ(page.groups.size(), 2u);
  const GroupSummary* r42 = Find(page, "r-42");
  ASSERT_NE(r42, nullptr);
  EXPECT_EQ(r42->events, 4u);
  EXPECT_EQ(r42->first, kGroupsT0);
  EXPECT_EQ(r42->last, kGroupsT0 + 3'000);
  const GroupSummary* b = Find(page, "r-42-b");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->events, 3u);
  EXPECT_EQ(Find(page, "r-43"), nullptr);

  // ExactValueQuery itself.
  const query::Node exact = ExactValueQuery("run.id", "r-42");
  SearchRequest req;
  req.query = &exact;
  auto found = store_->Search(req);
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  EXPECT_EQ(found->total, 6u);
}

}  // namespace
}  // namespace dashcam::storage
