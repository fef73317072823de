// PlanDrops and NextDrop: which partitions retention takes, and why.
#include "storage/retention.h"

#include <gtest/gtest.h>

namespace dashcam::storage {
namespace {

constexpr std::int64_t kToday = 20'000;
const TimeMs kNow = DayStart(kToday) + 3'600'000;  // 01:00 UTC

std::vector<PartitionInfo> Parts(std::initializer_list<std::pair<std::int64_t, std::uint64_t>> d) {
  std::vector<PartitionInfo> out;
  for (const auto& [day, bytes] : d) out.push_back({day, "", bytes});
  return out;
}

std::vector<std::int64_t> Days(const std::vector<PlannedDrop>& plan) {
  std::vector<std::int64_t> out;
  for (const auto& p : plan) out.push_back(p.day);
  return out;
}

TEST(RetentionPlanTest, AgeKeepsEveryEventAtLeastNDays) {
  RetentionPolicy p;
  p.max_age_days = 2;
  // Given unordered: the plan is oldest first.
  const auto parts = Parts({{kToday - 2, 1}, {kToday - 5, 1}, {kToday - 3, 1}, {kToday, 1}});
  const auto plan = PlanDrops(p, parts, kNow);
  EXPECT_EQ(Days(plan), (std::vector<std::int64_t>{kToday - 5, kToday - 3}));
  EXPECT_EQ(plan[1].reason, "age");
  EXPECT_EQ(plan[1].due_ms, DayStart(kToday));
  // Next: today-2 goes at the start of tomorrow.
  const auto next = NextDrop(p, Parts({{kToday - 2, 1}, {kToday, 1}}), kNow);
  ASSERT_TRUE(next);
  EXPECT_EQ(next->day, kToday - 2);
  EXPECT_EQ(next->due_ms, DayStart(kToday + 1));
}

TEST(RetentionPlanTest, SizeDropsOldestUntilUnderNeverTodayOrFuture) {
  RetentionPolicy p;
  p.max_disk_bytes = 100;
  const auto parts = Parts({{kToday - 3, 40}, {kToday - 2, 40}, {kToday - 1, 40}, {kToday, 10}});
  EXPECT_EQ(Days(PlanDrops(p, parts, kNow)), (std::vector<std::int64_t>{kToday - 3}));
  // Today's and future partitions over the limit on their own stay.
  const auto big = Parts({{kToday - 1, 10}, {kToday, 500}, {kToday + 3, 500}});
  const auto plan = PlanDrops(p, big, kNow);
  EXPECT_EQ(Days(plan), (std::vector<std::int64_t>{kToday - 1}));
  EXPECT_EQ(plan[0].reason, "disk_bytes");
  EXPECT_FALSE(NextDrop(p, Parts({{kToday + 3, 500}}), kNow));
  const auto next = NextDrop(p, Parts({{kToday, 500}}), kNow);
  ASSERT_TRUE(next);  // today's, once tomorrow comes and it is over the limit
  EXPECT_EQ(next->due_ms, 0);
}

TEST(RetentionPlanTest, BothRulesAndNoPolicy) {
  RetentionPolicy p;
  p.max_age_days = 10;
  p.max_disk_bytes = 50;
  const auto parts = Parts({{kToday - 20, 100}, {kToday - 2, 40}, {kToday - 1, 40}});
  const auto plan = PlanDrops(p, parts, kNow);
  ASSERT_EQ(plan.size(), 2u);
  EXPECT_EQ(plan[0].reason, "age");  // its bytes count off the size rule's total
  EXPECT_EQ(plan[1].day, kToday - 2);
  EXPECT_EQ(plan[1].reason, "disk_bytes");
  EXPECT_TRUE(PlanDrops(RetentionPolicy{}, parts, kNow).empty());
  EXPECT_FALSE(NextDrop(RetentionPolicy{}, parts, kNow));
}

}  // namespace
}  // namespace dashcam::storage
