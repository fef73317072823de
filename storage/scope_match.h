// Scope matching for FindNeighbors (exploration.h): whether an event shares
// the anchor's source fields, and the query that narrows the candidates
// before that exact check.
//
// Thread-safety: pure functions.
#pragma once

#include <string_view>
#include <vector>

#include "storage/document_reader.h"
#include "storage/exploration.h"
#include "storage/query_ast.h"

namespace dashcam::storage {

// True when the event (its document and index) satisfies every ScopeField:
// the same values in the same order, or absent where `values` is empty.
bool MatchesScope(const std::vector<ScopeField>& scope, const DocumentView& doc,
                  std::string_view index);

// `filter` AND a phrase on each scope value the index can look up (values
// with no tokens, and absent fields, are left to MatchesScope). Every event
// MatchesScope accepts matches the result.
query::Node ScopeQuery(const query::Node& filter, const std::vector<ScopeField>& scope);

}  // namespace dashcam::storage
