// ExactValueQuery: a query matching the events whose `field` has a string
// value equal to `value` byte for byte. On a keyword field (attrs_codec.h)
// that is a term. Elsewhere a term (query_ast.h) matches token sequences,
// so `host.name:gpu-1` would also match "gpu-1-b"; there it is an anchored
// regex instead, which the FTS prefilter (regex_prefilter.h) still narrows
// by the value's tokens.
//
// Thread-safety: a pure function.
#pragma once

#include <string>
#include <string_view>

#include "storage/query_ast.h"

namespace dashcam::storage {

query::Node ExactValueQuery(std::string field, std::string_view value);

}  // namespace dashcam::storage
