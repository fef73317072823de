// Tests for RowMatcher's phrase check (storage/row_predicate.h): a phrase,
// with or without a prefix last word, is found in a message exactly when its
// tokens appear contiguously, checked against a plain search over the
// message's token list on random messages of a few words (so that partial
// matches overlap and restart), and on phrases of 64 words and more.
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "storage/document_reader.h"
#include "storage/row_predicate.h"
#include "storage/text_tokenizer.h"

namespace dashcam::storage {
namespace {

// The reference: every start position, token by token.
bool Contiguous(const std::vector<std::string>& tokens, const std::vector<std::string>& want,
                bool prefix) {
  if (want.empty()) return false;
  for (std::size_t start = 0; start + want.size() <= tokens.size(); ++start) {
    std::size_t k = 0;
    while (k < want.size() &&
           (prefix && k + 1 == want.size() ? tokens[start + k].starts_with(want[k])
                                           : tokens[start + k] == want[k])) {
      ++k;
    }
    if (k == want.size()) return true;
  }
  return false;
}

std::string Words(std::mt19937_64& rng, std::size_t n) {
  static const char* const kWords[] = {"a", "ab", "b", "a", "CUDA", "cud", "out"};
  std::string text;
  for (std::size_t i = 0; i < n; ++i) {
    if (i > 0) text += rng() % 4 == 0 ? ", " : " ";
    text += kWords[rng() % std::size(kWords)];
  }
  return text;
}

bool MessageMatches(RowMatcher& matcher, const std::string& message, const std::string& phrase,
                    bool prefix) {
  const std::string json = fmt::format(R"({{"message":"{}"}})", message);
  DocumentReader reader;
  DocumentView view;
  EXPECT_TRUE(reader.ReadUnpadded(json, view).ok()) << json;
  query::Node node;
  node.kind = query::NodeKind::kTerm;
  node.term.text = phrase;
  node.term.phrase = true;
  node.term.prefix = prefix;
  EventView event;
  event.doc = &view;
  return matcher.Matches(node, event);
}

TEST(RowMatcherPhraseTest, APhraseMatchesWhereItsTokensAreContiguous) {
  std::mt19937_64 rng(17);
  RowMatcher matcher;
  int matched = 0;
  for (int round = 0; round < 4'000; ++round) {
    const std::string message = Words(rng, 1 + rng() % 12);
    const std::string phrase = Words(rng, 1 + rng() % 4);
    const bool prefix = rng() % 3 == 0;
    const bool want = Contiguous(TextTokenizer::TokenizeToVector(message),
                                 TextTokenizer::TokenizeToVector(phrase), prefix);
    ASSERT_EQ(MessageMatches(matcher, message, phrase, prefix), want)
        << "message '" << message << "' phrase '" << phrase << "' prefix " << prefix;
    matched += want;
  }
  // Both answers came up often enough to mean something.
  EXPECT_GT(matched, 400);
  EXPECT_LT(matched, 3'600);
}

TEST(RowMatcherPhraseTest, LongPhrasesMatchToo) {
  RowMatcher matcher;
  for (std::size_t n : {63, 64, 65, 100}) {
    std::string phrase;
    for (std::size_t i = 0; i < n; ++i) phrase += fmt::format("w{} ", i % 7);
    const std::string message = "before " + phrase + "after";
    EXPECT_TRUE(MessageMatches(matcher, message, phrase, false)) << n;
    EXPECT_TRUE(MessageMatches(matcher, message, phrase + "aft", true)) << n;
    EXPECT_FALSE(MessageMatches(matcher, message, phrase + "before", false)) << n;
    EXPECT_FALSE(MessageMatches(matcher, message.substr(0, message.size() - 12), phrase, false))
        << n;
  }
}

}  // namespace
}  // namespace dashcam::storage
