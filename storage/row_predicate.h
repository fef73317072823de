// Row predicates: query nodes checked against an event's stored document.
// The compiler (fts_query_compiler.h) uses them for what FTS5 cannot answer
// exactly — ranges on fields, existence, regexes, wildcard patterns of
// several positions — through the SQL function
//   dc_match(source, idx, node)
// where `node` is a bound pointer (sqlite3_bind_pointer, type
// kNodePointerType) to the query::Node, so no query text ever reaches SQL.
//
// RowMatcher implements query_ast.h's semantics for every node kind (the
// SQL function only ever asks about leaves; tests compare whole queries
// against it). Field rules are DocumentReader's.
//
// Cost: one document parse per candidate row (~1 us for a 350-byte event)
// plus the check (a regex is linear in the text: RE2), so these nodes are
// cheap behind a selective FTS5 part and a scan alone.
//
// Thread-safety: a RowMatcher caches compiled regexes and is used by one
// thread at a time; the SQL function's matcher belongs to its connection.
#pragma once

#include <sqlite3.h>

#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "storage/document_reader.h"
#include "storage/query_ast.h"
#include "storage/status.h"
#include "storage/token_pattern.h"

namespace re2 {
class RE2;
}

namespace dashcam::storage {

inline constexpr const char* kNodePointerType = "dashcam_query_node";

// What a predicate may look at.
struct EventView {
  const DocumentView* doc = nullptr;  // required
  std::string_view index;             // the index name ("" when none)
  std::string_view id;                // the event id (kTerm on _id)
  TimeMs ts_ms = 0;                   // the event time (kRange on @timestamp)
};

class RowMatcher {
 public:
  RowMatcher();
  ~RowMatcher();
  RowMatcher(const RowMatcher&) = delete;
  RowMatcher& operator=(const RowMatcher&) = delete;

  // True when the event satisfies `node` (any kind).
  bool Matches(const query::Node& node, const EventView& event);

 private:
  bool MatchesLeaf(const query::Node& node, const EventView& event);
  const re2::RE2& Regex(const std::string& pattern);
  const std::vector<PatternPosition>& Wildcard(const std::string& pattern);
  const std::vector<std::string>& Tokens(const std::string& text);

  // Compiled regexes, split wildcard patterns and the tokens of terms and
  // phrases, by text (a node's address may be reused by another query): a
  // row check asks for them at every candidate. Each dropped whole past a
  // few dozen.
  std::unordered_map<std::string, std::unique_ptr<re2::RE2>> regexes_;
  std::unordered_map<std::string, std::vector<PatternPosition>> wildcards_;
  std::unordered_map<std::string, std::vector<std::string>> tokens_;
};

// Registers dc_match on `db`.
Status RegisterRowPredicate(sqlite3* db);

}  // namespace dashcam::storage
