#include "storage/exact_value.h"

#include <re2/re2.h>

#include "storage/attrs_codec.h"

namespace dashcam::storage {

query::Node ExactValueQuery(std::string field, std::string_view value) {
  query::Term t;
  if (IsKeywordField(field)) {  // a keyword term is the whole value already
    t.field = std::move(field);
    t.text = std::string(value);
    return query::Node::MakeTerm(std::move(t), 0);
  }
  t.field = std::move(field);
  // \A and \z: the whole value, even one holding a line break.
  t.text = "\\A" + RE2::QuoteMeta(re2::StringPiece(value.data(), value.size())) + "\\z";
  return query::Node::MakeLeaf(query::NodeKind::kRegex, std::move(t), 0);
}

}  // namespace dashcam::storage
