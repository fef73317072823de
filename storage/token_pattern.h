// Token-level matching shared by the query compiler (expanding wildcard and
// fuzzy terms against a partition's vocabulary) and the row predicate
// (checking an event exactly): the rules are query_ast.h's kWildcard and
// kFuzzy.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

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

// True when `tokens` contains `positions` contiguously (literal positions
// equal, wildcard positions matched by MatchTokenPattern).
bool ContainsPattern(const std::vector<std::string>& tokens,
                     const std::vector<PatternPosition>& positions);

}  // namespace dashcam::storage
