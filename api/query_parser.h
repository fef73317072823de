// ParseQuery: turns the Lucene-style text a user types into the search box
// into a query::Node tree (storage/query_ast.h), which each backend compiles.
//
// Syntax accepted by this version:
//   cuda                     a term on the message
//   "CUDA out of memory"     a phrase on the message
//   host.name:gpu-01         a term on a field; field names are made of
//                            letters, digits and . _ - @ (`@timestamp`)
//   user:"zhang san"         a phrase on a field
//   cud*   "out of mem"*     prefix: the last token is matched as a prefix
//   a AND b    a b           both (juxtaposed clauses mean AND)
//   a OR b                   either
//   NOT a                    not
//   ( ... )                  grouping
//   *   *:*                  every event; so is empty or blank text
// Precedence is NOT > AND > OR: `a OR b AND c` is `a OR (b AND c)` and
// `NOT a b` is `(NOT a) AND b`. Only uppercase AND/OR/NOT are operators;
// lowercase ones are plain terms. A backslash makes the next character
// literal, in terms and in phrases (`a\:b`, `"say \"hi\""`, `\*`).
//
// A term must contain a letter or digit (`"!!"` is an error), except that a
// number is a valid field value (`delta:-1`).
//
// Syntax that is recognized but not supported yet is rejected with a reason
// naming the feature, never ignored: ranges ([a TO b], {a TO b}, field:>5),
// regular expressions (/re/), wildcards other than a trailing * (`a?c`,
// `a*c`, `*c`), fuzzy and proximity (~), boosts (^), existence (field:*,
// _exists_:field), field groups (field:(a b)), the prefix operators + - ! and
// the symbols && ||.
//
// Errors: a QueryError whose `position` is the byte offset of the problem:
// where the missing thing was expected ("expected ')'" points at the end of
// the text), where the unsupported syntax starts, or where the bad clause
// starts. Never throws; never crashes, whatever the bytes: recursion depth is
// bounded by ParseLimits::max_depth.
//
// Thread-safety: a pure function; call it concurrently freely. The returned
// tree owns its strings; nothing in it points into `text`.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <variant>

#include "storage/query_ast.h"

namespace dashcam::api {

struct QueryError {
  std::string reason;        // for humans, e.g. "expected a term after AND"
  std::size_t position = 0;  // byte offset in the query text
};

struct ParseLimits {
  // Longer text is rejected before parsing. Default: 16 KiB.
  std::size_t max_bytes = 16 * 1024;
  // Deepest nesting of parentheses and NOTs combined (`NOT (a OR NOT b)` is
  // 3). Bounds the parser's recursion and the depth of the returned tree.
  // Default: 64. Values above 256 are treated as 256.
  std::size_t max_depth = 64;
  // Juxtaposed clauses mean OR instead of AND (Elasticsearch's query_string
  // default_operator). `a b AND c` is then `a OR (b AND c)`. Default: false.
  bool default_operator_or = false;
};

// Parses query text into an AST. Empty/whitespace-only text and a lone `*`
// give MatchAll. Term positions are where the clause starts (the field name
// for `field:value`); And/Or positions are their first child's.
std::variant<query::Node, QueryError> ParseQuery(std::string_view text,
                                                 const ParseLimits& limits = {});

}  // namespace dashcam::api
