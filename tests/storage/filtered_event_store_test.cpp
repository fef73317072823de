// Tests of FilteredEventStore against a real SqliteStore: every read sees
// only the events matching the filter, whatever the caller's query, and an
// event outside it is "not found" by id and as a context anchor.
#include "storage/filtered_event_store.h"

#include <future>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "storage/log.h"
#include "storage/sqlite_store.h"
#include "tests/common/query_nodes.h"
#include "tests/common/test_server.h"

namespace dashcam::storage {
namespace {

using dashcam::testing::MessageTerm;
using query::Node;

constexpr TimeMs kFilteredT0 = 20786LL * kMsPerDay + 10 * 3'600'000;

class FilteredEventStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SqliteStoreOptions opts;
    opts.data_dir = dir_.path() + "/data";
    opts.writer.partition.sync = SyncMode::kNormal;
    auto s = SqliteStore::Open(std::move(opts), log_);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(*s);
    // alice's and bob's events alternate, one second apart.
    std::vector<Record> records;
    for (int i = 0; i < 20; ++i) {
      Record r;
      r.ts_ms = kFilteredT0 + i * 1000;
      r.level = "INFO";
      r.message = (i % 2 == 0 ? "alice step " : "bob step ") + std::to_string(i);
      r.source = "{\"message\":\"" + r.message + "\",\"host\":\"h1\"}";
      records.push_back(std::move(r));
    }
    std::promise<AppendResult> done;
    store_->Append(std::move(records), [&](AppendResult r) { done.set_value(std::move(r)); });
    ids_ = done.get_future().get().ids;
    ASSERT_EQ(ids_.size(), 20u);
  }

  testing::TempDir dir_;
  Log log_{Log::Null()};
  std::unique_ptr<SqliteStore> store_;
  std::vector<std::string> ids_;  // even: alice, odd: bob
};

TEST_F(FilteredEventStoreTest, EveryReadIsRestricted) {
  FilteredEventStore alice(*store_, MessageTerm("alice"));
  const Node all = Node::MatchAll();
  const Node bob = MessageTerm("bob");
  SearchRequest req;
  req.query = &all;
  auto page = alice.Search(req);
  ASSERT_TRUE(page.ok());
  EXPECT_EQ(page->total, 10u);
  for (const auto& e : page->hits) EXPECT_NE(e.source.find("alice"), std::string::npos);
  req.query = &bob;
  EXPECT_EQ(alice.Search(req)->total, 0u);
  EXPECT_EQ(store_->Search(req)->total, 10u);  // the store itself is unchanged

  req.query = &all;
  req.from = kFilteredT0 - 60'000;
  req.to = kFilteredT0 + 60'000;
  auto simple = alice.Histogram(req, 60'000);
  ASSERT_TRUE(simple.ok()) << simple.status().ToString();
  std::uint64_t sum = 0;
  for (const auto& b : *simple) sum += b.count;
  EXPECT_EQ(sum, 10u);
  HistogramSpec spec;
  spec.interval = 60'000;
  auto table = alice.Histogram(req, spec);
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  sum = 0;
  for (const auto& b : table->buckets) sum += b.total.count;
  EXPECT_EQ(sum, 10u);
  EXPECT_EQ(alice.SummarizeFields(req, FieldsSpec{})->events_read, 10u);

  ScanRequest scan;
  scan.query = &all;
  EXPECT_EQ(alice.Scan(scan)->events.size(), 10u);

  auto extent = alice.Extent(Clock::time_point::max());
  ASSERT_TRUE(extent.ok() && extent->has_value());
  EXPECT_EQ((*extent)->first, kFilteredT0);
  EXPECT_EQ((*extent)->last, kFilteredT0 + 18'000);  // the last event (bob's) is not alice's
}

TEST_F(FilteredEventStoreTest, EventsOutsideTheFilterAreNotFound) {
  FilteredEventStore alice(*store_, MessageTerm("alice"));
  auto mine = alice.Get(ids_[4]);
  ASSERT_TRUE(mine.ok() && mine->has_value());
  auto theirs = alice.Get(ids_[5]);
  ASSERT_TRUE(theirs.ok());
  EXPECT_FALSE(theirs->has_value());
  ASSERT_TRUE(store_->Get(ids_[5])->has_value());

  const Node all = Node::MatchAll();
  SearchRequest req;
  req.query = &all;
  NeighborsSpec spec;
  spec.anchor = (*store_->Get(ids_[5]))->key;
  EXPECT_EQ(alice.FindNeighbors(req, spec).status().code(), StatusCode::kNotFound);
  spec.anchor = (**mine).key;
  auto n = alice.FindNeighbors(req, spec);
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  // Which neighbours a scope selects is SqliteStore's business (and the
  // integration test's, tests/integration/auth_test.cpp): here, only that
  // none is outside the filter.
  for (const auto* side : {&n->before, &n->after}) {
    for (const auto& e : *side) EXPECT_NE(e.source.find("alice"), std::string::npos);
  }
}

}  // namespace
}  // namespace dashcam::storage
