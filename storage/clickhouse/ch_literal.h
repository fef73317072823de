// SQL literals for ClickHouse. Version 18.16 (Debian 12's) has no query
// parameters, so every value a query needs is written into its text: this
// file is the one place that does it, and nothing else may splice a value
// into ClickHouse SQL.
//
//   ChString("it's")   -> 'it\'s'
//   ChIdentifier("db") -> `db`
//
// A string literal holds any bytes: the quote and the backslash are escaped,
// and every control byte (0x00-0x1F, 0x7F) is written as \xHH, so a value
// can neither end the literal nor put a line break into the query.
// ClickHouse strings are bytes, so invalid UTF-8 passes through unchanged.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

namespace dashcam::storage::clickhouse {

// A single-quoted string literal for `bytes`.
std::string ChString(std::string_view bytes);

// A Float64 literal: the shortest text that reads back as `v`; inf, -inf
// and nan as ClickHouse spells them.
std::string ChNumber(double v);

// A back-quoted identifier (database, table or column name).
std::string ChIdentifier(std::string_view name);

}  // namespace dashcam::storage::clickhouse
