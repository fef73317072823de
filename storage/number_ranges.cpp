#include "storage/number_ranges.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>

namespace dashcam::storage {
namespace {

// Below 2^53 every integer is a double, so a plain number's text and its
// double have the same integer part.
constexpr double kExactLimit = 9007199254740992.0;

bool MayBeNumber(std::string_view text) {
  if (text.empty()) return false;
  const char c = text[0];
  // from_chars also reads "inf", "infinity" and "nan", in any case.
  return (c >= '0' && c <= '9') || c == '-' || c == '.' || c == 'i' || c == 'I' || c == 'n' ||
         c == 'N';
}

bool IsPlain(std::string_view text, double v) {
  return text.find_first_of("eE") == std::string_view::npos && std::fabs(v) < kExactLimit;
}

std::int64_t Pow10(int n) {
  std::int64_t p = 1;
  for (int i = 0; i < n; ++i) p *= 10;
  return p;
}

int Digits(std::int64_t v) {
  int d = 1;
  while (v >= 10) {
    v /= 10;
    ++d;
  }
  return d;
}

// Appends, for the integers in [a, b] (0 <= a <= b < 2^53), the decimal
// prefixes that cover them: for each length, the aligned blocks of the
// range, a block of 10^k numbers given by its digits without the last k.
void AppendDecimalPrefixes(std::int64_t a, std::int64_t b, std::string_view sign,
                           std::vector<std::string>& out) {
  for (int d = Digits(a); d <= Digits(b); ++d) {
    std::int64_t lo = std::max(a, d == 1 ? 0 : Pow10(d - 1));
    const std::int64_t hi = std::min(b, Pow10(d) - 1);
    while (lo <= hi) {
      int k = 0;
      while (k + 1 < d && lo % Pow10(k + 1) == 0 && lo + Pow10(k + 1) - 1 <= hi) ++k;
      out.push_back(std::string(sign) + std::to_string(lo / Pow10(k)));
      lo += Pow10(k);
    }
  }
}

// Sorted, without those another one is a prefix of.
std::vector<std::string> Minimal(std::vector<std::string> prefixes) {
  std::sort(prefixes.begin(), prefixes.end());
  std::vector<std::string> out;
  for (std::string& p : prefixes) {
    if (!out.empty() && p.starts_with(out.back())) continue;
    out.push_back(std::move(p));
  }
  return out;
}

// Whether the integer parts of the field's numbers, all non-negative, have
// one length: lo's and hi's.
bool OneIntegerLength(const FieldNumbers& numbers) {
  return numbers.lo >= 0 && Digits(static_cast<std::int64_t>(numbers.lo)) ==
                                Digits(static_cast<std::int64_t>(numbers.hi));
}

// The exact plan of the numbers whose integer parts are in [a, b], on a
// field where OneIntegerLength holds and a and b lie between its least and
// greatest integer parts: a prefix of those digits covers exactly its
// numbers. Nullopt past kMaxNumberPrefixes.
std::optional<NumberRangePlan> ExactPrefixPlan(double a, double b) {
  NumberRangePlan plan;
  if (a > b) {
    plan.kind = NumberRangePlan::Kind::kNone;
    return plan;
  }
  AppendDecimalPrefixes(static_cast<std::int64_t>(a), static_cast<std::int64_t>(b), "",
                        plan.prefixes);
  plan.prefixes = Minimal(std::move(plan.prefixes));
  if (plan.prefixes.size() > kMaxNumberPrefixes) return std::nullopt;
  plan.kind = NumberRangePlan::Kind::kPrefixes;
  plan.exact = true;
  return plan;
}

// The plan of a range over a field whose numbers are all non-negative
// integers of one length (FieldNumbers::integers, lo and hi of as many
// digits), whose prefixes then are exact: the integers the bounds admit,
// clipped to the field's, as prefixes. Nullopt for other fields.
std::optional<NumberRangePlan> ExactIntegerPlan(const query::Range& r, double lower, double upper,
                                                const FieldNumbers& numbers) {
  if (!numbers.integers || !OneIntegerLength(numbers)) return std::nullopt;
  // The least and greatest integers within the bounds: > 7 is >= 8, < 7.5 is <= 7.
  const double first = r.include_lower ? std::ceil(lower) : std::floor(lower) + 1;
  const double last = r.include_upper ? std::floor(upper) : std::ceil(upper) - 1;
  const double a = std::max(first, numbers.lo), b = std::min(last, numbers.hi);
  return ExactPrefixPlan(a, b);
}

// The plan of a range over a field of positive plain numbers whose integer
// parts are all of one length (lo and hi of as many digits), decimals
// included, where the range admits whole integer parts: from the field's
// least or `>= L`, to the field's greatest or `< U`, for integers L and U.
// A prefix of the integer part's digits then stands for exactly the
// numbers whose integer part it covers (`loss:<1` is every `0.…`). Zero is
// left out since its text may be "-0". Nullopt for other fields and bounds.
std::optional<NumberRangePlan> ExactPlainPlan(const query::Range& r, double lower, double upper,
                                              const FieldNumbers& numbers) {
  if (!(numbers.lo > 0) || !OneIntegerLength(numbers)) return std::nullopt;
  const bool integral_lower = std::floor(lower) == lower && r.include_lower;
  const bool integral_upper = std::floor(upper) == upper && !r.include_upper;
  const bool below_all = lower < numbers.lo || (lower == numbers.lo && r.include_lower);
  const bool above_all = upper > numbers.hi || (upper == numbers.hi && r.include_upper);
  if (!(below_all || integral_lower) || !(above_all || integral_upper)) return std::nullopt;
  const double a = below_all ? std::floor(numbers.lo) : std::max(lower, std::floor(numbers.lo));
  const double b = above_all ? std::floor(numbers.hi) : std::min(upper - 1, std::floor(numbers.hi));
  return ExactPrefixPlan(a, b);
}

}  // namespace

void FieldNumbers::Widen(const FieldNumbers& o) {
  lo = std::min(lo, o.lo);
  hi = std::max(hi, o.hi);
  plain = plain && o.plain;
  strings = strings || o.strings;
  integers = integers && o.integers;
}

std::optional<double> ReadNumber(std::string_view text) {
  double d = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), d);
  if (text.empty() || ec != std::errc() || p != text.data() + text.size()) return std::nullopt;
  return d;
}

