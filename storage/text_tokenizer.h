// TextTokenizer: how dashcam splits text into searchable tokens. The FTS5
// index, the query compiler, highlighting and the tests' reference evaluator
// all use this one definition, so that "what matches" has a single answer.
//
// Rules:
//   * A token is a maximal run of letters and digits. Everything else
//     (spaces, punctuation, symbols, control characters, invalid UTF-8)
//     separates tokens: `cuda:0` is the two tokens `cuda` `0`.
//   * Tokens are lowercased (ASCII, Latin-1, Latin Extended-A, Greek,
//     Cyrillic); fullwidth ASCII letters and digits are folded to ASCII.
//   * A run of CJK characters (Han, Hiragana, Katakana, Hangul) becomes its
//     overlapping 2-character pieces (`显存不足` -> 显存 存不 不足), so any
//     2+ character piece of the run matches it as a phrase. A run of one CJK
//     character is a single token.
//   * Tokens longer than kMaxTokenBytes are cut to that length (on a UTF-8
//     character boundary) both when indexing and when querying.
//
// Thread-safety: stateless; all functions may be called concurrently.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace dashcam::storage {

struct TokenSpan {
  std::string_view token;  // lowercased; valid only during the callback
  std::size_t begin = 0;   // byte offsets of the source text it came from
  std::size_t end = 0;
};

class TextTokenizer {
 public:
  static constexpr std::size_t kMaxTokenBytes = 128;

  // Calls sink(const TokenSpan&) for every token of `text`, in order. The
  // sink returns true to continue, false to stop early.
  template <class Sink>
  static void Tokenize(std::string_view text, Sink&& sink) {
    Run(text, &sink, [](void* ctx, const TokenSpan& span) {
      return (*static_cast<std::remove_reference_t<Sink>*>(ctx))(span);
    });
  }

  // Convenience for tests and small inputs.
  static std::vector<std::string> TokenizeToVector(std::string_view text);

  // True when `text` produces at least one token.
  static bool HasTokens(std::string_view text);

  // `text` with every character case-folded as tokens are, and nothing else
  // changed (separators stay; invalid UTF-8 bytes are kept as they are).
  static std::string Fold(std::string_view text);

  // True when `token` (as Tokenize gives it) comes from a CJK run: a
  // 2-character piece, or a run of one.
  static bool IsCjkToken(std::string_view token);

 private:
  using RawSink = bool (*)(void* ctx, const TokenSpan& span);
  static void Run(std::string_view text, void* ctx, RawSink sink);
};

}  // namespace dashcam::storage
