// Tests for storage/histogram_accumulator.h: bucket arithmetic, split series
// with known and discovered keys, numeric values, weights.
#include "storage/histogram_accumulator.h"

#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

namespace dashcam::storage {
namespace {

using Values = std::vector<std::string_view>;

HistogramSpec Spec(TimeMs interval, std::string split = "", std::size_t size = 10) {
  HistogramSpec s;
  s.interval = interval;
  s.split_field = std::move(split);
  s.split_size = size;
  return s;
}

TEST(HistogramAccumulatorTest, BucketCountCoversMisalignedRanges) {
  EXPECT_EQ(HistogramAccumulator::BucketCount(0, 60, 60), 1u);
  EXPECT_EQ(HistogramAccumulator::BucketCount(0, 61, 60), 2u);
  EXPECT_EQ(HistogramAccumulator::BucketCount(59, 61, 60), 2u);
  EXPECT_EQ(HistogramAccumulator::BucketCount(60, 120, 60), 1u);
  EXPECT_EQ(HistogramAccumulator::BucketCount(5, 5, 60), 0u);
}

TEST(HistogramAccumulatorTest, CountsOnlyNonEmptyBucketsInTheRange) {
  HistogramAccumulator acc(150, 500, Spec(100), std::vector<std::string>{});
  for (TimeMs t : {100, 149, 150, 199, 420, 499, 500, 1000}) acc.Add(t, {}, {});
  acc.Add(210, {}, {}, /*weight=*/5);
  HistogramTable t = acc.Finish(false);
  ASSERT_EQ(t.buckets.size(), 3u);
  EXPECT_EQ(t.buckets[0].start, 100);  // holds 150 and 199; 100 and 149 are before `from`
  EXPECT_EQ(t.buckets[0].total.count, 2u);
  EXPECT_EQ(t.buckets[1].start, 200);
  EXPECT_EQ(t.buckets[1].total.count, 5u);
  EXPECT_EQ(t.buckets[2].start, 400);
  EXPECT_EQ(t.buckets[2].total.count, 2u);
  EXPECT_TRUE(t.keys.empty());
  EXPECT_EQ(t.buckets[0].missing.count, 0u);  // no split: nothing is missing
}

TEST(HistogramAccumulatorTest, KnownKeysSendTheRestToOtherAndMissing) {
  HistogramAccumulator acc(0, 100, Spec(100, "user"), std::vector<std::string>{"a", "b"});
  acc.Add(1, Values{"a"}, {});
  acc.Add(2, Values{"b", "c"}, {});  // an array: once under each value
  acc.Add(3, Values{"c"}, {});
  acc.Add(4, {}, {});
  HistogramTable t = acc.Finish(true);
  EXPECT_TRUE(t.keys_sampled);
  EXPECT_EQ(t.keys, (std::vector<std::string>{"a", "b"}));
  ASSERT_EQ(t.buckets.size(), 1u);
  const auto& b = t.buckets[0];
  EXPECT_EQ(b.total.count, 4u);
  EXPECT_EQ(b.by_key[0].count, 1u);
  EXPECT_EQ(b.by_key[1].count, 1u);
  EXPECT_EQ(b.other.count, 2u);
  EXPECT_EQ(b.missing.count, 1u);
}

TEST(HistogramAccumulatorTest, DiscoveredKeysAreTheMostFrequent) {
  HistogramAccumulator acc(0, 200, Spec(100, "level", 2), std::nullopt);
  const std::pair<TimeMs, std::string_view> events[] = {
      {1, "WARN"}, {2, "INFO"}, {150, "INFO"}, {151, "ERROR"}, {152, "WARN"}, {153, "DEBUG"}};
  for (const auto& [t, v] : events) ASSERT_TRUE(acc.Add(t, Values{v}, {}));
  HistogramTable t = acc.Finish(false);
  // INFO and WARN have 2 each (ties: smaller value first); ERROR and DEBUG are other.
  EXPECT_EQ(t.keys, (std::vector<std::string>{"INFO", "WARN"}));
  ASSERT_EQ(t.buckets.size(), 2u);
  EXPECT_EQ(t.buckets[0].by_key[0].count, 1u);
  EXPECT_EQ(t.buckets[0].by_key[1].count, 1u);
  EXPECT_EQ(t.buckets[0].other.count, 0u);
  EXPECT_EQ(t.buckets[1].other.count, 2u);
}

TEST(HistogramAccumulatorTest, DiscoveryStopsPastTheLimit) {
  HistogramAccumulator acc(0, 100, Spec(100, "run"), std::nullopt);
  std::vector<std::string> names;
  for (std::size_t i = 0; i <= HistogramAccumulator::kMaxDiscoveredValues; ++i)
    names.push_back("r" + std::to_string(i));
  for (std::size_t i = 0; i < HistogramAccumulator::kMaxDiscoveredValues; ++i) {
    ASSERT_TRUE(acc.Add(1, Values{names[i]}, {}));
    ASSERT_TRUE(acc.Add(2, Values{names[i]}, {}));  // known values stay fine
  }
  EXPECT_FALSE(acc.Add(3, Values{names.back()}, {}));
}

TEST(HistogramAccumulatorTest, NumbersGoToEveryCellOfTheEvent) {
  HistogramAccumulator acc(0, 100, Spec(100, "host"), std::vector<std::string>{"a"});
  const double v1[] = {10, 20}, v2[] = {5}, v3[] = {1};
  acc.Add(1, Values{"a"}, v1);
  acc.Add(2, Values{"b"}, v2);
  acc.Add(3, {}, v3);
  acc.Add(4, Values{"a"}, {});
  HistogramTable t = acc.Finish(false);
  const auto& b = t.buckets.at(0);
  EXPECT_EQ(b.total.count, 4u);
  EXPECT_EQ(b.total.value.count, 4u);
  EXPECT_DOUBLE_EQ(b.total.value.sum, 36);
  EXPECT_DOUBLE_EQ(b.total.value.min, 1);
  EXPECT_DOUBLE_EQ(b.total.value.max, 20);
  EXPECT_EQ(b.by_key[0].count, 2u);
  EXPECT_EQ(b.by_key[0].value.count, 2u);
  EXPECT_DOUBLE_EQ(b.by_key[0].value.sum, 30);
  EXPECT_DOUBLE_EQ(b.other.value.max, 5);
  EXPECT_DOUBLE_EQ(b.missing.value.min, 1);
}

}  // namespace
}  // namespace dashcam::storage
