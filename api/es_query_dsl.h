// Translation of Elasticsearch request pieces into dashcam's query AST:
// the Query DSL subset clients send (PROTOCOLS.md 4) and index expressions.
//
// Supported: match_all, query_string (query, default_field,
// default_operator), match (query, operator), match_phrase, term, terms,
// range (gt/gte/lt/lte; dates as RFC 3339, epoch ms or now-<n><unit>), exists, bool
// (must, filter, should, must_not, minimum_should_match 0/1). Anything else is
// an InvalidArgument naming it: never a silently different answer.
//
// Field names ending in `.keyword` address the field itself (dashcam has no
// separate keyword sub-fields).
//
// A query holds at most kMaxEsQueryClauses leaf clauses (each value of a
// `terms`, each word of a `match` or `match_phrase`, each leaf of a
// `query_string`), as Elasticsearch bounds its clause count: every leaf is
// an index lookup in each day searched, and SQLite cannot interrupt FTS5
// while it parses the expression (100 000 values took 1.5 s in one day,
// 1 000 000 over 230 s and 1 GB). More is an InvalidArgument naming the
// limit, refused before the clauses are built. Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <string_view>

#include <boost/json/value.hpp>

#include "storage/query_ast.h"
#include "storage/status.h"
#include "storage/time_format.h"

namespace dashcam::api {

inline constexpr std::size_t kMaxEsQueryClauses = 4096;

Result<query::Node> TranslateEsQuery(const boost::json::value& query, TimeMs now);

// Lucene query_string text -> AST; `default_field` replaces the message as
// the target of bare terms; `default_or` makes juxtaposition mean OR. As in
// Lucene, lowercase and/or/not are words here, not operators; dates resolve
// against `now`.
Result<query::Node> TranslateQueryString(std::string_view text, std::string_view default_field,
                                         bool default_or, TimeMs now);

// `_all`, `*`, `filebeat-*`, `a,b-*`: a filter on `_index`, or MatchAll.
Result<query::Node> TranslateIndexExpression(std::string_view expression);

// `now-1h`, RFC 3339, epoch ms (string or number) -> epoch ms.
Result<TimeMs> ResolveEsDate(const boost::json::value& v, TimeMs now);

}  // namespace dashcam::api
