// Row predicates: the query nodes FTS5 cannot answer (existence of a field,
// ranges on fields other than @timestamp), evaluated against each candidate
// event's stored document through the SQL function
//   dc_match(source, node)
// where `node` is a bound pointer (sqlite3_bind_pointer, type
// kNodePointerType) to the query::Node, so no query text ever reaches SQL.
// Semantics are those of query_ast.h; field rules are DocumentReader's.
//
// Cost: one document parse per candidate row (~1 us for a 350-byte event),
// so these nodes are cheap behind a selective FTS5 part and a scan alone.
//
// Thread-safety: the function's state (a DocumentReader) belongs to the
// connection it is registered on; connections are used by one thread at a
// time.
#pragma once

#include <sqlite3.h>

#include "storage/document_reader.h"
#include "storage/query_ast.h"
#include "storage/status.h"

namespace dashcam::storage {

inline constexpr const char* kNodePointerType = "dashcam_query_node";

// True when `doc` satisfies `node`. REQUIRES: node.kind is kExists or kRange.
bool EvaluateRowPredicate(const query::Node& node, const DocumentView& doc);

// Registers dc_match on `db`.
Status RegisterRowPredicate(sqlite3* db);

}  // namespace dashcam::storage
