// Token-level matching shared by the query compiler (expanding wildcard and
// fuzzy terms against a partition's vocabulary) and the row predicate
// (checking an event exactly): the rules are query_ast.h's kWildcard and
// kFuzzy.
//
// Thread-safety: pure functions.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "storage/text_tokenizer.h"

namespace dashcam::storage {

// One position of a wildcard pattern: a literal token, or a token pattern
// (case-folded, with `*` and `?`).
struct PatternPosition {
  std::string text;
  bool wildcard = false;
  // A token pattern of only `*`: any token.
  bool any() const { return wildcard && text.find_first_not_of('*') == std::string::npos; }
  // The characters before the first wildcard (all of them for a literal).
  std::string_view literal_prefix() const;
};

// Cuts a wildcard pattern into its positions, in order (query_ast.h).
std::vector<PatternPosition> SplitWildcardPattern(std::string_view pattern);

// True when the whole of `token` matches the token pattern: `*` is any run
// of code points, `?` exactly one.
bool MatchTokenPattern(std::string_view pattern, std::string_view token);

// The optimal string alignment distance between `a` and `b` in code points,
// or max + 1 when it is more than `max`.
unsigned BoundedEditDistance(std::string_view a, std::string_view b, unsigned max);

// True when the tokens of `text` hold `n` contiguous ones, the kth of which
// `matches(token, k)`. Tokens are checked as the tokenizer gives them, with
// no list of them, and the search stops at the first such run.
template <class Matches>
bool ContainsTokenRun(std::string_view text, std::size_t n, Matches&& matches) {
  if (n == 0) return false;
  if (n >= 64) {
    const std::vector<std::string> tokens = TextTokenizer::TokenizeToVector(text);
    for (std::size_t start = 0; start + n <= tokens.size(); ++start) {
      std::size_t k = 0;
      while (k < n && matches(std::string_view(tokens[start + k]), k)) ++k;
      if (k == n) return true;
    }
    return false;
  }
  // Bit k of `open`: the last k tokens match positions 0..k-1.
  const std::uint64_t whole = std::uint64_t{1} << n;
  std::uint64_t open = 1;
  bool found = false;
  TextTokenizer::Tokenize(text, [&](const TokenSpan& t) {
    std::uint64_t next = 1;
    for (std::uint64_t bits = open; bits != 0; bits &= bits - 1) {
      const auto k = static_cast<std::size_t>(std::countr_zero(bits));
      if (matches(t.token, k)) next |= std::uint64_t{2} << k;
    }
    open = next;
    found = (open & whole) != 0;
    return !found;
  });
  return found;
}

// True when the tokens of `text` hold `positions` contiguously (literal
// positions equal, wildcard positions matched by MatchTokenPattern).
bool ContainsPattern(std::string_view text, const std::vector<PatternPosition>& positions);

}  // namespace dashcam::storage
