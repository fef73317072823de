// Query AST shorthands shared by the storage tests.
#pragma once

#include <string>
#include <utility>

#include "storage/query_ast.h"

namespace dashcam::testing {

// A bare word matched against the message (no field, no phrase, no prefix).
inline query::Node MessageTerm(std::string text) {
  return query::Node::MakeTerm(query::Term{"", std::move(text), false, false}, 0);
}

}  // namespace dashcam::testing
