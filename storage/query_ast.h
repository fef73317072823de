// The query AST: what a parsed query means, independent of any backend.
//
// The api layer parses query text into a Node tree; each storage backend
// compiles the tree into its own language (FTS5 + SQL for SQLite). Nodes are
// plain values: copyable, no back-pointers, safe to share read-only between
// threads.
//
// Matching semantics (every backend must implement exactly these):
//   * Text is split into tokens at every character that is not a letter or a
//     digit, and compared case-insensitively (see text_tokenizer.h). A run of
//     CJK characters is matched by any 2+ character piece of it.
//   * A Term on the message (field empty or "message") matches when the
//     message's token sequence contains the term's token sequence
//     contiguously. A single-token term is a plain token match.
//   * A Term on another field matches when any value of that field (arrays
//     give several values) contains the term's tokens contiguously. When the
//     term's text is a number, a numeric field value equal to it also matches
//     (`gpu_id:0` matches 0, 0.0 and the string "0").
//   * `prefix` makes the last token a prefix match (`cud*`).
//   * A Range on `@timestamp` matches events whose time lies between the
//     bounds (each inclusive or exclusive, either may be open). Bounds are
//     epoch milliseconds written in decimal (the API layer resolves dates and
//     date math). Ranges on other fields are rejected by backends that cannot
//     evaluate them yet.
//   * A Range on another field matches when any value of the field lies
//     between the bounds: numerically when both bounds are numbers (number
//     values, and strings that are whole numbers), else by byte order of
//     string values.
//   * Exists matches when the field has at least one non-null value (for an
//     object name, any value below it); `message` when the event has one.
//   * And/Or/Not are boolean; MatchAll matches every event.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace dashcam::query {

enum class NodeKind {
  kMatchAll,  // no children
  kAnd,       // >= 2 children
  kOr,        // >= 2 children
  kNot,       // exactly 1 child
  kTerm,      // leaf: `term`
  kRange,     // leaf: `range`
  kExists,    // leaf: `term.field` has a value
};

struct Term {
  std::string field;    // empty: the message
  std::string text;     // unescaped value text as the user wrote it
  bool phrase = false;  // written in double quotes
  bool prefix = false;  // trailing unescaped `*`: last token is a prefix
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
  Term term;      // kind == kTerm only
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
  static Node MakeNot(Node child, std::size_t pos) {
    Node n{NodeKind::kNot, pos, {}, {}, {}};
    n.children.push_back(std::move(child));
    return n;
  }
};

// The message pseudo-field: both "" and "message" address the message text.
inline constexpr const char* kTimestampField = "@timestamp";

inline bool IsMessageField(const std::string& field) {
  return field.empty() || field == "message";
}

// Readable, canonical form, for tests and logs: (AND a (OR b c)), field:"text"*.
std::string DebugString(const Node& node);

}  // namespace dashcam::query
