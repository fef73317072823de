// Timestamps: dashcam keeps event time as milliseconds since the Unix epoch
// (UTC). These functions parse the forms clients send and format the one
// form dashcam answers with. All are pure and thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace dashcam {

using TimeMs = std::int64_t;

// Earliest and latest event times dashcam stores: [1970-01-01, 2200-01-01).
inline constexpr TimeMs kMinEventTime = 0;
inline constexpr TimeMs kMaxEventTime = 7258118400000;  // 2200-01-01T00:00:00Z
inline constexpr TimeMs kMsPerDay = 86'400'000;

// RFC 3339 / ISO 8601 date-time: `2026-11-29T10:23:15Z`, any number of
// fraction digits (kept to the millisecond, truncated), `Z` or `+hh:mm` /
// `-hh:mm` / `+hhmm` offsets, `T` or a space between date and time. When the
// offset is missing the time is taken as UTC; seconds and the time itself may
// be omitted (`2026-11-29T10:00`, `2026-11-29`). nullopt when malformed.
std::optional<TimeMs> ParseRfc3339(std::string_view text);

// The forms a time parameter may take: RFC 3339 (as above), epoch
// milliseconds (digits only), `now`, or `now-<n><unit>` / `now+<n><unit>` with
// unit one of s m h d w (and `ms`). `now` is given by the caller.
std::optional<TimeMs> ParseTimeParam(std::string_view text, TimeMs now);

// The wall clock (the system clock) in epoch milliseconds.
TimeMs WallClockMs();

// `2026-11-29T10:23:15.123Z`: UTC, always three fraction digits.
std::string FormatRfc3339Ms(TimeMs t);

// The UTC day number (days since 1970-01-01) of a time, and the day's start.
inline std::int64_t DayOf(TimeMs t) {
  return t >= 0 ? t / kMsPerDay : (t - kMsPerDay + 1) / kMsPerDay;
}
inline TimeMs DayStart(std::int64_t day) {
  return day * kMsPerDay;
}

// `2026-11-29` for a day number, and back.
std::string FormatDay(std::int64_t day);
std::optional<std::int64_t> ParseDay(std::string_view text);

}  // namespace dashcam