FieldNumbers* NumberRangeCollector::Row(std::string_view name, double first) {
  for (auto& [field, numbers] : pending_) {
    if (field == name) return &numbers;
  }
  pending_.emplace_back(std::string(name), FieldNumbers{first, first, true, false, true});
  return &pending_.back().second;
}

void NumberRangeCollector::Add(std::string_view name, char type, std::string_view value) {
  if (type == 'n') {
    const auto v = ReadNumber(value);
    if (!v || std::isnan(*v)) return;
    FieldNumbers* row = Row(name, *v);
    // A sign too: "-0" is not a prefix of the numbers from 0 up.
    const bool integer = value.find_first_of(".eE-") == std::string_view::npos;
    row->Widen(FieldNumbers{*v, *v, IsPlain(value, *v), false, integer});
    return;
  }
  if (!MayBeNumber(value)) return;
  const auto v = ReadNumber(value);
  // NaN is within no range: it cannot make an event match.
  if (!v || std::isnan(*v)) return;
  Row(name, *v)->Widen(FieldNumbers{*v, *v, true, true, false});
}

NumberRangePlan PlanNumberRange(const query::Range& r, const std::optional<FieldNumbers>& numbers) {
  NumberRangePlan plan;
  constexpr double kInf = std::numeric_limits<double>::infinity();
  const auto lower = r.lower.empty() ? std::optional<double>(-kInf) : ReadNumber(r.lower);
  const auto upper = r.upper.empty() ? std::optional<double>(kInf) : ReadNumber(r.upper);
  if (!lower || !upper) return plan;  // not a numeric range
  // Nothing lies between NaN and anything (kRange compares with >= and <=).
  const bool nothing = std::isnan(*lower) || std::isnan(*upper) || !numbers;
  if (nothing) {
    plan.kind = NumberRangePlan::Kind::kNone;
    return plan;
  }
  if (numbers->strings || !numbers->plain) return plan;
  if (auto exact = ExactIntegerPlan(r, *lower, *upper, *numbers)) return *exact;
  if (auto exact = ExactPlainPlan(r, *lower, *upper, *numbers)) return *exact;
  const double lo = std::max(*lower, numbers->lo);
  const double hi = std::min(*upper, numbers->hi);
  if (lo > hi) {
    plan.kind = NumberRangePlan::Kind::kNone;
    return plan;
  }
  // Both within the field's plain numbers: below 2^53 in magnitude.
  std::vector<std::string> prefixes;
  if (hi >= 0) {
    AppendDecimalPrefixes(static_cast<std::int64_t>(std::floor(std::max(lo, 0.0))),
                          static_cast<std::int64_t>(std::floor(hi)), "", prefixes);
  }
  if (lo < 0) {
    // -v for v in [lo, min(hi, 0)]: the text is '-' and the magnitude's.
    AppendDecimalPrefixes(static_cast<std::int64_t>(std::floor(-std::min(hi, 0.0))),
                          static_cast<std::int64_t>(std::floor(-lo)), "-", prefixes);
  }
  prefixes = Minimal(std::move(prefixes));
  if (prefixes.size() > kMaxNumberPrefixes) return plan;
  plan.kind = NumberRangePlan::Kind::kPrefixes;
  plan.prefixes = std::move(prefixes);
  return plan;
}

}  // namespace dashcam::storage
