// Compiles a query AST into what a SQLite partition runs: an FTS5 MATCH
// expression that drives the search (when the query has a part FTS5 can
// answer), plus an SQL condition over `events AS e` for the rest.
//
// No text of the query is spliced into SQL: every FTS5 expression is a bound
// parameter, and inside it every user string is a double-quoted FTS5 string
// with quotes doubled, so FTS5 operators or column filters written by the
// user are matched as text. The SQL condition contains only fixed SQL and
// parameter placeholders.
//
// Thread-safety: pure function.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "storage/query_ast.h"
#include "storage/status.h"

namespace dashcam::storage {

struct CompiledQuery {
  // The driving FTS5 expression (bound as ?1), or nullopt: scan by key.
  std::optional<std::string> fts;
  // SQL boolean condition on `e` (events); "1" when there is nothing more.
  std::string where = "1";
  // Values of the ?N placeholders in `where`, numbered from kFirstWhereParam.
  // A query::Node* is bound as a pointer for dc_match (row_predicate.h); it
  // points into the compiled tree, which must outlive the query.
  std::vector<std::variant<std::string, std::int64_t, const query::Node*>> params;
};

// ?1 = fts expression, ?2/?3 = key range, ?4 = limit; `where` uses ?10 on.
inline constexpr int kFirstWhereParam = 10;

// Errors: InvalidArgument for malformed @timestamp range bounds. The result
// refers to `root` (dc_match pointers): keep `root` alive while it is used.
Result<CompiledQuery> CompileFtsQuery(const query::Node& root);

// The FTS5 string literal for `text`: "..." with inner quotes doubled.
std::string QuoteFtsString(std::string_view text);

}  // namespace dashcam::storage
