// Tests for SqliteStore::Scan (the paged key-range cursor behind export and
// tail) and SetCommitObserver (the commit notices behind tail), against real
// SQLite partitions in a temporary data directory.
#include <algorithm>
#include <atomic>
#include <future>
#include <mutex>
#include <set>
#include <span>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "storage/log.h"
#include "storage/partition.h"
#include "storage/sqlite_store.h"
#include "tests/common/query_nodes.h"
#include "tests/common/test_server.h"

namespace dashcam::storage {
namespace {

using dashcam::testing::MessageTerm;
using query::Node;
using Names = std::vector<std::string>;

constexpr std::int64_t kScanDay = 20786;  // 2026-11-29
constexpr TimeMs kScanT0 = kScanDay * kMsPerDay + 23 * 3'600'000;

Record Ev(std::string name, TimeMs ts, std::string msg) {
  Record r;
  r.ts_ms = ts;
  r.level = "INFO";
  r.message = std::move(msg);
  r.source = std::move(name);
  return r;
}

class SqliteStoreScanTest : public ::testing::Test {
 public:
  void SetUp() override {
    SqliteStoreOptions opts;
    opts.data_dir = dir_.path() + "/data";
    opts.writer.partition.sync = SyncMode::kNormal;
    auto s = SqliteStore::Open(std::move(opts), log_);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(*s);
  }

  AppendResult Append(std::vector<Record> records) {
    std::promise<AppendResult> done;
    auto result = done.get_future();
    store_->Append(std::move(records), [&](AppendResult r) { done.set_value(std::move(r)); });
    return result.get();
  }

  // Every match of `q` in [lo, hi], paging `page_size` at a time as export
  // does; also counts the pages.
  Names ScanAll(const Node& q, bool ascending, std::size_t page_size, int* pages = nullptr,
                EventKey lo = 0, EventKey hi = std::numeric_limits<EventKey>::max(),
                std::span<const KeyRange> ranges = {}) {
    ScanRequest req;
    req.query = &q;
    req.lo = lo;
    req.hi = hi;
    req.ranges = ranges;
    req.ascending = ascending;
    req.limit = page_size;
    Names out;
    for (int n = 1; n < 10'000; ++n) {
      auto page = store_->Scan(req);
      EXPECT_TRUE(page.ok()) << page.status().ToString();
      if (!page.ok()) break;
      EXPECT_LE(page->events.size(), page_size);
      for (const StoredEvent& e : page->events) out.push_back(e.source);
      if (pages) *pages = n;
      if (!page->more) break;
      const EventKey last = page->events.back().key;
      (ascending ? req.lo : req.hi) = ascending ? last + 1 : last - 1;
    }
    return out;
  }

