// Tests for the pure parts of the exploration handlers: histogram intervals
// (api/histogram_handler.h) and --context-scope (api/context_handler.h).
#include <gtest/gtest.h>

#include "api/context_handler.h"
#include "api/histogram_handler.h"

namespace dashcam::api {
namespace {

constexpr TimeMs kMinute = 60'000, kHour = 60 * kMinute, kDay = 24 * kHour;

TEST(HistogramIntervalTest, AutoGivesSixtyToOneHundredTwentyBuckets) {
  for (TimeMs span = 60'000; span < 3650 * kDay; span = span * 11 / 10 + 1) {
    const TimeMs w = AutoInterval(span);
    const TimeMs buckets = (span + w - 1) / w;
    EXPECT_GE(buckets, 48) << span << " -> " << FormatInterval(w);
    EXPECT_LE(buckets, 120) << span << " -> " << FormatInterval(w);
  }
  EXPECT_EQ(AutoInterval(kHour), kMinute);
  EXPECT_EQ(AutoInterval(kDay), 15 * kMinute);
  EXPECT_EQ(AutoInterval(7 * kDay), 2 * kHour);
  EXPECT_EQ(AutoInterval(15 * kMinute), 15'000);
  EXPECT_EQ(AutoInterval(1), 1);
  EXPECT_LE(100 * kDay * 365 / AutoInterval(100 * kDay * 365), 120);
}

TEST(HistogramIntervalTest, FormatIsTheShortestExactSpelling) {
  EXPECT_EQ(FormatInterval(30'000), "30s");
  EXPECT_EQ(FormatInterval(kMinute), "1m");
  EXPECT_EQ(FormatInterval(90'000), "90s");
  EXPECT_EQ(FormatInterval(kHour), "1h");
  EXPECT_EQ(FormatInterval(kDay), "1d");
  EXPECT_EQ(FormatInterval(14 * kDay), "2w");
  EXPECT_EQ(FormatInterval(250), "250ms");
}

TEST(ContextScopesTest, ParsesRulesAndRejectsBadNames) {
  using Rules = std::vector<std::vector<std::string>>;
  auto ok = [](std::string_view text) {
    auto r = ParseContextScopes(text);
    EXPECT_TRUE(std::holds_alternative<Rules>(r)) << text;
    return std::holds_alternative<Rules>(r) ? std::get<Rules>(r) : Rules{};
  };
  EXPECT_EQ(ok("host.name+log.file.path,agent.id,_index"),
            (Rules{{"host.name", "log.file.path"}, {"agent.id"}, {"_index"}}));
  EXPECT_EQ(ok("user"), (Rules{{"user"}}));
  EXPECT_EQ(ok(""), Rules{});
  for (const char* bad : {",", "a,", "+a", "a++b", "a b", "a,b;c", "host:name"}) {
    auto r = ParseContextScopes(bad);
    ASSERT_TRUE(std::holds_alternative<std::string>(r)) << bad;
    EXPECT_NE(std::get<std::string>(r).find("--context-scope"), std::string::npos);
  }
}

}  // namespace
}  // namespace dashcam::api
