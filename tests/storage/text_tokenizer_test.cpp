// Tests for storage/text_tokenizer.h: the single definition of "what is a
// token" shared by the index, the query compiler and highlighting.
#include "storage/text_tokenizer.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace dashcam::storage {
namespace {

using Tokens = std::vector<std::string>;

Tokens Tok(std::string_view text) {
  return TextTokenizer::TokenizeToVector(text);
}

struct Case {
  const char* name;
  std::string text;
  Tokens want;
};

void ExpectAll(const std::vector<Case>& cases) {
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(Tok(c.text), c.want);
  }
}

TEST(TextTokenizerTest, AsciiSplitsOnEveryNonAlphanumeric) {
  ExpectAll({
      {"empty", "", {}},
      {"only separators", " \t\n-_.:/()[]{}\"'", {}},
      {"colon", "cuda:0", {"cuda", "0"}},
      {"underscore", "snake_case_name", {"snake", "case", "name"}},
      {"path", "/var/log/syslog.1", {"var", "log", "syslog", "1"}},
      {"dotted host", "gpu-01.example.com", {"gpu", "01", "example", "com"}},
      {"digits and letters stay together", "sm_80 v100 2GB", {"sm", "80", "v100", "2gb"}},
      {"control characters",
       "a\x01"
       "b\x7f"
       "c",
       {"a", "b", "c"}},
  });
}

TEST(TextTokenizerTest, LowercasesAscii) {
  EXPECT_EQ(Tok("CUDA Out Of MEMORY"), (Tokens{"cuda", "out", "of", "memory"}));
  EXPECT_EQ(Tok("RuntimeError"), (Tokens{"runtimeerror"}));
}

TEST(TextTokenizerTest, LowercasesLatinGreekCyrillic) {
  ExpectAll({
      {"latin-1", "ÀÉÎÕÜÇÑ", {"àéîõüçñ"}},
      {"sharp s stays", "STRAßE", {"straße"}},
      {"latin extended-a", "ŁÓDŹ ŒUVRE", {"łódź", "œuvre"}},
      {"greek", "ΣΟΦΙΑ Ωμέγα", {"σοφια", "ωμέγα"}},
      {"cyrillic", "ПРИВЕТ Мир", {"привет", "мир"}},
      {"cyrillic 0x400 block", "ЁЖ", {"ёж"}},
      {"multiplication sign separates", "a×b÷c", {"a", "b", "c"}},
  });
}

TEST(TextTokenizerTest, FoldsFullwidthToAscii) {
  ExpectAll({
      {"letters", "ＣＵＤＡ", {"cuda"}},
      {"lower letters", "ｇｐｕ", {"gpu"}},
      {"digits and fullwidth colon", "ｃｕｄａ：０", {"cuda", "0"}},
      {"mixed widths form one token", "GPUｉｄ７", {"gpuid7"}},
  });
}

TEST(TextTokenizerTest, NonAsciiSeparators) {
  ExpectAll({
      {"no-break space", "a\u00a0b", {"a", "b"}},
      {"em dash", "a\u2014b", {"a", "b"}},
      {"ideographic space", "a\u3000b", {"a", "b"}},
      {"ideographic full stop", "显存。不足", {"显存", "不足"}},
      {"emoji", "fire\U0001F525alarm", {"fire", "alarm"}},
  });
}

TEST(TextTokenizerTest, CjkRunsBecomeBigrams) {
  ExpectAll({
      {"run of four", "显存不足", {"显存", "存不", "不足"}},
      {"run of two", "显存", {"显存"}},
      {"single character", "显", {"显"}},
      {"single between words", "a显b", {"a", "显", "b"}},
      {"mixed ascii then cjk", "CUDA显存溢出", {"cuda", "显存", "存溢", "溢出"}},
      {"cjk then digits", "显存2GB", {"显存", "2gb"}},
      {"katakana", "エラー", {"エラ", "ラー"}},
      {"hangul", "오류", {"오류"}},
      {"two runs", "显存 不足", {"显存", "不足"}},
  });
}

struct Span {
  std::string token;
  std::size_t begin, end;
  bool operator==(const Span&) const = default;
};

