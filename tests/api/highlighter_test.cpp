// Tests for api/highlighter.h: which terms are marked, where, and escaping.
#include "api/highlighter.h"

#include <gtest/gtest.h>

#include "api/query_parser.h"

namespace dashcam::api {
namespace {

std::string Mark(std::string_view query, std::string_view message) {
  auto parsed = ParseQuery(query);
  EXPECT_TRUE(std::holds_alternative<query::Node>(parsed)) << query;
  if (!std::holds_alternative<query::Node>(parsed)) return "";
  return Highlighter(std::get<query::Node>(parsed)).Highlight(message).value_or("<none>");
}

TEST(HighlighterTest, MarksTermsPhrasesAndPrefixes) {
  EXPECT_EQ(Mark("cuda", "CUDA error on cuda:0"), "<mark>CUDA</mark> error on <mark>cuda</mark>:0");
  EXPECT_EQ(Mark("\"out of memory\"", "out of order, out of memory"),
            "out of order, <mark>out of memory</mark>");
  // A multi-token term is a phrase; its marks span the separators inside.
  EXPECT_EQ(Mark("cuda\\:0", "on cuda:0 now"), "on <mark>cuda:0</mark> now");
  EXPECT_EQ(Mark("nccl*", "NCCL ncclInternalError"),
            "<mark>NCCL</mark> <mark>ncclInternalError</mark>");
  EXPECT_EQ(Mark("\"out of mem\"*", "out of memory"), "<mark>out of memory</mark>");
  EXPECT_EQ(Mark("a OR b", "a b c"), "<mark>a</mark> <mark>b</mark> c");
  EXPECT_EQ(Mark("message:loss", "loss=0.5"), "<mark>loss</mark>=0.5");
}

TEST(HighlighterTest, SkipsNegatedAndFieldTerms) {
  EXPECT_EQ(Mark("NOT cuda", "cuda"), "<none>");
  EXPECT_EQ(Mark("error NOT cuda", "cuda error"), "cuda <mark>error</mark>");
  EXPECT_EQ(Mark("NOT (a NOT b)", "a b"), "a <mark>b</mark>");  // b is negated twice
  EXPECT_EQ(Mark("user:cuda", "cuda"), "<none>");
  EXPECT_TRUE(Highlighter(query::Node::MatchAll()).empty());
  EXPECT_EQ(Mark("cuda", "nothing here"), "<none>");
}

TEST(HighlighterTest, EscapesHtmlInsideAndOutsideMarks) {
  EXPECT_EQ(Mark("script", "<script>alert('x') & \"y\"</script>"),
            "&lt;<mark>script</mark>&gt;alert(&#39;x&#39;) &amp; &quot;y&quot;&lt;/"
            "<mark>script</mark>&gt;");
  EXPECT_EQ(Mark("\"a b\"", "a<>b"), "<mark>a&lt;&gt;b</mark>");
}

TEST(HighlighterTest, CjkPiecesAndOverlaps) {
  EXPECT_EQ(Mark("显存", "CUDA显存不足"), "CUDA<mark>显存</mark>不足");
  EXPECT_EQ(Mark("显存不足", "CUDA显存不足!"), "CUDA<mark>显存不足</mark>!");
  // Overlapping matches become one mark.
  EXPECT_EQ(Mark("显存 存不", "显存不足"), "<mark>显存不</mark>足");
}

}  // namespace
}  // namespace dashcam::api
