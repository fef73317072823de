#include "storage/time_format.h"

#include <charconv>
#include <chrono>

#include <fmt/format.h>

namespace dashcam {
namespace {

namespace chr = std::chrono;

// Reads exactly `n` digits at `pos`; advances pos.
std::optional<int> Digits(std::string_view s, std::size_t& pos, std::size_t n) {
  if (pos + n > s.size()) return std::nullopt;
  int v = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const char c = s[pos + i];
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  pos += n;
  return v;
}

bool Eat(std::string_view s, std::size_t& pos, char c) {
  if (pos < s.size() && s[pos] == c) {
    ++pos;
    return true;
  }
  return false;
}

std::optional<std::int64_t> DaysFromCivil(int y, int m, int d) {
  const chr::year_month_day ymd{chr::year{y}, chr::month{static_cast<unsigned>(m)},
                                chr::day{static_cast<unsigned>(d)}};
  if (!ymd.ok()) return std::nullopt;
  return chr::sys_days{ymd}.time_since_epoch().count();
}

// Parses "+hh:mm", "-hhmm", "Z"; returns the offset in minutes.
std::optional<int> Offset(std::string_view s, std::size_t& pos) {
  if (pos == s.size()) return 0;
  if (s[pos] == 'Z' || s[pos] == 'z') {
    ++pos;
    return 0;
  }
  if (s[pos] != '+' && s[pos] != '-') return std::nullopt;
  const int sign = s[pos] == '-' ? -1 : 1;
  ++pos;
  auto hh = Digits(s, pos, 2);
  if (!hh) return std::nullopt;
  Eat(s, pos, ':');
  auto mm = Digits(s, pos, 2);
  if (!mm || *hh > 23 || *mm > 59) return std::nullopt;
  return sign * (*hh * 60 + *mm);
}

// Parses "hh:mm[:ss[.fff...]]" into milliseconds of the day.
std::optional<std::int64_t> TimeOfDay(std::string_view s, std::size_t& pos) {
  auto hh = Digits(s, pos, 2);
  if (!hh || !Eat(s, pos, ':')) return std::nullopt;
  auto mm = Digits(s, pos, 2);
  if (!mm) return std::nullopt;
  int ss = 0, ms = 0;
  if (Eat(s, pos, ':')) {
    auto sec = Digits(s, pos, 2);
    if (!sec) return std::nullopt;
    ss = *sec;
    if (Eat(s, pos, '.') || Eat(s, pos, ',')) {
      std::size_t digits = 0;
      while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') {
        if (digits < 3) ms = ms * 10 + (s[pos] - '0');
        ++digits;
        ++pos;
      }
      if (digits == 0) return std::nullopt;
      for (std::size_t i = digits; i < 3; ++i) ms *= 10;
    }
  }
  if (*hh > 23 || *mm > 59 || ss > 60) return std::nullopt;  // 60: leap second
  return ((*hh * 60LL + *mm) * 60 + ss) * 1000 + ms;
}

}  // namespace

std::optional<TimeMs> ParseRfc3339(std::string_view s) {
  std::size_t pos = 0;
  auto y = Digits(s, pos, 4);
  if (!y || !Eat(s, pos, '-')) return std::nullopt;
  auto m = Digits(s, pos, 2);
  if (!m || !Eat(s, pos, '-')) return std::nullopt;
  auto d = Digits(s, pos, 2);
  if (!d) return std::nullopt;
  auto days = DaysFromCivil(*y, *m, *d);
  if (!days) return std::nullopt;
  std::int64_t ms_of_day = 0;
  if (pos < s.size() && (s[pos] == 'T' || s[pos] == 't' || s[pos] == ' ')) {
    ++pos;
    auto tod = TimeOfDay(s, pos);
    if (!tod) return std::nullopt;
    ms_of_day = *tod;
  }
  auto offset = Offset(s, pos);
  if (!offset || pos != s.size()) return std::nullopt;
  return *days * kMsPerDay + ms_of_day - static_cast<std::int64_t>(*offset) * 60'000;
}

std::optional<TimeMs> ParseTimeParam(std::string_view text, TimeMs now) {
  if (text.empty()) return std::nullopt;
  if (text.find_first_not_of("0123456789") == std::string_view::npos) {
    TimeMs v = 0;
    auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || p != text.data() + text.size()) return std::nullopt;
    return v;
  }
  if (text.rfind("now", 0) != 0) return ParseRfc3339(text);
  std::string_view rest = text.substr(3);
  if (rest.empty()) return now;
  const int sign = rest[0] == '-' ? -1 : rest[0] == '+' ? 1 : 0;
  if (sign == 0) return std::nullopt;
  rest.remove_prefix(1);
  // from_chars would accept a second sign ("now--5m"); the amount is digits only.
  if (rest.empty() || rest[0] < '0' || rest[0] > '9') return std::nullopt;
  std::int64_t n = 0;
  auto [p, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), n);
  if (ec != std::errc() || p == rest.data()) return std::nullopt;
  const std::string_view unit(p, static_cast<std::size_t>(rest.data() + rest.size() - p));
  std::int64_t scale = 0;
  if (unit == "ms")
    scale = 1;
  else if (unit == "s")
    scale = 1000;
  else if (unit == "m")
    scale = 60'000;
  else if (unit == "h")
    scale = 3'600'000;
  else if (unit == "d")
    scale = kMsPerDay;
  else if (unit == "w")
    scale = 7 * kMsPerDay;
  else
    return std::nullopt;
  if (n > (kMaxEventTime / scale)) return std::nullopt;
  return now + sign * n * scale;
}

std::string FormatRfc3339Ms(TimeMs t) {
  const std::int64_t day = DayOf(t);
  const std::int64_t ms_of_day = t - DayStart(day);
  const chr::year_month_day ymd{chr::sys_days{chr::days{day}}};
  const auto secs = ms_of_day / 1000;
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", static_cast<int>(ymd.year()),
                     static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()),
                     secs / 3600, (secs / 60) % 60, secs % 60, ms_of_day % 1000);
}

std::string FormatDay(std::int64_t day) {
  const chr::year_month_day ymd{chr::sys_days{chr::days{day}}};
  return fmt::format("{:04}-{:02}-{:02}", static_cast<int>(ymd.year()),
                     static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()));
}

std::optional<std::int64_t> ParseDay(std::string_view text) {
  if (text.size() != 10) return std::nullopt;
  auto t = ParseRfc3339(text);
  if (!t) return std::nullopt;
  return DayOf(*t);
}

TimeMs WallClockMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace dashcam
