// Compiles the query AST (storage/query_ast.h) to a ClickHouse boolean
// expression over the columns ch_row.h writes, with query_ast.h's matching
// semantics, in SQL that ClickHouse 18.16 and newer both accept:
//
//   term / phrase       position() of " t1 t2 " in the token columns: whole
//                       tokens, in a row, within one value (a prefix term
//                       leaves the last token open: " t1 t2");
//   wildcard            match() of the same columns with a regex: `*` is
//                       [^ ]* and `?` is [^ ], so a pattern never crosses a
//                       token boundary;
//   regex               match() of the value as stored, wrapped in (?-s:...)
//                       so that `.` does not match a newline (ClickHouse
//                       turns that on) and a leading (?i) works on 18.16;
//   keyword fields      whole string values of the value arrays;
//   numbers, ranges     the name/value arrays (arrayExists);
//   @timestamp          ts and ms;
//   proximity           position() of each word's phrase, then the rule of
//                       query_ast.h over the token array's positions
//                       (splitByChar of the message's token column);
//   fuzzy               the tokens (keyword fields: the whole values) that
//                       the caller's FuzzyExpander finds within the edit
//                       distance in the searched range, matched as above.
//
// Thread-safety: a pure function.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "storage/query_ast.h"
#include "storage/status.h"

namespace dashcam::storage::clickhouse {

// The event's time in epoch milliseconds, as a ClickHouse expression.
inline constexpr const char* kChTimeMs = "(toUInt64(ts) * 1000 + ms)";

// The stored tokens a fuzzy leaf matches, for a leaf on a text field: each
// token t of the field's values (the message's for the message) with
// BoundedEditDistance(t, word, leaf.term.distance) within the distance, where
// word is the leaf text's one token; for a keyword field, the whole string
// values within the distance of leaf.term.text. Errors are the compile's.
using FuzzyExpander = std::function<Result<std::vector<std::string>>(const query::Node& leaf,
                                                                     const std::string& word)>;

// Errors: InvalidArgument for a leaf the backend cannot compile, a fuzzy
// leaf on text that is not one word, and malformed @timestamp bounds; what
// `fuzzy` returns. Without `fuzzy`, a fuzzy leaf is an InvalidArgument.
Result<std::string> CompileChQuery(const query::Node& root, const FuzzyExpander& fuzzy = nullptr);

}  // namespace dashcam::storage::clickhouse
