// Tests for storage/number_ranges.h: the collector's rows and the prefix
// plans, checked against every integer of the ranges they cover.
#include "storage/number_ranges.h"

#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "storage/attrs_codec.h"

namespace dashcam::storage {
namespace {

using Kind = NumberRangePlan::Kind;
using Prefixes = std::vector<std::string>;

query::Range R(std::string lo, std::string hi, bool inc_lo = true, bool inc_hi = true) {
  return query::Range{"f", std::move(lo), std::move(hi), inc_lo, inc_hi};
}

FieldNumbers Span(double lo, double hi) {
  return FieldNumbers{lo, hi, true, false};
}

bool Covered(const Prefixes& prefixes, const std::string& text) {
  for (const std::string& p : prefixes) {
    if (text.starts_with(p)) return true;
  }
  return false;
}

TEST(NumberRangesTest, PrefixesClipToTheFieldsSpan) {
  NumberRangePlan p = PlanNumberRange(R("77998", ""), Span(0, 78000));
  EXPECT_EQ(p.kind, Kind::kPrefixes);
  EXPECT_EQ(p.prefixes, (Prefixes{"77998", "77999", "78000"}));
  p = PlanNumberRange(R("70000", "", false), Span(52000, 78000));
  EXPECT_EQ(p.kind, Kind::kPrefixes);
  EXPECT_EQ(p.prefixes, (Prefixes{"70", "71", "72", "73", "74", "75", "76", "77", "78000"}));
  // Below zero: '-' and the magnitude's prefixes; 0 itself has no sign.
  p = PlanNumberRange(R("-12", "3"), Span(-100, 100));
  EXPECT_EQ(p.prefixes, (Prefixes{"-0", "-1", "-2", "-3", "-4", "-5", "-6", "-7", "-8", "-9", "0",
                                  "1", "2", "3"}));
}

TEST(NumberRangesTest, NothingOutsideTheSpan) {
  EXPECT_EQ(PlanNumberRange(R("80000", ""), Span(0, 78000)).kind, Kind::kNone);
  EXPECT_EQ(PlanNumberRange(R("", "-1"), Span(0, 78000)).kind, Kind::kNone);
  EXPECT_EQ(PlanNumberRange(R("1", "2"), std::nullopt).kind, Kind::kNone);  // no numbers
  EXPECT_EQ(PlanNumberRange(R("nan", ""), Span(0, 1)).kind, Kind::kNone);
}

TEST(NumberRangesTest, ScansWhenPrefixesCannotTell) {
  FieldNumbers strings = Span(0, 10);
  strings.strings = true;
  EXPECT_EQ(PlanNumberRange(R("1", "2"), strings).kind, Kind::kScan);
  FieldNumbers exponents = Span(0, 1e20);
  exponents.plain = false;
  EXPECT_EQ(PlanNumberRange(R("1", "2"), exponents).kind, Kind::kScan);
  EXPECT_EQ(PlanNumberRange(R("a", "b"), Span(0, 10)).kind, Kind::kScan);  // not numeric
}

// Every integer and half of a range is covered by its prefixes, and the
// prefixes are few and minimal.
TEST(NumberRangesTest, PrefixesCoverEveryNumberOfTheRange) {
  const std::vector<std::pair<int, int>> ranges = {
      {0, 0},    {0, 9},      {7, 7},        {9, 10},     {99, 101},  {123, 4567},
      {-57, -3}, {-999, 999}, {1000, 99999}, {-5000, 12}, {10, 10000}};
  for (const auto& [lo, hi] : ranges) {
    const NumberRangePlan p =
        PlanNumberRange(R(std::to_string(lo), std::to_string(hi)), Span(-1e6, 1e6));
    ASSERT_EQ(p.kind, Kind::kPrefixes) << lo << " " << hi;
    EXPECT_LE(p.prefixes.size(), kMaxNumberPrefixes);
    for (int v = lo; v <= hi; ++v) {
      ASSERT_TRUE(Covered(p.prefixes, std::to_string(v))) << v << " in " << lo << ".." << hi;
      if (v < hi) {
        const std::string half = CanonicalDouble(v + 0.5);
        ASSERT_TRUE(Covered(p.prefixes, half)) << half << " in " << lo << ".." << hi;
      }
    }
    for (std::size_t i = 1; i < p.prefixes.size(); ++i) {
      EXPECT_FALSE(p.prefixes[i].starts_with(p.prefixes[i - 1])) << p.prefixes[i];
    }
  }
}

// A field of non-negative integers of one length: each prefix stands for
// exactly its integers, so the plan is the answer, whatever the bounds
// (inclusive or not, fractional).
TEST(NumberRangesTest, IntegersOfOneLengthArePlannedExactly) {
  const FieldNumbers ints{52000, 78000, true, false, true};
  struct Bounds {
    std::string lo, hi;
    bool inc_lo, inc_hi;
  };
  const std::vector<Bounds> cases = {
      {"70000", "", false, true},         {"70000", "", true, true},
      {"", "60000", true, false},         {"", "60000", true, true},
      {"70000.5", "71000.5", true, true}, {"70000.5", "71000.5", false, false},
      {"61234", "61234", true, true},     {"61234", "61234", false, true},
      {"-5", "52001", true, true},        {"77999.2", "77999.8", true, true},
      {"52000", "78000", false, false},   {"1e4", "6e4", true, true},
  };
  for (const Bounds& b : cases) {
    SCOPED_TRACE(b.lo + " " + b.hi + " " + std::to_string(b.inc_lo) + std::to_string(b.inc_hi));
    const NumberRangePlan p = PlanNumberRange(R(b.lo, b.hi, b.inc_lo, b.inc_hi), ints);
    const double lo = b.lo.empty() ? -1e300 : std::stod(b.lo);
    const double hi = b.hi.empty() ? 1e300 : std::stod(b.hi);
    int in_range = 0;
    for (int v = 52000; v <= 78000; ++v) {
      const bool want = (b.inc_lo ? v >= lo : v > lo) && (b.inc_hi ? v <= hi : v < hi);
      in_range += want;
      const bool covered = p.kind == Kind::kPrefixes && Covered(p.prefixes, std::to_string(v));
      ASSERT_EQ(covered, want) << v;
    }
    if (in_range == 0) {
      EXPECT_EQ(p.kind, Kind::kNone);
    } else {
      EXPECT_TRUE(p.exact);
      EXPECT_LE(p.prefixes.size(), kMaxNumberPrefixes);
    }
  }
  // Candidates only: other lengths, a sign, or numbers not all integers.
  EXPECT_FALSE(PlanNumberRange(R("70000", ""), FieldNumbers{5, 78000, true, false, true}).exact);
  EXPECT_FALSE(PlanNumberRange(R("-5", ""), FieldNumbers{-9, 9, true, false, true}).exact);
  EXPECT_FALSE(PlanNumberRange(R("70000", "", false), Span(52000, 78000)).exact);
}

// A field of positive decimals whose integer parts have one length (a
// loss in (0, 10)): a range that admits whole integer parts is planned
// exactly, and every value is covered exactly when it is in the range.
// Bounds that cut an integer part give candidates only.
TEST(NumberRangesTest, DecimalsOfOneIntegerLengthArePlannedExactlyOnWholeParts) {
  struct Case {
    FieldNumbers span;
    std::string lo, hi;
    bool inc_lo, inc_hi;
    bool exact;
  };
  const FieldNumbers loss = Span(0.0125, 9.875), big = Span(10.5, 99.25);
  const std::vector<Case> cases = {
      {loss, "", "1", true, false, true},       {loss, "1", "", true, true, true},
      {loss, "2", "5", true, false, true},      {loss, "", "", true, true, true},
      {loss, "0", "10", true, true, true},      {loss, "0.0125", "9.875", true, true, true},
      {loss, "3", "3", true, false, true},      {big, "20", "40", true, false, true},
      {big, "", "11", true, false, true},       {loss, "", "1", true, true, false},
      {loss, "1", "", false, true, false},      {loss, "0.5", "", true, true, false},
      {loss, "0.0125", "", false, true, false}, {big, "", "40.5", true, true, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.lo + " " + c.hi + " " + std::to_string(c.inc_lo) + std::to_string(c.inc_hi));
    const NumberRangePlan p = PlanNumberRange(R(c.lo, c.hi, c.inc_lo, c.inc_hi), c.span);
    EXPECT_EQ(p.exact || p.kind == Kind::kNone, c.exact);  // nothing admitted: none
    const double lo = c.lo.empty() ? -1e300 : std::stod(c.lo);
    const double hi = c.hi.empty() ? 1e300 : std::stod(c.hi);
    int in_range = 0;
    for (int k = 0; k <= 100'000; ++k) {
      const double v = c.span.lo + (c.span.hi - c.span.lo) * k / 100'000;
      const bool want = (c.inc_lo ? v >= lo : v > lo) && (c.inc_hi ? v <= hi : v < hi);
      in_range += want;
      const bool covered = p.kind == Kind::kPrefixes && Covered(p.prefixes, CanonicalDouble(v));
      if (want) ASSERT_TRUE(covered) << CanonicalDouble(v);
      if (p.exact) ASSERT_EQ(covered, want) << CanonicalDouble(v);
    }
    if (c.exact && in_range == 0) EXPECT_EQ(p.kind, Kind::kNone);
  }
  // Zero may be written "-0"; integer parts of two lengths; a sign.
  EXPECT_FALSE(PlanNumberRange(R("", "1", true, false), Span(0, 9.5)).exact);
  EXPECT_FALSE(PlanNumberRange(R("", "1", true, false), Span(0.5, 10.5)).exact);
  EXPECT_FALSE(PlanNumberRange(R("", "1", true, false), Span(-0.5, 9.5)).exact);
}

TEST(NumberRangesTest, CollectorWidensPerField) {
  NumberRangeCollector c;
  c.Add("gpu", 'n', "3");
  c.Add("gpu", 'n', "-7.5");
  c.Add("host", 's', "gpu-node-03");  // not a number: no row
  c.Add("code", 's', "137");          // a string that reads as one
  c.Add("lr", 'n', "1.3e-04");        // an exponent: not plain
  c.Add("big", 'n', "9007199254740993");
  c.Add("odd", 'k', "nan");  // matches no range: no row
  const auto& rows = c.pending();
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[0].first, "gpu");
  EXPECT_EQ(rows[0].second.lo, -7.5);
  EXPECT_EQ(rows[0].second.hi, 3);
  EXPECT_TRUE(rows[0].second.plain);
  EXPECT_FALSE(rows[0].second.strings);
  EXPECT_EQ(rows[1].first, "code");
  EXPECT_TRUE(rows[1].second.strings);
  EXPECT_EQ(rows[2].first, "lr");
  EXPECT_FALSE(rows[2].second.plain);
  EXPECT_EQ(rows[3].first, "big");
  EXPECT_FALSE(rows[3].second.plain);  // past 2^53 its double is not its text
  // Integers: while every number is written without a point or exponent.
  EXPECT_FALSE(rows[0].second.integers);  // -7.5
  EXPECT_FALSE(rows[1].second.integers);  // a string
  EXPECT_FALSE(rows[2].second.integers);
  EXPECT_TRUE(rows[3].second.integers);
  c.Clear();
  EXPECT_TRUE(c.pending().empty());
}

}  // namespace
}  // namespace dashcam::storage
