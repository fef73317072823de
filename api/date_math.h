// Date expressions of the query language (`2026-11-29T10:00`, `now-1h`,
// `now/d`, `2026-11||+1M/d`) resolved to the period of time they name.
// query_parser.h states the syntax and the rounding rule; this file is the
// arithmetic.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <variant>

#include "storage/time_format.h"

namespace dashcam::api {

// The period a date expression names, as inclusive epoch-ms bounds. `first`
// is the expression's value with a partial date taken as its first
// millisecond and every rounding (`/d`) taken down. The period's unit is the
// last rounding's unit, else the date's precision (a day for 2026-11-29, a
// millisecond for `now` and epoch milliseconds); `last` is `first` plus one
// unit (calendar months and years), minus one millisecond.
struct DatePeriod {
  TimeMs first = 0;
  TimeMs last = 0;
};

struct DateError {
  std::string reason;
  std::size_t offset = 0;  // into the expression
};

// Resolves `text` against `now`. Errors name what was expected at `offset`.
std::variant<DatePeriod, DateError> ResolveDate(std::string_view text, TimeMs now);

}  // namespace dashcam::api