  dashcam::testing::TempDir dir_;
  Log log_ = Log::Null();
  std::unique_ptr<SqliteStore> store_;
};

TEST_F(SqliteStoreScanTest, PagesCoverEveryMatchOnceInBothOrdersAcrossDays) {
  // 25 events straddling midnight (two partitions), every third one "odd".
  std::vector<Record> records;
  Names all_asc, odd_asc;
  for (int i = 0; i < 25; ++i) {
    const std::string name = fmt::format("e{}", 100 + i);
    const TimeMs ts = kScanT0 + 3'600'000 - 12 * 1000 + i * 1000;  // 23:59:48 .. 00:00:12
    records.push_back(Ev(name, ts, i % 3 == 0 ? "odd one" : "plain"));
    all_asc.push_back(name);
    if (i % 3 == 0) odd_asc.push_back(name);
  }
  ASSERT_TRUE(Append(std::move(records)).status.ok());
  ASSERT_EQ(store_->Partitions().size(), 2u);
  Names all_desc(all_asc.rbegin(), all_asc.rend()), odd_desc(odd_asc.rbegin(), odd_asc.rend());

  for (std::size_t page : {1u, 4u, 9u, 25u, 100u}) {
    SCOPED_TRACE(page);
    EXPECT_EQ(ScanAll(Node::MatchAll(), true, page), all_asc);
    EXPECT_EQ(ScanAll(Node::MatchAll(), false, page), all_desc);
    EXPECT_EQ(ScanAll(MessageTerm("odd"), true, page), odd_asc);
    EXPECT_EQ(ScanAll(MessageTerm("odd"), false, page), odd_desc);
  }
  int pages = 0;
  ScanAll(Node::MatchAll(), false, 5, &pages);
  EXPECT_EQ(pages, 6);  // five full pages, then an empty one that says "no more"
}

// A scan given ranges returns the matches inside them (and inside lo..hi)
// and nothing between them, page after page, in either order, with a range
// that crosses midnight read from both days. `filler` events between the
// named ones make the store run a statement per range; without them, one
// over the ranges of a day (as for a prefix term either way).
void ExpectScansOfRangesReadOnlyThem(SqliteStoreScanTest& test, int filler) {
  std::vector<Record> records;
  std::vector<std::size_t> named_at;
  for (int i = 0; i < 25; ++i) {
    const TimeMs ts = kScanT0 + 3'600'000 - 12 * 1000 + i * 1000;  // 23:59:48 .. 00:00:12
    named_at.push_back(records.size());
    records.push_back(Ev(fmt::format("e{}", 100 + i), ts, i % 3 == 0 ? "odd one" : "plain"));
    // Between the ranges only: after an event that ends one or is outside.
    const std::set<int> range_continues = {1, 2, 7, 10, 11, 12, 13, 20, 21};
    if (range_continues.count(i) != 0) continue;
    for (int f = 1; f <= filler; ++f) records.push_back(Ev("filler", ts + f, "odd filler"));
  }
  auto r = test.Append(std::move(records));
  ASSERT_TRUE(r.status.ok());
  std::vector<EventKey> keys;  // of the named events
  for (std::size_t at : named_at) keys.push_back(*ParseEventKey(r.ids.at(at)));
  // Four ranges a day; midnight is between events 11 and 12.
  const std::vector<KeyRange> ranges = {
      {keys[1], keys[3]},   {keys[5], keys[5]},   {keys[7], keys[8]},  {keys[10], keys[14]},
      {keys[16], keys[16]}, {keys[18], keys[18]}, {keys[20], keys[22]}};
  const auto expect = [](std::initializer_list<int> events, bool odd_only, bool ascending) {
    Names out;
    for (int i : events) {
      if (!odd_only || i % 3 == 0) out.push_back(fmt::format("e{}", 100 + i));
    }
    if (!ascending) std::reverse(out.begin(), out.end());
    return out;
  };
  const auto inside = {1, 2, 3, 5, 7, 8, 10, 11, 12, 13, 14, 16, 18, 20, 21, 22};
  const auto clipped = {2, 3, 5, 7, 8, 10, 11, 12};  // lo..hi = keys[2]..keys[12]
  const Node od_prefix = Node::MakeTerm(query::Term{"", "od", false, true}, 0);
  const EventKey all = std::numeric_limits<EventKey>::max();
  for (std::size_t page : {1u, 2u, 4u, 100u}) {
    for (bool asc : {true, false}) {
      SCOPED_TRACE(fmt::format("filler {} page {} {}", filler, page, asc ? "asc" : "desc"));
      EXPECT_EQ(test.ScanAll(Node::MatchAll(), asc, page, nullptr, 0, all, ranges),
                expect(inside, false, asc));
      EXPECT_EQ(test.ScanAll(MessageTerm("odd"), asc, page, nullptr, 0, all, ranges),
                expect(inside, true, asc));
      // The filler events match the prefix too, but lie outside the ranges.
      Names named_od = test.ScanAll(od_prefix, asc, page, nullptr, 0, all, ranges);
      EXPECT_EQ(named_od, expect(inside, true, asc));
      EXPECT_EQ(test.ScanAll(Node::MatchAll(), asc, page, nullptr, keys[2], keys[12], ranges),
                expect(clipped, false, asc));
      EXPECT_EQ(test.ScanAll(od_prefix, asc, page, nullptr, keys[2], keys[12], ranges),
                expect(clipped, true, asc));
    }
  }
  // Ranges wholly outside lo..hi leave nothing to scan.
  EXPECT_EQ(test.ScanAll(Node::MatchAll(), true, 10, nullptr, keys[4], keys[4], ranges), Names{});
}

TEST_F(SqliteStoreScanTest, RangesLimitAScanToTheirKeysInOneStatementADay) {
  ExpectScansOfRangesReadOnlyThem(*this, 0);
}

TEST_F(SqliteStoreScanTest, RangesLimitAScanToTheirKeysInAStatementEach) {
  ExpectScansOfRangesReadOnlyThem(*this, 40);
}

TEST_F(SqliteStoreScanTest, KeyRangeBoundsAreInclusive) {
  auto r =
      Append({Ev("a", kScanT0 + 1, "x"), Ev("b", kScanT0 + 2, "x"), Ev("c", kScanT0 + 3, "x")});
  ASSERT_TRUE(r.status.ok());
  const EventKey kb = *ParseEventKey(r.ids[1]), kc = *ParseEventKey(r.ids[2]);
  EXPECT_EQ(ScanAll(MessageTerm("x"), true, 10, nullptr, kb, kc), (Names{"b", "c"}));
  EXPECT_EQ(ScanAll(MessageTerm("x"), false, 10, nullptr, kb, kb), (Names{"b"}));
  EXPECT_EQ(ScanAll(MessageTerm("x"), false, 10, nullptr, kc, kb), Names{});
}

TEST_F(SqliteStoreScanTest, PagesEndAfterMaxBytesOfDocuments) {
  std::vector<Record> records;
  for (int i = 0; i < 10; ++i) {
    records.push_back(Ev(fmt::format("{}{}", i, std::string(99, 'x')), kScanT0 + i, "x"));
  }
  ASSERT_TRUE(Append(std::move(records)).status.ok());
  const Node q = Node::MatchAll();
  ScanRequest req;
  req.query = &q;
  req.ascending = true;
  req.max_bytes = 250;  // the third 100-byte document passes it
  auto page = store_->Scan(req);
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page->events.size(), 3u);
  EXPECT_TRUE(page->more);
  EXPECT_EQ(page->events[2].source[0], '2');
  req.max_bytes = 1;  // a page always holds one event
  page = store_->Scan(req);
  ASSERT_TRUE(page.ok());
  EXPECT_EQ(page->events.size(), 1u);
}

TEST_F(SqliteStoreScanTest, CancelledScanStopsWithUnavailable) {
  std::vector<Record> records;
  for (int i = 0; i < 20'000; ++i) records.push_back(Ev("e", kScanT0 + i, "x"));
  ASSERT_TRUE(Append(std::move(records)).status.ok());
  const Node q = Node::MatchAll();
  std::atomic<bool> cancelled{true};
  ScanRequest req;
  req.query = &q;
  req.limit = 20'000;
  req.cancelled = &cancelled;
  auto page = store_->Scan(req);
  ASSERT_FALSE(page.ok());
  EXPECT_EQ(page.status().code(), StatusCode::kUnavailable) << page.status().ToString();
  cancelled = false;
  page = store_->Scan(req);
  ASSERT_TRUE(page.ok()) << page.status().ToString();
  EXPECT_EQ(page->events.size(), 20'000u);
}

TEST_F(SqliteStoreScanTest, ObserverSeesEachCommitsStoredKeysAscending) {
  std::mutex mu;
  std::vector<std::pair<std::int64_t, std::vector<EventKey>>> notices;
  store_->SetCommitObserver([&](const CommitNotice& n) {
    std::lock_guard lock(mu);
    notices.emplace_back(n.day, std::vector<EventKey>(n.keys.begin(), n.keys.end()));
  });
  // Out of time order, across two days, with a duplicate doc_id.
  Record dup = Ev("dup", kScanT0 + 5, "x");
  dup.doc_id = "same";
  auto r = Append({Ev("late", kScanT0 + 3, "x"), Ev("next-day", kScanT0 + 3'600'000 + 1, "x"),
                   Ev("early", kScanT0 + 1, "x"), dup, dup});
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  {
    std::lock_guard lock(mu);
    ASSERT_EQ(notices.size(), 2u);  // one per partition, committed before Append reported
    std::vector<EventKey> today = {*ParseEventKey(r.ids[2]), *ParseEventKey(r.ids[0])};
    EXPECT_EQ(notices[0].first, kScanDay);
    ASSERT_EQ(notices[0].second.size(), 3u);  // the second "dup" was not stored
    EXPECT_TRUE(std::is_sorted(notices[0].second.begin(), notices[0].second.end()));
    EXPECT_EQ(notices[0].second[0], today[0]);
    EXPECT_EQ(notices[0].second[1], today[1]);
    EXPECT_EQ(notices[1].first, kScanDay + 1);
    EXPECT_EQ(notices[1].second, (std::vector<EventKey>{*ParseEventKey(r.ids[1])}));
  }
  store_->SetCommitObserver(nullptr);
  ASSERT_TRUE(Append({Ev("after", kScanT0 + 9, "x")}).status.ok());
  std::lock_guard lock(mu);
  EXPECT_EQ(notices.size(), 2u);
}

}  // namespace
}  // namespace dashcam::storage
