#include "storage/exact_value.h"

#include <re2/re2.h>

namespace dashcam::storage {

query::Node ExactValueQuery(std::string field, std::string_view value) {
  query::Term t;
  t.field = std::move(field);
  // \A and \z: the whole value, even one holding a line break.
  t.text = "\\A" + RE2::QuoteMeta(re2::StringPiece(value.data(), value.size())) + "\\z";
  return query::Node::MakeLeaf(query::NodeKind::kRegex, std::move(t), 0);
}

}  // namespace dashcam::storage