std::vector<Span> Spans(std::string_view text) {
  std::vector<Span> out;
  TextTokenizer::Tokenize(text, [&](const TokenSpan& t) {
    out.push_back({std::string(t.token), t.begin, t.end});
    return true;
  });
  return out;
}

TEST(TextTokenizerTest, ByteOffsetsPointIntoTheSource) {
  EXPECT_EQ(Spans("cuda:0 OK"), (std::vector<Span>{{"cuda", 0, 4}, {"0", 5, 6}, {"ok", 7, 9}}));
  // Each CJK character is 3 bytes; a bigram spans both characters.
  EXPECT_EQ(
      Spans("CUDA显存溢出"),
      (std::vector<Span>{{"cuda", 0, 4}, {"显存", 4, 10}, {"存溢", 7, 13}, {"溢出", 10, 16}}));
  EXPECT_EQ(Spans("x 显 y"), (std::vector<Span>{{"x", 0, 1}, {"显", 2, 5}, {"y", 6, 7}}));
  // Offsets are of the source bytes, not of the folded token.
  EXPECT_EQ(Spans("-ＡＢ-"), (std::vector<Span>{{"ab", 1, 7}}));
}

TEST(TextTokenizerTest, InvalidUtf8Separates) {
  ExpectAll({
      {"stray byte",
       "abc\xff"
       "def",
       {"abc", "def"}},
      {"lone continuation",
       "abc\x80"
       "def",
       {"abc", "def"}},
      {"truncated 2-byte at end", "ab\xc3", {"ab"}},
      {"truncated 3-byte in middle", "x\xe6\x98y", {"x", "y"}},
      {"overlong slash",
       "a\xc0\xaf"
       "b",
       {"a", "b"}},
      {"encoded surrogate",
       "a\xed\xa0\x80"
       "b",
       {"a", "b"}},
      {"beyond U+10FFFF",
       "a\xf4\x90\x80\x80"
       "b",
       {"a", "b"}},
  });
}

TEST(TextTokenizerTest, LongTokensAreCutToTheLimit) {
  const std::size_t max = TextTokenizer::kMaxTokenBytes;
  EXPECT_EQ(Tok(std::string(max, 'a')), (Tokens{std::string(max, 'a')}));
  EXPECT_EQ(Tok(std::string(max + 72, 'a') + " b"), (Tokens{std::string(max, 'a'), "b"}));

  // "a" then 2-byte characters: byte `max` is the second byte of an é, so
  // the cut moves back one byte rather than split it.
  std::string mixed = "a";
  for (int i = 0; i < 100; ++i) mixed += "é";
  std::string want = "a";
  for (std::size_t i = 0; i < (max - 2) / 2; ++i) want += "é";
  ASSERT_EQ(want.size(), max - 1);
  const auto spans = Spans(mixed);
  ASSERT_EQ(spans.size(), 1u);
  EXPECT_EQ(spans[0].token, want);
  EXPECT_EQ(spans[0].begin, 0u);
  EXPECT_EQ(spans[0].end, mixed.size());  // the whole source word
}

TEST(TextTokenizerTest, SinkCanStopEarly) {
  Tokens seen;
  TextTokenizer::Tokenize("one two three", [&](const TokenSpan& t) {
    seen.emplace_back(t.token);
    return seen.size() < 2;
  });
  EXPECT_EQ(seen, (Tokens{"one", "two"}));
}

TEST(TextTokenizerTest, HasTokens) {
  EXPECT_FALSE(TextTokenizer::HasTokens(""));
  EXPECT_FALSE(TextTokenizer::HasTokens(" -- :: () "));
  EXPECT_FALSE(TextTokenizer::HasTokens("\xff\xfe"));
  EXPECT_FALSE(TextTokenizer::HasTokens("。、\u3000"));
  EXPECT_TRUE(TextTokenizer::HasTokens("x"));
  EXPECT_TRUE(TextTokenizer::HasTokens("-0-"));
  EXPECT_TRUE(TextTokenizer::HasTokens("显"));
  EXPECT_TRUE(TextTokenizer::HasTokens("Ω"));
}

}  // namespace
}  // namespace dashcam::storage
