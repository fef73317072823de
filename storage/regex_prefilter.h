// What a regular expression's matches must contain, so a regex query can
// ask the FTS index for candidate events instead of decoding every row.
//
// RequiredLiterals reads an RE2 pattern (already accepted by RE2) and
// returns a tree of literal strings: every string the pattern matches
// contains the literals the tree requires (AND: all children; OR: at least
// one; kAll: nothing is known), up to the case of ASCII letters the pattern
// matches case-insensitively (lowercased in the literal: the tree is read
// through tokens, which are folded). It is conservative: syntax it does not
// model (classes, \d, case-insensitive k, s and non-ASCII letters) becomes
// kAll, never a requirement.
// A literal may hold kBoundary bytes where the pattern has `^`, `$`, `\A`
// or `\z`: the text starts, ends or has a line break there, which is a
// token boundary.
// E.g. `CUDA error: (out of memory|illegal memory access)` gives
// OR("CUDA error: out of memory", "CUDA error: illegal memory access").
//
// GuaranteedTokens turns one literal into the index tokens any text that
// contains it must contain, contiguously: the literal's edges may sit inside
// a longer token of the text, so an edge word is dropped (at the start) or
// kept as a prefix (at the end; dropped instead when it is shorter than 3
// bytes and other tokens remain, since such a prefix matches too many terms).
//
// InnerWord covers the literal GuaranteedTokens can say nothing of: one
// word whose edges may both sit inside a longer token (`NCCL` in `/NCCL/`).
// Any text containing it holds it inside one of its tokens, folded as
// tokens are, unless that token was cut (TextTokenizer::kMaxTokenBytes)
// before it; the caller looks the word up in the vocabulary.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace dashcam::storage {

inline constexpr char kBoundary = '\0';

struct LiteralTree {
  enum class Kind { kAll, kLiteral, kAnd, kOr };
  Kind kind = Kind::kAll;
  std::string literal;                // kLiteral
  std::vector<LiteralTree> children;  // kAnd, kOr: two or more, none kAll
};

LiteralTree RequiredLiterals(std::string_view pattern);

struct GuaranteedPhrase {
  std::vector<std::string> tokens;  // empty: the literal guarantees nothing
  bool last_is_prefix = false;      // the last token may be longer in the text
};

// `left_boundary` / `right_boundary`: the literal is known to start / end at
// a token boundary of the text.
GuaranteedPhrase GuaranteedTokens(std::string_view literal, bool left_boundary = false,
                                  bool right_boundary = false);

// The literal's one word, folded, when the literal is a single non-CJK word
// of at least 3 bytes (shorter ones are inside too many terms to narrow
// by); else empty.
std::string InnerWord(std::string_view literal);

}  // namespace dashcam::storage
