// Tests for storage/regex_prefilter.h: the literal trees of regexes, the
// tokens a literal guarantees, and — the property the query compiler relies
// on — that no text a regex matches is ever excluded by its prefilter.
#include "storage/regex_prefilter.h"

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <re2/re2.h>

#include "storage/text_tokenizer.h"
#include "tests/common/training_log_generator.h"

namespace dashcam::storage {
namespace {

std::string Show(const LiteralTree& t) {
  switch (t.kind) {
    case LiteralTree::Kind::kAll:
      return "*";
    case LiteralTree::Kind::kLiteral: {
      std::string s = t.literal;
      for (char& c : s) c = c == kBoundary ? '|' : c;
      return "'" + s + "'";
    }
    default: {
      std::string s = t.kind == LiteralTree::Kind::kAnd ? "(AND" : "(OR";
      for (const LiteralTree& c : t.children) s += " " + Show(c);
      return s + ")";
    }
  }
}

TEST(RegexPrefilterTest, LiteralTrees) {
  struct Case {
    const char* pattern;
    const char* tree;
  };
  const Case cases[] = {
      {"abc", "'abc'"},
      {"CUDA error: (out of memory|illegal memory access)",
       "(OR 'CUDA error: out of memory' 'CUDA error: illegal memory access')"},
      {"a.b", "(AND 'a' 'b')"},
      {"^start", "'|start'"},
      {"end$", "'end|'"},
      {"\\Aab\\z", "'|ab|'"},
      {"ab?c", "(OR 'abc' 'ac')"},
      {"ab*c", "(AND 'a' 'c')"},
      {"a(bc)+d", "(AND 'a' 'bc' 'd')"},
      {"x{2,3}y", "(AND 'x' 'y')"},
      {"x{0}y", "'y'"},
      {"a{,3}", "'a{,3}'"},  // not a repetition to RE2: literal
      {"[abc]def", "'def'"},
      {"[]a]b", "'b'"},
      {"\\d+ms", "'ms'"},
      {"(?i)CUDA", "'cuda'"},
      {"(?i:CUDA) error", "'cuda error'"},
      {"cuda (?i)ERROR", "'cuda error'"},
      {"(?i)a|b", "(OR 'a' 'b')"},
      {"(?i)mask", "'ma'"},  // k and s: see below
      {"(?i)caf\xC3\xA9s", "'caf'"},
      {"a\\.b\\Q*+\\E", "'a.b*+'"},
      {"\\bword\\b", "'word'"},
      {"(?P<name>abc)", "'abc'"},
      {"a|b.c", "(OR 'a' (AND 'b' 'c'))"},
      {"(a|b|c|d|e)(f|g|h|i|j)", "(AND (OR 'a' 'b' 'c' 'd' 'e') (OR 'f' 'g' 'h' 'i' 'j'))"},
      {".*", "*"},
      {"", "*"},
      {"a|", "*"},
      {"\\x41BC", "'BC'"},
      {"\\pLx", "'x'"},
      {"显存(不足|溢出)", "(OR '显存不足' '显存溢出')"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(Show(RequiredLiterals(c.pattern)), c.tree) << c.pattern;
  }
}

std::string ShowPhrase(const GuaranteedPhrase& p) {
  std::string s;
  for (const std::string& t : p.tokens) s += (s.empty() ? "" : " ") + t;
  return p.last_is_prefix ? s + "*" : s;
}

TEST(RegexPrefilterTest, GuaranteedTokens) {
  struct Case {
    const char* literal;
    bool left, right;
    const char* phrase;
  };
  const Case cases[] = {
      {"CUDA error: out of memory", false, false, "error out of memory*"},
      {"CUDA error: out of memory", true, true, "cuda error out of memory"},
      {" error ", false, false, "error"},
      {"UDA", false, false, ""},
      {"UDA ", false, false, ""},
      {" uda", false, false, "uda*"},
      {"P2P access between rank 3 and rank 5", false, false, "access between rank 3 and rank"},
      {"P2P access between rank 3 and rank 50", false, false, "access between rank 3 and rank"},
      {"P2P access between rank 3 and rank 500", false, false,
       "access between rank 3 and rank 500*"},
      {" 5", false, false, "5*"},
      {"显存不足", false, false, "显存 存不 不足"},
      {"A显存", false, false, "显存"},
      {"存", false, false, ""},
      {" 存 ", false, false, "存"},
      {"x显", false, false, ""},
      {"", false, false, ""},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(ShowPhrase(GuaranteedTokens(c.literal, c.left, c.right)), c.phrase) << c.literal;
  }
}

// Does `text` pass the prefilter as the FTS index would apply it?
bool ContainsPhrase(const std::vector<std::string>& tokens, const GuaranteedPhrase& p) {
  if (p.tokens.empty()) return true;
  for (std::size_t s = 0; s + p.tokens.size() <= tokens.size(); ++s) {
    bool all = true;
    for (std::size_t k = 0; k < p.tokens.size() && all; ++k) {
      const bool last = k + 1 == p.tokens.size();
      all = last && p.last_is_prefix ? tokens[s + k].starts_with(p.tokens[k])
                                     : tokens[s + k] == p.tokens[k];
    }
    if (all) return true;
  }
  return false;
}

bool Passes(const LiteralTree& t, const std::vector<std::string>& tokens) {
  switch (t.kind) {
    case LiteralTree::Kind::kAll:
      return true;
    case LiteralTree::Kind::kLiteral: {
      const std::string_view text(t.literal);
      // As the query compiler reads it: a literal of one word held inside
      // tokens asks for the terms holding the word, or cut before it.
      if (GuaranteedTokens(text).tokens.empty()) {
        const std::string word = InnerWord(text);
        if (word.empty()) return true;
        return std::any_of(tokens.begin(), tokens.end(), [&](const std::string& token) {
          return token.find(word) != std::string::npos ||
                 token.size() + 3 >= TextTokenizer::kMaxTokenBytes;
        });
      }
      for (std::size_t pos = 0; pos <= text.size();) {
        const std::size_t end = std::min(text.find(kBoundary, pos), text.size());
        if (!ContainsPhrase(tokens, GuaranteedTokens(text.substr(pos, end - pos), pos > 0,
                                                     end < text.size()))) {
          return false;
        }
        pos = end + 1;
      }
      return true;
    }
    case LiteralTree::Kind::kAnd:
      for (const LiteralTree& c : t.children) {
        if (!Passes(c, tokens)) return false;
      }
      return true;
    case LiteralTree::Kind::kOr:
      for (const LiteralTree& c : t.children) {
        if (Passes(c, tokens)) return true;
      }
      return false;
  }
  return true;
}

// Random regexes built from pieces of real messages and RE2 syntax.
std::string RandomRegex(std::mt19937& rng, const std::vector<std::string>& messages) {
  auto pick = [&](int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng); };
  auto piece = [&] {
    const std::string& m = messages[pick(static_cast<int>(messages.size()))];
    if (m.empty()) return std::string("x");
    const std::size_t at = static_cast<std::size_t>(pick(static_cast<int>(m.size())));
    std::string s = m.substr(at, 1 + pick(12));
    while (!s.empty() && (static_cast<unsigned char>(s.back()) & 0xC0) == 0x80) s.pop_back();
    return RE2::QuoteMeta(s);
  };
  static const char* kGlue[] = {".*", ".", "\\s+", "[a-z]*", "\\d+", "", " ", "(?i)", "\\b"};
  static const char* kSuffix[] = {"", "", "?", "*", "+", "{1,2}", "{0}"};
  std::string re = pick(4) == 0 ? "^" : "";
  for (int n = 1 + pick(3); n > 0; --n) {
    std::string p = piece();
    if (pick(3) == 0) p = "(" + p + "|" + piece() + ")";
    if (pick(3) == 0) p = "(" + p + ")" + kSuffix[pick(7)];
    re += p + kGlue[pick(9)];
  }
  if (pick(4) == 0) re += "$";
  return re;
}

TEST(RegexPrefilterTest, NeverExcludesAMatch) {
  dashcam::testing::TrainingLogGenerator gen({});
  std::vector<std::string> messages;
  for (int i = 0; i < 600; ++i) messages.push_back(gen.Next().message);
  messages.push_back("CUDA显存不足, kelvin \xE2\x84\xAA and \xC5\xBF long s");
  messages.push_back(
      "NCCL \xE2\x84\xAA"
      "elvin lo\xC5\xBF\xC5\xBF Mask");
  // A token longer than the index keeps: a word past the cut is in no term.
  messages.push_back("blob " + std::string(140, 'f') + "NCCLwarnTimeoutRank3 end");
  std::vector<std::vector<std::string>> tokens;
  for (const std::string& m : messages) tokens.push_back(TextTokenizer::TokenizeToVector(m));

  std::mt19937 rng(5);
  int matched = 0, narrowed = 0;
  for (int i = 0; i < 400; ++i) {
    const std::string pattern = RandomRegex(rng, messages);
    RE2 re(pattern, RE2::Quiet);
    if (!re.ok()) continue;
    const LiteralTree tree = RequiredLiterals(pattern);
    narrowed += tree.kind != LiteralTree::Kind::kAll;
    for (std::size_t m = 0; m < messages.size(); ++m) {
      if (!RE2::PartialMatch(messages[m], re)) continue;
      ++matched;
      ASSERT_TRUE(Passes(tree, tokens[m]))
          << "pattern " << pattern << " matches `" << messages[m] << "` but its prefilter "
          << Show(tree) << " excludes it";
    }
  }
  EXPECT_GT(matched, 400);
  EXPECT_GT(narrowed, 200);
}

TEST(RegexPrefilterTest, InnerWordIsALiteralsOneWordFolded) {
  EXPECT_EQ(InnerWord("NCCL"), "nccl");
  EXPECT_EQ(InnerWord("Traceback:"), "traceback");
  EXPECT_EQ(InnerWord("\xEF\xBC\xA3UDA"), "cuda");  // a fullwidth C
  EXPECT_EQ(InnerWord("nan"), "nan");
  EXPECT_EQ(InnerWord("na"), "");      // inside too many terms
  EXPECT_EQ(InnerWord("out of"), "");  // two words: GuaranteedTokens' case
  EXPECT_EQ(InnerWord("显存"), "");    // a CJK piece is a whole token
  EXPECT_EQ(InnerWord(": ="), "");
  // The word of a literal that guarantees no whole token.
  EXPECT_TRUE(GuaranteedTokens("NCCL").tokens.empty());
  const std::string cut = std::string(140, 'f') + "NCCL";
  EXPECT_EQ(TextTokenizer::TokenizeToVector(cut).front().find("nccl"), std::string::npos);
}

TEST(RegexPrefilterTest, CaseInsensitiveKAndSAreNotRequired) {
  // RE2 folds the Kelvin sign into k and long s into s; the tokenizer does
  // not, so (?i) k and s must not become index requirements. Other ASCII
  // letters match only their two cases, which the tokenizer folds alike.
  EXPECT_TRUE(
      RE2::PartialMatch("\xE2\x84\xAA"
                        "elvin",
                        "(?i)kelvin"));
  EXPECT_TRUE(RE2::PartialMatch("lo\xC5\xBF\xC5\xBF", "(?i)LOSS"));
  EXPECT_EQ(Show(RequiredLiterals("(?i)kelvin")), "'elvin'");
  EXPECT_EQ(Show(RequiredLiterals("(?i)LOSS")), "'lo'");
  EXPECT_TRUE(Passes(RequiredLiterals("(?i)kelvin"), TextTokenizer::TokenizeToVector("\xE2\x84\xAA"
                                                                                     "elvin")));
  EXPECT_TRUE(
      Passes(RequiredLiterals("(?i)LOSS"), TextTokenizer::TokenizeToVector("lo\xC5\xBF\xC5\xBF")));
  // Digits and punctuation have no case: they count as ever.
  EXPECT_EQ(Show(RequiredLiterals("(?i)k3lv1n-42")), "'3lv1n-42'");
}

}  // namespace
}  // namespace dashcam::storage
