// Date expression arithmetic: parse an anchor (now, a possibly partial
// RFC 3339 date, epoch milliseconds), apply +/- and rounding in order, keep
// the unit the result is precise to.
#include "api/date_math.h"

#include <charconv>
#include <chrono>
#include <optional>

namespace dashcam::api {
namespace {

namespace chr = std::chrono;

enum class Unit { kMs, kSecond, kMinute, kHour, kDay, kWeek, kMonth, kYear };

// Year 1 to year 9999: far past anything stored, small enough that no
// arithmetic below overflows.
constexpr TimeMs kEarliest = -62135596800000;
constexpr TimeMs kLatest = 253402300799999;
// Largest amount in `now-<n><unit>`: 10 million units.
constexpr std::int64_t kMaxAmount = 10'000'000;

constexpr const char* kDateReason =
    "expected a date (2026-11-29, 2026-11-29T10:00:00Z), epoch milliseconds or now";

std::optional<Unit> UnitOf(char c) {
  switch (c) {
    case 'y':
      return Unit::kYear;
    case 'M':
      return Unit::kMonth;
    case 'w':
      return Unit::kWeek;
    case 'd':
      return Unit::kDay;
    case 'h':
    case 'H':
      return Unit::kHour;
    case 'm':
      return Unit::kMinute;
    case 's':
      return Unit::kSecond;
    default:
      return std::nullopt;
  }
}

TimeMs FixedLength(Unit u) {
  switch (u) {
    case Unit::kMs:
      return 1;
    case Unit::kSecond:
      return 1000;
    case Unit::kMinute:
      return 60'000;
    case Unit::kHour:
      return 3'600'000;
    case Unit::kDay:
      return kMsPerDay;
    case Unit::kWeek:
      return 7 * kMsPerDay;
    default:
      return 0;  // calendar units
  }
}

TimeMs FloorDiv(TimeMs a, TimeMs b) {
  return a >= 0 ? a / b * b : -((-a + b - 1) / b) * b;
}

chr::year_month_day CivilDay(TimeMs t) {
  return chr::year_month_day{chr::sys_days{chr::days{DayOf(t)}}};
}

TimeMs FromCivil(chr::year_month_day ymd) {
  return DayStart(chr::sys_days{ymd}.time_since_epoch().count());
}

// The start of the `u` containing t. Weeks start on Monday.
TimeMs Floor(TimeMs t, Unit u) {
  if (u == Unit::kWeek) {
    const std::int64_t day = DayOf(t);
    const std::int64_t since_monday = ((day + 3) % 7 + 7) % 7;  // 1970-01-01 was a Thursday
    return DayStart(day - since_monday);
  }
  if (u == Unit::kMonth || u == Unit::kYear) {
    const chr::year_month_day ymd = CivilDay(t);
    const chr::month m = u == Unit::kYear ? chr::January : ymd.month();
    return FromCivil(chr::year_month_day{ymd.year(), m, chr::day{1}});
  }
  return FloorDiv(t, FixedLength(u));
}

// t plus n units; months and years keep the time of day and clamp the day
// of the month (Jan 31 + 1M is Feb 28 or 29). nullopt past year 1..9999.
std::optional<TimeMs> Add(TimeMs t, std::int64_t n, Unit u) {
  if (FixedLength(u) != 0) {
    const TimeMs r = t + n * FixedLength(u);
    if (r < kEarliest || r > kLatest) return std::nullopt;
    return r;
  }
  const chr::year_month_day ymd = CivilDay(t);
  const std::int64_t months = u == Unit::kYear ? n * 12 : n;
  const std::int64_t index = static_cast<std::int64_t>(static_cast<int>(ymd.year())) * 12 +
                             static_cast<unsigned>(ymd.month()) - 1 + months;
  const std::int64_t year = FloorDiv(index, 12) / 12;
  if (year < 1 || year > 9999) return std::nullopt;
  const chr::year_month_day_last last{
      chr::year{static_cast<int>(year)},
      chr::month_day_last{chr::month{static_cast<unsigned>(index - year * 12 + 1)}}};
  const chr::day d = std::min(ymd.day(), last.day());
  const TimeMs ms_of_day = t - DayStart(DayOf(t));
  return FromCivil(chr::year_month_day{last.year(), last.month(), d}) + ms_of_day;
}

struct Anchor {
  TimeMs start = 0;
  Unit precision = Unit::kMs;
};

bool AllDigits(std::string_view s) {
  return !s.empty() && s.find_first_not_of("0123456789") == std::string_view::npos;
}

// `hh`, `hh:mm`, `hh:mm:ss`, `hh:mm:ss.fff`: the unit the time is precise to.
std::optional<Unit> TimePrecision(std::string_view core) {
  if (core.size() == 2) return Unit::kHour;
  if (core.size() == 5) return Unit::kMinute;
  if (core.size() == 8) return Unit::kSecond;
  if (core.size() > 9) return Unit::kMs;
  return std::nullopt;
}

std::optional<Anchor> ParseDate(std::string_view s) {
  if (AllDigits(s) && s.size() != 4) {
    TimeMs v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || v > kLatest) return std::nullopt;
    return Anchor{v, Unit::kMs};
  }
  std::string full(s);
  Unit precision = Unit::kDay;
  if (s.size() == 4) {
    full += "-01-01";
    precision = Unit::kYear;
  } else if (s.size() == 7) {
    full += "-01";
    precision = Unit::kMonth;
  } else if (s.size() > 11 && (s[10] == 'T' || s[10] == 't' || s[10] == ' ')) {
    const std::string_view time = s.substr(11);
    const std::size_t zone = time.find_first_of("Zz+-");
    const std::string_view core = time.substr(0, zone);
    auto p = TimePrecision(core);
    if (!p) return std::nullopt;
    precision = *p;
    if (precision == Unit::kHour) {
      full = std::string(s.substr(0, 11)) + std::string(core) + ":00" +
             std::string(zone == std::string_view::npos ? "" : time.substr(zone));
    }
  }
  auto t = ParseRfc3339(full);
  if (!t || *t < kEarliest || *t > kLatest) return std::nullopt;
  return Anchor{*t, precision};
}

// Reads `<digits><unit>` at text[pos]; advances pos.
std::variant<std::pair<std::int64_t, Unit>, DateError> Amount(std::string_view text,
                                                              std::size_t& pos) {
  const std::size_t start = pos;
  std::int64_t n = 0;
  while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
    n = n * 10 + (text[pos] - '0');
    if (n > kMaxAmount) return DateError{"date math amount is too large", start};
    ++pos;
  }
  if (pos == start) return DateError{"expected a number after '+' or '-' in date math", pos};
  auto unit = pos < text.size() ? UnitOf(text[pos]) : std::nullopt;
  if (!unit) return DateError{"expected a unit (y M w d h m s) in date math", pos};
  ++pos;
  return std::make_pair(n, *unit);
}

}  // namespace

