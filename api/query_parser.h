// ParseQuery: turns the Lucene-style text a user types into the search box
// into a query::Node tree (storage/query_ast.h, which defines what each node
// matches), which each backend compiles.
//
// The language, by example (README "Query language" has the long form):
//   cuda                     a term on the message
//   "CUDA out of memory"     a phrase on the message
//   host.name:gpu-01         a term on a field; field names are made of
//                            letters, digits and . _ - @ (`@timestamp`)
//   user:"zhang san"         a phrase on a field
//   cud*   "out of mem"*     prefix: the last token is matched as a prefix
//   cud?  *memory  c*a       wildcards (Wildcard node) anywhere in a word;
//   host.name:gpu-node-*     a word whose only wildcard is a trailing `*`
//                            right after a letter or digit is a prefix Term
//   /CUDA error: (oom|ill)/  a regular expression (RE2) on the message;
//   user:/zh.*/              on a field. Inside, `\/` is a `/`; every other
//                            character, backslashes included, is RE2's.
//   memroy~1  memroy~        fuzzy (Fuzzy node): one word, edit distance
//                            0, 1 or 2 (2 when the number is left out)
//   "cuda memory"~3          proximity (Near node), on the message only
//   gpu_id:*  _exists_:gpu_id      existence; `NOT _exists_:f` is missing
//   gpu_mem_mb:>10000  >=  <  <=   open ranges
//   loss:[0.5 TO 2]  step:{100 TO *]  level:[a TO m}   ranges; `*` is open;
//                            `[ ]` inclusive, `{ }` exclusive, mixable;
//                            bounds are words or quoted phrases; TO is
//                            uppercase
//   @timestamp:[2026-11-29T10:00 TO now-1h}   dates, see below
//   @timestamp:2026-11-29    a date alone: the whole period it names
//   _index:filebeat-*        the index name, as a string field
//   _id:0019a1c2b3d4e5f6     the event with that id, exactly
//   level:(ERROR OR WARN)    a field group: the field applies to every leaf
//   user:(alice bob)         inside; a leaf naming another field is an error
//   a AND b   a && b   a and b   a b       both
//   a OR b    a || b   a or b              either
//   NOT a     !a       not a               not
//   +a  -a                   required / prohibited (below)
//   ( ... )                  grouping
//   cuda^2  (a b)^0.5        boosts are accepted and have no effect: hits
//                            are ordered by time, never by score
//   *   *:*                  every event; so is empty or blank text
// Operator words are exactly AND OR NOT (always) and and or not (unless
// ParseLimits::lowercase_operators is false); `And` is a term. Quote them
// (`"not"`) or escape them (`\not`) to search for the word.
//
// Grammar (juxtaposition means AND, or OR with default_operator_or):
//   query    := <empty> | or_expr
//   or_expr  := and_expr (OR and_expr)*
//   and_expr := clause ((AND)? clause)*
//   clause   := ('+' | '-')? unary          the mark touches the clause
//   unary    := (NOT | '!')* primary
//   primary  := '(' or_expr ')' boost? | field ':' '(' or_expr ')' boost?
//             | leaf boost?
// Precedence is NOT > AND > OR everywhere: `a OR b AND c` is
// `a OR (b AND c)`, `NOT a b` is `(NOT a) AND b`, `a OR NOT b` is
// `a OR (NOT b)` (Lucene differs: it reads NOT and ! as "prohibited").
//
// + and - follow Lucene within one or_expr (one group level): when any
// operand of an or_expr is a single marked clause, the or_expr means
// AND(every +operand, NOT every -operand), and its unmarked operands count
// only when there is no +operand (then OR(unmarked) joins the AND). So
// `a OR +b` is `b`, `a OR -b` is `a AND NOT b`, `-a -b` with
// default_operator_or is `NOT a AND NOT b`, and a group of only -operands
// matches every event except those. Within an and_expr of two or more
// clauses, `+x` is `x` and `-x` is `NOT x` (so `+a b -c` is
// `a AND b AND NOT c` with the default AND).
//
// Dates. Values on @timestamp (range bounds, comparisons and a date alone)
// are resolved here, so the tree carries epoch milliseconds:
//   2026                       a year;  2026-11  a month;  2026-11-29  a day
//   2026-11-29T10:00[:05[.123]][Z|+01:00]   a minute, second, millisecond
//   1764410400000              epoch milliseconds (any digits but a 4-digit year)
//   now                        ParseLimits::now
//   <anchor>(+|-)<n><unit>     date math: now-1h, now+2d, 2026-11-29||+1M
//   <anchor>/<unit>            rounding: now/d (a date needs `||` before math)
// Units: y M w d h H m s (M is months, m minutes). Times are UTC unless an
// offset is given. Every date names a period: its precision (a day for
// 2026-11-29, a millisecond for now-1h) or its rounding unit (now/d: today).
// A date alone (`@timestamp:2026-11-29`) matches the whole period. As a
// bound, a date is its period's first millisecond in `[lower`, `upper}`,
// `>=`, `<`, and its period's last millisecond in `{lower`, `upper]`, `>`,
// `<=` (Elasticsearch's rounding rule), so `[2026-11-29 TO 2026-11-30]` is
// both whole days, `[now/d TO now/d]` is all of today and `{2026-11-29 TO *]`
// starts on the 30th.
//
// Escapes: a backslash makes the next character literal, in words, phrases
// and range bounds (`a\:b`, `"say \"hi\""`, `\*`, `\-a`); an escaped `*` or
// `?` is a literal character, which the tokenizer treats as a separator.
//
// Errors: a QueryError whose `position` is the byte offset of the problem and
// whose reason names what was expected or what is not allowed: where the
// missing thing was expected ("expected ')' ..." points at the end of the
// text), where the bad value or clause starts, or where the unsupported
// syntax is. Never throws; never crashes, whatever the bytes: recursion
// depth is bounded by ParseLimits::max_depth, regexes are checked by RE2.
//
// Thread-safety: a pure function; call it concurrently freely. The returned
// tree owns its strings; nothing in it points into `text`.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <variant>

#include "storage/query_ast.h"
#include "storage/time_format.h"

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
  // Lowercase and/or/not are operators, as Kibana users type them. Lucene's
  // query_string reads them as words. Default: true.
  bool lowercase_operators = true;
  // What `now` means in dates (epoch ms). Default: 0; callers pass the clock.
  TimeMs now = 0;
};

// Parses query text into an AST. Empty/whitespace-only text and a lone `*`
// give MatchAll. Leaf positions are where the clause starts (the field name
// for `field:value`); a Not is at its NOT, `!` or `-`; And/Or positions are
// their first child's.
std::variant<query::Node, QueryError> ParseQuery(std::string_view text,
                                                 const ParseLimits& limits = {});

}  // namespace dashcam::api
