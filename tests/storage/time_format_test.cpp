// Tests for storage/time_format.h: parsing the time forms clients send and
// formatting the one form dashcam answers with.
#include "storage/time_format.h"

#include <optional>
#include <string>

#include <gtest/gtest.h>

namespace dashcam {
namespace {

// 2026-11-29T10:23:15Z and the start of that day, computed independently:
// 2026-11-29 is day 20786 since the epoch.
constexpr std::int64_t kDay = 20786;
constexpr TimeMs kMidnight = kDay * kMsPerDay;
constexpr TimeMs kBase = kMidnight + (10 * 3600 + 23 * 60 + 15) * 1000LL;
constexpr TimeMs kHour = 3'600'000;
constexpr TimeMs kMinute = 60'000;

struct ParseCase {
  const char* text;
  std::optional<TimeMs> want;
};

void ExpectParses(const std::vector<ParseCase>& cases) {
  for (const ParseCase& c : cases) {
    SCOPED_TRACE(c.text);
    EXPECT_EQ(ParseRfc3339(c.text), c.want);
  }
}

TEST(TimeFormatTest, ParsesUtcForms) {
  ExpectParses({
      {"2026-11-29T10:23:15Z", kBase},
      {"2026-11-29t10:23:15z", kBase},
      {"2026-11-29T10:23:15", kBase},  // no offset: UTC
      {"2026-11-29 10:23:15Z", kBase},
      {"2026-11-29T10:23", kBase - 15'000},
      {"2026-11-29T10:00", kMidnight + 10 * kHour},
      {"2026-11-29", kMidnight},
      {"1970-01-01T00:00:00Z", 0},
      {"2199-12-31T23:59:59.999Z", kMaxEventTime - 1},
      {"2024-02-29T00:00:00Z", 19782 * kMsPerDay},  // leap day
  });
}

TEST(TimeFormatTest, AppliesOffsets) {
  ExpectParses({
      {"2026-11-29T15:53:15+05:30", kBase},
      {"2026-11-29T15:53:15+0530", kBase},
      {"2026-11-29T02:23:15-0800", kBase},
      {"2026-11-29T02:23:15-08:00", kBase},
      {"2026-11-29T10:23:15+00:00", kBase},
      {"2026-11-30T00:23:15+14:00", kBase},
      // An offset can move the instant into the previous day.
      {"2026-11-29T01:00:00+02:00", kMidnight - kHour},
  });
}

TEST(TimeFormatTest, FractionsAreTruncatedToMilliseconds) {
  ExpectParses({
      {"2026-11-29T10:23:15.1Z", kBase + 100},
      {"2026-11-29T10:23:15.12Z", kBase + 120},
      {"2026-11-29T10:23:15.123Z", kBase + 123},
      {"2026-11-29T10:23:15.1239Z", kBase + 123},
      {"2026-11-29T10:23:15.999999Z", kBase + 999},
      {"2026-11-29T10:23:15.123456789Z", kBase + 123},
      {"2026-11-29T10:23:15,5Z", kBase + 500},
      {"2026-11-29T10:23:15.000000001+01:00", kBase - kHour},
  });
}

TEST(TimeFormatTest, RejectsMalformed) {
  ExpectParses({
      {"", std::nullopt},
      {"2026-02-30", std::nullopt},
      {"2025-02-29T00:00:00Z", std::nullopt},  // not a leap year
      {"2026-13-01T00:00:00Z", std::nullopt},
      {"2026-00-10T00:00:00Z", std::nullopt},
      {"2026-11-00", std::nullopt},
      {"2026-11-29T24:00:00Z", std::nullopt},
      {"2026-11-29T10:60:00Z", std::nullopt},
      {"2026-11-29T10:23:61Z", std::nullopt},
      {"2026-11-29T10:23:15.Z", std::nullopt},  // a dot needs digits
      {"2026-11-29T10Z", std::nullopt},
      {"2026-11-29T", std::nullopt},
      {"2026-11-29T10:23:15Zjunk", std::nullopt},
      {"2026-11-29T10:23:15Z ", std::nullopt},
      {"2026-11-29x", std::nullopt},
      {"2026-11-29T10:23:15+05", std::nullopt},
      {"2026-11-29T10:23:15+24:00", std::nullopt},
      {"2026-11-29T10:23:15+05:60", std::nullopt},
      {"26-11-29", std::nullopt},
      {"2026/11/29", std::nullopt},
      {"2026-1-29", std::nullopt},
      {"１９７０-01-01", std::nullopt},
  });
}

TEST(TimeFormatTest, TimeParamForms) {
  const TimeMs now = kBase;
  struct Case {
    const char* text;
    std::optional<TimeMs> want;
  };
  const Case cases[] = {
      {"1764411795000", 1764411795000},
      {"0", 0},
      {"now", now},
      {"now-15m", now - 15 * kMinute},
      {"now-2h", now - 2 * kHour},
      {"now-7d", now - 7 * kMsPerDay},
      {"now+1d", now + kMsPerDay},
      {"now-30s", now - 30'000},
      {"now-500ms", now - 500},
      {"now-1w", now - 7 * kMsPerDay},
      {"2026-11-29T10:23:15Z", kBase},
      {"2026-11-29", kMidnight},
      {"", std::nullopt},
      {"now-", std::nullopt},
      {"now-5", std::nullopt},
      {"now-5y", std::nullopt},
      {"now-5M", std::nullopt},
      {"now-m", std::nullopt},
      {"now 5m", std::nullopt},
      {"now*5m", std::nullopt},
      {"now-5mm", std::nullopt},
      {"nowish", std::nullopt},
      {"now--5m", std::nullopt},  // the sign is written once
      {"now+-5m", std::nullopt},
      {"now-99999999999999d", std::nullopt},  // would overflow
      {"99999999999999999999999", std::nullopt},
      {"-5", std::nullopt},
      {"yesterday", std::nullopt},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    EXPECT_EQ(ParseTimeParam(c.text, now), c.want);
  }
}

TEST(TimeFormatTest, FormatsWithThreeFractionDigits) {
  EXPECT_EQ(FormatRfc3339Ms(0), "1970-01-01T00:00:00.000Z");
  EXPECT_EQ(FormatRfc3339Ms(kBase), "2026-11-29T10:23:15.000Z");
  EXPECT_EQ(FormatRfc3339Ms(kBase + 7), "2026-11-29T10:23:15.007Z");
  EXPECT_EQ(FormatRfc3339Ms(kMaxEventTime - 1), "2199-12-31T23:59:59.999Z");
  EXPECT_EQ(FormatRfc3339Ms(kMaxEventTime), "2200-01-01T00:00:00.000Z");
}

TEST(TimeFormatTest, FormatParseRoundTrip) {
  const TimeMs samples[] = {0,
                            1,
                            999,
                            kMsPerDay - 1,
                            kBase + 123,
                            951782400000,  // 2000-02-29
                            4102444800000 - 1,
                            kMaxEventTime - 1,
                            DayStart(83'000) + 12 * kHour + 34 * kMinute + 56'789};  // 2197
  for (TimeMs t : samples) {
    SCOPED_TRACE(t);
    const std::string text = FormatRfc3339Ms(t);
    EXPECT_EQ(ParseRfc3339(text), t) << text;
    EXPECT_EQ(ParseTimeParam(text, 0), t) << text;
  }
}

TEST(TimeFormatTest, DayOfAndDayStart) {
  EXPECT_EQ(DayOf(0), 0);
  EXPECT_EQ(DayOf(kMsPerDay - 1), 0);
  EXPECT_EQ(DayOf(kMsPerDay), 1);
  EXPECT_EQ(DayOf(-1), -1);  // floor, not truncation toward zero
  EXPECT_EQ(DayOf(-kMsPerDay), -1);
  EXPECT_EQ(DayOf(-kMsPerDay - 1), -2);
  EXPECT_EQ(DayOf(kBase), kDay);
  EXPECT_EQ(DayStart(kDay), kMidnight);
  EXPECT_EQ(DayOf(kMaxEventTime - 1), DayOf(kMaxEventTime) - 1);
}

TEST(TimeFormatTest, FormatDayAndParseDay) {
  EXPECT_EQ(FormatDay(0), "1970-01-01");
  EXPECT_EQ(FormatDay(kDay), "2026-11-29");
  EXPECT_EQ(FormatDay(DayOf(kMaxEventTime - 1)), "2199-12-31");
  EXPECT_EQ(ParseDay("2026-11-29"), kDay);
  EXPECT_EQ(ParseDay("1970-01-01"), 0);
  for (std::int64_t day : std::vector<std::int64_t>{0, 1, 59, 10957, kDay, 83000}) {
    EXPECT_EQ(ParseDay(FormatDay(day)), day) << day;
  }
  EXPECT_EQ(ParseDay("2026-02-30"), std::nullopt);
  EXPECT_EQ(ParseDay("2026-11-29T00:00"), std::nullopt);  // a day, nothing more
  EXPECT_EQ(ParseDay("2026-11-2"), std::nullopt);
  EXPECT_EQ(ParseDay("2026-11-29Z"), std::nullopt);
  EXPECT_EQ(ParseDay(""), std::nullopt);
}

}  // namespace
}  // namespace dashcam