std::variant<DatePeriod, DateError> ResolveDate(std::string_view text, TimeMs now) {
  Anchor anchor;
  std::string_view math;
  std::size_t math_offset = 0;
  if (text.starts_with("now")) {
    anchor = Anchor{now, Unit::kMs};
    math = text.substr(3);
    math_offset = 3;
  } else {
    const std::size_t bars = text.find("||");
    auto date = ParseDate(text.substr(0, bars));
    if (!date) return DateError{kDateReason, 0};
    anchor = *date;
    if (bars != std::string_view::npos) {
      math = text.substr(bars + 2);
      math_offset = bars + 2;
    }
  }
  TimeMs t = anchor.start;
  Unit unit = anchor.precision;
  std::size_t pos = 0;
  while (pos < math.size()) {
    const char op = math[pos];
    const std::size_t op_offset = math_offset + pos;
    ++pos;
    if (op == '/') {
      auto u = pos < math.size() ? UnitOf(math[pos]) : std::nullopt;
      if (!u) return DateError{"expected a unit (y M w d h m s) after '/'", math_offset + pos};
      ++pos;
      t = Floor(t, *u);
      unit = *u;
      continue;
    }
    if (op != '+' && op != '-') {
      return DateError{"expected +<n><unit>, -<n><unit> or /<unit> in date math", op_offset};
    }
    auto amount = Amount(math, pos);
    if (auto* err = std::get_if<DateError>(&amount)) {
      err->offset += math_offset;
      return *err;
    }
    const auto [n, u] = std::get<std::pair<std::int64_t, Unit>>(amount);
    auto moved = Add(t, op == '-' ? -n : n, u);
    if (!moved) return DateError{"date math goes past the years 1 to 9999", op_offset};
    t = *moved;
  }
  auto end = Add(t, 1, unit);
  if (!end) return DateError{"date math goes past the years 1 to 9999", 0};
  return DatePeriod{t, *end - 1};
}

}  // namespace dashcam::api
