// The query AST: what a parsed query means, independent of any backend.
//
// The api layer parses query text into a Node tree; each storage backend
// compiles the tree into its own language (FTS5 + SQL for SQLite; a
// ClickHouse backend compiles the same tree). Nodes are plain values:
// copyable, no back-pointers, safe to share read-only between threads.
//
// MATCHING SEMANTICS. Every backend must implement exactly these; a reference
// evaluator that scans events in memory can be written from this text alone.
//
// Tokens. Text is split into tokens by TextTokenizer (text_tokenizer.h): a
// token is a maximal run of letters and digits, case-folded; every other
// character separates tokens; a run of CJK characters gives its overlapping
// 2-character pieces (a run of one gives that character), so any 2+
// character piece of a CJK run matches it as a phrase. Tokens are cut to
// 128 bytes. "The tokens of x" below always means TextTokenizer's tokens.
//
// The values of a field F of an event (used by every leaf):
//   * F empty or "message": the event's message, when it has one (the
//     document's `message`, else `msg`, else `log`; DocumentReader). The
//     message is one string value.
//   * F == "_index": the index name the event was sent to, when non-empty,
//     as one string value.
//   * F == "@timestamp" and F == "_id": see Range and Term below; no other
//     leaf applies to them (the parser rejects the rest).
//   * any other F: the document's scalar values whose flattened dotted name
//     is exactly F (arrays give one value per element; nulls are dropped).
//     Each is a string, a number, or a boolean. A boolean counts as the
//     string "true"/"false" everywhere below.
// "A value's tokens" are the tokens of a string value. A number has no
// tokens: numbers are matched only by equality (Term) and by Range.
// Matching is always within ONE value: a token sequence never spans two
// elements of an array.
//
// Keyword fields (attrs_codec.h's IsKeywordField: `run.id`, `_index`,
// `host.name`, `log.file.path`) hold identifiers, so a string value of one is matched
// WHOLE, byte for byte, with no tokenizing and no case folding. On them,
// and only for string values: kTerm matches a value equal to `text` (with
// `prefix`: starting with it), so `run.id:r-42` does not match "r-42-b";
// kWildcard matches when the whole value matches the pattern (`*` any run
// of code points, `?` one; not cut into segments, not case-folded); kFuzzy
// when the whole value is within N edits of `text` (any text, not only one
// token).
// Numbers, kRegex, kRange and kExists are as on any field.
//
// Leaves (kind: fields of Term/Range used):
//   kTerm (field, text, phrase, prefix)
//     * field "_id": matches the event whose id equals `text` byte for byte
//       (the id is the caller-given document id, else the 16-hex-digit event
//       key). No tokenizing; `phrase` makes no difference; never `prefix`.
//     * otherwise: matches when some string value's token sequence contains
//       the tokens of `text` as a contiguous subsequence. With `prefix`, the
//       last of those tokens is matched as a prefix of the value's token
//       instead (`cud*` matches the token `cuda`). `phrase` (written in
//       double quotes) changes nothing else: a multi-token unquoted term is
//       a phrase too (`cuda:0` is the tokens `cuda` `0` in a row).
//     * on a field other than the message, when `text` is a decimal number
//       (CanonicalNumberText accepts it) and not `prefix`, a number value
//       equal to it also matches (`gpu_id:0` matches 0, 0.0 and "0").
//     * A term whose text has no tokens matches nothing (the parser never
//       produces one, except a number, which can match a number value).
//     (@timestamp terms never reach a backend: the parser turns
//     `@timestamp:<date>` into a Range covering the date's precision.)
//   kWildcard (field, text = the pattern)
//     The pattern is cut into segments at every character that is not a
//     letter, digit, CJK character, `*` or `?` (empty segments dropped).
//     A segment without `*`/`?` contributes its tokens as literal positions
//     (one or more). A segment with them is ONE token pattern, case-folded
//     like tokens: `*` matches any run of zero or more characters (code
//     points), `?` exactly one; it must match a whole token. The node
//     matches when some string value's token sequence contains the
//     positions contiguously, in order. So `*memory` matches the token
//     `outofmemory`, `gpu-node-*` is the token `gpu`, then `node`, then any
//     token; `gpu*07` matches the single token `gpu07` but not `gpu-07`
//     (a wildcard never crosses a separator). CJK text in a wildcard segment
//     is matched against the 2-character tokens (`显*` matches `显存`). Every
//     `*` and `?` in `text` is a wildcard (the parser turns an escaped one
//     into a separator, which is what it is to the tokenizer).
//   kRegex (field, text = an RE2 pattern)
//     Matches when RE2::PartialMatch(value, pattern) holds for some string
//     value, with RE2's default options: case-sensitive (write `(?i)` for
//     case-insensitive), UTF-8, `.` does not match `\n`, unanchored (write
//     `^...$` to anchor to the whole value). Not tokenized: the message
//     regex /CUDA error: (out of memory|illegal)/ runs over the message
//     text as stored.
//   kNear (field = message only, text = the phrase, distance = N)
//     Cut `text` at ASCII whitespace (space \t \n \r \f \v) into words and
//     drop words without tokens; each remaining word is a phrase p_i of
//     n_i >= 1 tokens. Matches when
//     the message has an occurrence of every p_i (p_i starting at token
//     position s_i, positions counted from 0) such that for every i:
//     max_j(s_j) - (s_i + n_i) <= N. This is SQLite FTS5's NEAR(p1 p2 ...,
//     N): every phrase ends at most N tokens before the last one starts, in
//     any order; occurrences may overlap (`"a a"~0` matches one `a`). With
//     a single word, a kNear is that word as a phrase.
//   kFuzzy (field, text = one token, distance = N in 0..2)
//     Matches when some string value has a token t whose optimal string
//     alignment distance to the case-folded `text` is at most N: the fewest
//     single-code-point insertions, deletions, substitutions and swaps of
//     two adjacent code points, no substring edited twice (Lucene's
//     default, so `memroy~1` matches `memory`).
//   kRange (range: field, lower, upper, include_lower, include_upper)
//     An empty bound is open. On "@timestamp", bounds are epoch milliseconds
//     in decimal (the parser resolves dates and date math) and the event's
//     time must lie between them. On any other field, numerically when
//     every non-empty bound parses whole as a number (std::from_chars,
//     double): number values, and string values that parse whole as a
//     number, are compared; otherwise by byte order (std::string compare)
//     of string values (booleans included, numbers excluded). Matches when
//     some value lies between the bounds.
//   kExists (term.field)
//     Matches when the field has at least one value, or when F names an
//     object: any value whose name starts with "F.". The message exists
//     when the event has one; @timestamp and _id always exist; _index when
//     non-empty.
// Inner nodes: kAnd (all children), kOr (any child), kNot (not the child),
// kMatchAll (every event). A tree's meaning is its boolean value per event;
// the parser flattens nested And/Or of the same kind.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace dashcam::query {

