// Tests for storage/scope_match.h: the exact scope check, and the query
// that narrows candidates before it.
#include "storage/scope_match.h"

#include <gtest/gtest.h>

namespace dashcam::storage {
namespace {

DocumentView ScopeDoc(std::vector<std::pair<std::string, std::string>> fields) {
  DocumentView d;
  for (auto& [n, v] : fields) d.fields.push_back(Field{n, Field::Type::kString, v, 0});
  return d;
}

TEST(ScopeMatchTest, ValuesMustBeEqualAndAbsentFieldsAbsent) {
  const std::vector<ScopeField> scope = {{"host", {"h1"}}, {"path", {}}, {"_index", {"logs"}}};
  EXPECT_TRUE(MatchesScope(scope, ScopeDoc({{"host", "h1"}, {"x", "1"}}), "logs"));
  EXPECT_FALSE(MatchesScope(scope, ScopeDoc({{"host", "h1-b"}}), "logs"));
  EXPECT_FALSE(MatchesScope(scope, ScopeDoc({{"host", "H1"}}), "logs"));
  EXPECT_FALSE(MatchesScope(scope, ScopeDoc({{"host", "h1"}, {"path", "/a"}}), "logs"));
  EXPECT_FALSE(MatchesScope(scope, ScopeDoc({{"host", "h1"}}), "other"));
  EXPECT_FALSE(MatchesScope(scope, ScopeDoc({}), "logs"));
  // Several values: the same ones, in order.
  const std::vector<ScopeField> tags = {{"tag", {"a", "b"}}, {"_index", {}}};
  EXPECT_TRUE(MatchesScope(tags, ScopeDoc({{"tag", "a"}, {"tag", "b"}}), ""));
  EXPECT_FALSE(MatchesScope(tags, ScopeDoc({{"tag", "a"}}), ""));
  EXPECT_FALSE(MatchesScope(tags, ScopeDoc({{"tag", "a"}, {"tag", "b"}, {"tag", "c"}}), ""));
  EXPECT_FALSE(MatchesScope(tags, ScopeDoc({{"tag", "a"}, {"tag", "b"}}), "logs"));
  EXPECT_TRUE(MatchesScope({}, ScopeDoc({{"anything", "1"}}), "x"));
}

TEST(ScopeMatchTest, QueryAddsPhrasesForValuesWithTokens) {
  const query::Node all = query::Node::MatchAll();
  EXPECT_EQ(query::DebugString(ScopeQuery(all, {})), query::DebugString(all));
  EXPECT_EQ(query::DebugString(ScopeQuery(all, {{"host", {"---"}}, {"path", {}}})),
            query::DebugString(all));
  const query::Node q = ScopeQuery(all, {{"host", {"gpu-1"}}, {"gpu", {"-1"}}, {"x", {}}});
  ASSERT_EQ(q.kind, query::NodeKind::kAnd);
  ASSERT_EQ(q.children.size(), 2u);
  EXPECT_EQ(q.children[0].term.field, "host");
  EXPECT_EQ(q.children[0].term.text, "gpu-1");
  const query::Node filter = query::Node::MakeTerm(query::Term{"", "cuda"}, 0);
  const query::Node f = ScopeQuery(filter, {{"host", {"h"}}});
  ASSERT_EQ(f.kind, query::NodeKind::kAnd);
  EXPECT_EQ(f.children[0].term.text, "cuda");
}

}  // namespace
}  // namespace dashcam::storage
