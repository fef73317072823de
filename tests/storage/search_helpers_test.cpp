// Tests for storage/search_helpers.h: every item of a batch runs exactly once,
// idle helpers take part, a batch ends early when its work says so, nothing
// runs after Finish or Cancel returns, and batches are not offered while
// more are open than there are helpers.
#include "storage/search_helpers.h"

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace dashcam::storage {
namespace {

using namespace std::chrono_literals;

// Runs batches of `n` slow items until helpers took part in one (they may
// not be waiting yet right after construction), at most 50 times.
bool HelpersJoinABatch(SearchHelpers& helpers, std::size_t n) {
  for (int round = 0; round < 50; ++round) {
    const std::uint64_t before = helpers.helped_items();
    SearchHelpers::Batch batch = helpers.Start(n, [](std::size_t, std::size_t) {
      std::this_thread::sleep_for(2ms);
      return true;
    });
    batch.Finish();
    if (helpers.helped_items() > before) return true;
  }
  return false;
}

TEST(SearchHelpersTest, EveryItemRunsOnceAndIdleHelpersTakePart) {
  SearchHelpers helpers(2, nullptr);
  ASSERT_EQ(helpers.participants(), 3u);
  ASSERT_TRUE(HelpersJoinABatch(helpers, 8));

  constexpr std::size_t kItems = 40;
  std::vector<std::atomic<int>> runs(kItems);
  std::vector<std::atomic<int>> by_who(helpers.participants());
  const std::uint64_t before = helpers.helped_items();
  SearchHelpers::Batch batch = helpers.Start(kItems, [&](std::size_t item, std::size_t who) {
    EXPECT_LT(who, by_who.size());
    runs[item].fetch_add(1);
    by_who[who].fetch_add(1);
    std::this_thread::sleep_for(1ms);
    return true;
  });
  batch.Finish();
  for (std::size_t i = 0; i < kItems; ++i) EXPECT_EQ(runs[i].load(), 1) << "item " << i;
  const int by_helpers = by_who[1].load() + by_who[2].load();
  EXPECT_EQ(by_who[0].load() + by_helpers, static_cast<int>(kItems));
  EXPECT_EQ(helpers.helped_items() - before, static_cast<std::uint64_t>(by_helpers));
  EXPECT_GT(by_helpers, 0);
}

TEST(SearchHelpersTest, WithoutHelpersTheStartingThreadDoesEverything) {
  SearchHelpers helpers(0, nullptr);
  const auto self = std::this_thread::get_id();
  int runs = 0;
  SearchHelpers::Batch batch = helpers.Start(5, [&](std::size_t, std::size_t who) {
    EXPECT_EQ(who, 0u);
    EXPECT_EQ(std::this_thread::get_id(), self);
    ++runs;
    return true;
  });
  EXPECT_EQ(runs, 0);  // nothing runs before Finish
  batch.Finish();
  EXPECT_EQ(runs, 5);
}

TEST(SearchHelpersTest, WorkReturningFalseSkipsTheUnclaimedItems) {
  SearchHelpers helpers(2, nullptr);
  ASSERT_TRUE(HelpersJoinABatch(helpers, 4));
  std::atomic<int> runs{0};
  SearchHelpers::Batch batch = helpers.Start(1000, [&](std::size_t item, std::size_t) {
    runs.fetch_add(1);
    std::this_thread::sleep_for(1ms);
    return item < 3;
  });
  batch.Finish();
  // Items 0..3 run; each participant may have claimed one more meanwhile.
  EXPECT_GE(runs.load(), 4);
  EXPECT_LE(runs.load(), 4 + 3);
}

TEST(SearchHelpersTest, NothingRunsAfterCancelReturns) {
  SearchHelpers helpers(2, nullptr);
  ASSERT_TRUE(HelpersJoinABatch(helpers, 4));
  std::atomic<bool> over{false};
  std::atomic<int> after{0}, runs{0};
  {
    SearchHelpers::Batch batch = helpers.Start(200, [&](std::size_t, std::size_t) {
      if (over.load()) after.fetch_add(1);
      runs.fetch_add(1);
      std::this_thread::sleep_for(1ms);
      return true;
    });
    std::this_thread::sleep_for(10ms);  // let the helpers start
    batch.Cancel();
    over.store(true);
  }  // the destructor after Cancel does nothing more
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(after.load(), 0);
  EXPECT_LT(runs.load(), 200);  // the rest was skipped, not run
}

TEST(SearchHelpersTest, NotOfferedWhileMoreBatchesAreOpenThanHelpers) {
  SearchHelpers helpers(1, nullptr);
  ASSERT_TRUE(HelpersJoinABatch(helpers, 4));
  const std::uint64_t before = helpers.helped_items();
  {
    // Another search holds a batch open: two open batches, one helper.
    SearchHelpers::Batch other = helpers.Start(0, [](std::size_t, std::size_t) { return true; });
    SearchHelpers::Batch batch = helpers.Start(20, [](std::size_t, std::size_t who) {
      EXPECT_EQ(who, 0u);
      std::this_thread::sleep_for(1ms);
      return true;
    });
    batch.Finish();
    other.Finish();
  }
  EXPECT_EQ(helpers.helped_items(), before);
  EXPECT_TRUE(HelpersJoinABatch(helpers, 4));  // alone again: helped
}

TEST(SearchHelpersTest, AFinishedBatchLeavesNoInvitationBehind) {
  SearchHelpers helpers(2, nullptr);
  ASSERT_TRUE(HelpersJoinABatch(helpers, 4));
  // A batch this short is mostly over before a woken helper takes its
  // invitation; the invitation must not outlive the batch.
  for (int i = 0; i < 200; ++i) {
    SearchHelpers::Batch batch = helpers.Start(3, [](std::size_t, std::size_t) { return true; });
    batch.Finish();
    ASSERT_EQ(helpers.pending_offers(), 0u) << "after batch " << i;
  }
  EXPECT_TRUE(HelpersJoinABatch(helpers, 4));
}

TEST(SearchHelpersTest, ThreadStartHookRunsOnEveryHelper) {
  std::atomic<int> started{0};
  {
    SearchHelpers helpers(3, [&] { started.fetch_add(1); });
  }  // the destructor joins the threads
  EXPECT_EQ(started.load(), 3);
}

}  // namespace
}  // namespace dashcam::storage
