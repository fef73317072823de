#include "storage/scope_match.h"

#include "storage/attrs_codec.h"
#include "storage/text_tokenizer.h"

namespace dashcam::storage {

bool MatchesScope(const std::vector<ScopeField>& scope, const DocumentView& doc,
                  std::string_view index) {
  for (const ScopeField& s : scope) {
    if (s.name == kIndexField) {
      const bool ok =
          s.values.empty() ? index.empty() : s.values.size() == 1 && s.values[0] == index;
      if (!ok) return false;
      continue;
    }
    std::size_t i = 0;
    for (const Field& f : doc.fields) {
      if (f.name != s.name) continue;
      if (i >= s.values.size() || s.values[i] != f.text) return false;
      ++i;
    }
    if (i != s.values.size()) return false;
  }
  return true;
}

query::Node ScopeQuery(const query::Node& filter, const std::vector<ScopeField>& scope) {
  query::Node root{query::NodeKind::kAnd, filter.position, {}, {}, {}};
  if (filter.kind != query::NodeKind::kMatchAll) root.children.push_back(filter);
  for (const ScopeField& s : scope) {
    for (const std::string& v : s.values) {
      // A value without tokens would be an empty phrase, which FTS5 cannot
      // look up; numbers are indexed whole, so they are fine.
      if (!TextTokenizer::HasTokens(v) && !CanonicalNumberText(v)) continue;
      root.children.push_back(query::Node::MakeTerm(query::Term{s.name, v, true, false}, 0));
    }
  }
  if (root.children.empty()) return query::Node::MatchAll(filter.position);
  if (root.children.size() == 1) return std::move(root.children[0]);
  return root;
}

}  // namespace dashcam::storage
