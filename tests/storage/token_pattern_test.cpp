// Tests for storage/token_pattern.h: how wildcard patterns are cut into
// positions, glob matching of one token, and the edit distance of fuzzy
// terms.
#include "storage/token_pattern.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace dashcam::storage {
namespace {

std::string Show(const std::vector<PatternPosition>& positions) {
  std::string s;
  for (const PatternPosition& p : positions) {
    s += (s.empty() ? "" : " ") + (p.wildcard ? "<" + p.text + ">" : p.text);
  }
  return s;
}

TEST(TokenPatternTest, SplitsPatternsIntoPositions) {
  EXPECT_EQ(Show(SplitWildcardPattern("cud?")), "<cud?>");
  EXPECT_EQ(Show(SplitWildcardPattern("*Memory")), "<*memory>");
  EXPECT_EQ(Show(SplitWildcardPattern("gpu-node-*")), "gpu node <*>");
  EXPECT_EQ(Show(SplitWildcardPattern("gpu*07")), "<gpu*07>");
  EXPECT_EQ(Show(SplitWildcardPattern("a b?c D")), "a <b?c> d");
  EXPECT_EQ(Show(SplitWildcardPattern("显存不足*")), "<显存不足*>");
  EXPECT_EQ(Show(SplitWildcardPattern("显存 不足")), "显存 不足");
  EXPECT_EQ(Show(SplitWildcardPattern("abc显存*")), "<abc显存*>");
  EXPECT_EQ(Show(SplitWildcardPattern("*-*")), "<*> <*>");
  EXPECT_EQ(Show(SplitWildcardPattern("ÄB?")), "<äb?>");
  EXPECT_EQ(Show(SplitWildcardPattern("...")), "");
  EXPECT_TRUE(SplitWildcardPattern("**")[0].any());
  EXPECT_EQ(SplitWildcardPattern("cu?a*")[0].literal_prefix(), "cu");
  EXPECT_EQ(SplitWildcardPattern("*a")[0].literal_prefix(), "");
}

TEST(TokenPatternTest, MatchesWholeTokens) {
  EXPECT_TRUE(MatchTokenPattern("cud?", "cuda"));
  EXPECT_FALSE(MatchTokenPattern("cud?", "cudax"));
  EXPECT_FALSE(MatchTokenPattern("cud?", "cud"));
  EXPECT_TRUE(MatchTokenPattern("*memory", "outofmemory"));
  EXPECT_TRUE(MatchTokenPattern("*memory", "memory"));
  EXPECT_FALSE(MatchTokenPattern("*memory", "memoryx"));
  EXPECT_TRUE(MatchTokenPattern("a*b*c", "aXXbYYc"));
  EXPECT_TRUE(MatchTokenPattern("a*b*c", "abc"));
  EXPECT_FALSE(MatchTokenPattern("a*b*c", "acb"));
  EXPECT_TRUE(MatchTokenPattern("*", ""));
  EXPECT_TRUE(MatchTokenPattern("显?", "显存"));  // ? is one character, not one byte
  EXPECT_FALSE(MatchTokenPattern("显??", "显存"));
  EXPECT_TRUE(MatchTokenPattern("*a*a*a*a*b", "aaaaaaaaaaaaaaaab"));
  EXPECT_FALSE(MatchTokenPattern("*a*a*a*a*b", "aaaaaaaaaaaaaaaaa"));
}

TEST(TokenPatternTest, OptimalStringAlignmentDistance) {
  EXPECT_EQ(BoundedEditDistance("memroy", "memory", 2), 1u);  // a swap is one edit
  EXPECT_EQ(BoundedEditDistance("memory", "memory", 2), 0u);
  EXPECT_EQ(BoundedEditDistance("mem", "memory", 2), 3u);  // max + 1 past max
  EXPECT_EQ(BoundedEditDistance("kitten", "sitting", 3), 3u);
  EXPECT_EQ(BoundedEditDistance("ca", "abc", 3), 3u);  // OSA, not Damerau: 3, not 2
  EXPECT_EQ(BoundedEditDistance("显存", "显卡", 2), 1u);
  EXPECT_EQ(BoundedEditDistance("", "ab", 2), 2u);
  EXPECT_EQ(BoundedEditDistance("abcdef", "badcfe", 2), 3u);
}

TEST(TokenPatternTest, ContainsPatternContiguously) {
  const std::string tokens = "gpu node 07 x";
  EXPECT_TRUE(ContainsPattern(tokens, SplitWildcardPattern("gpu-node-*")));
  EXPECT_TRUE(ContainsPattern(tokens, SplitWildcardPattern("node-0?")));
  EXPECT_FALSE(ContainsPattern(tokens, SplitWildcardPattern("gpu-0?")));
  EXPECT_FALSE(ContainsPattern(tokens, SplitWildcardPattern("x-*")));
  EXPECT_FALSE(ContainsPattern(tokens, SplitWildcardPattern("...")));
}

}  // namespace
}  // namespace dashcam::storage