enum class NodeKind {
  kMatchAll,  // no children
  kAnd,       // >= 2 children
  kOr,        // >= 2 children
  kNot,       // exactly 1 child
  kTerm,      // leaf: `term` (field, text, phrase, prefix)
  kRange,     // leaf: `range`
  kExists,    // leaf: `term.field` has a value
  kWildcard,  // leaf: `term.field`, `term.text` is the pattern
  kRegex,     // leaf: `term.field`, `term.text` is the RE2 pattern
  kNear,      // leaf: `term.field` (the message), `term.text`, `term.distance`
  kFuzzy,     // leaf: `term.field`, `term.text` (one token), `term.distance`
};

struct Term {
  std::string field;      // empty: the message
  std::string text;       // unescaped value text as the user wrote it
  bool phrase = false;    // written in double quotes
  bool prefix = false;    // kTerm: trailing unescaped `*`: last token is a prefix
  unsigned distance = 0;  // kNear: the allowed gap; kFuzzy: the allowed edits
};

struct Range {
  std::string field;
  std::string lower, upper;  // empty: open
  bool include_lower = true;
  bool include_upper = true;
};

struct Node {
  NodeKind kind = NodeKind::kMatchAll;
  std::size_t position = 0;  // byte offset in the query text where it starts
  std::vector<Node> children;
  Term term;      // leaves other than kRange (kExists uses term.field only)
  Range range{};  // kind == kRange only

  static Node MatchAll(std::size_t pos = 0) { return Node{NodeKind::kMatchAll, pos, {}, {}, {}}; }
  static Node MakeExists(std::string field, std::size_t pos) {
    Node n{NodeKind::kExists, pos, {}, {}, {}};
    n.term.field = std::move(field);
    return n;
  }
  static Node MakeRange(Range r, std::size_t pos) {
    return Node{NodeKind::kRange, pos, {}, {}, std::move(r)};
  }
  static Node MakeTerm(Term t, std::size_t pos) {
    return Node{NodeKind::kTerm, pos, {}, std::move(t), {}};
  }
  // kWildcard, kRegex, kNear or kFuzzy.
  static Node MakeLeaf(NodeKind kind, Term t, std::size_t pos) {
    return Node{kind, pos, {}, std::move(t), {}};
  }
  static Node MakeNot(Node child, std::size_t pos) {
    Node n{NodeKind::kNot, pos, {}, {}, {}};
    n.children.push_back(std::move(child));
    return n;
  }
};

// Field names with a meaning of their own (see above).
inline constexpr const char* kTimestampField = "@timestamp";
inline constexpr const char* kIndexField = "_index";
inline constexpr const char* kIdField = "_id";

// The message pseudo-field: both "" and "message" address the message text.
inline bool IsMessageField(const std::string& field) {
  return field.empty() || field == "message";
}

// kNear's words: `text` cut at ASCII whitespace (space \t \n \r \f \v),
// empty pieces left out. Views into `text`.
std::vector<std::string_view> NearWords(std::string_view text);

// Readable, canonical form, for tests and logs: (AND a (OR b c)), field:"text"*.
std::string DebugString(const Node& node);

}  // namespace dashcam::query
