// ReferenceEvaluator: the differential query test's oracle. It answers a
// query by scanning events held in memory, implementing the matching
// semantics written in storage/query_ast.h from that text alone: it has its
// own tokenizer and its own query tree (RefNode) and links none of dashcam's
// tokenizer, parser or compiler, so that a bug there cannot hide by being
// shared. It is written to be obviously right, not fast; the only speed-ups
// are interning tokens and caching each distinct leaf's answer.
//
// Scope: the tokenizer knows ASCII, CJK (Han, kana, Hangul) and CJK/fullwidth
// punctuation. Any other non-ASCII code point in the data or in a query is
// reported by Unsupported() instead of being guessed at, so a change to the
// data that the oracle cannot judge fails loudly.
//
// Thread-safety: Evaluate() mutates caches; use one evaluator per thread.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dashcam::testing {

// One scalar value of a flattened document field.
struct RefValue {
  enum class Type { kString, kNumber, kBool };
  Type type = Type::kString;
  std::string text;   // the string, "true"/"false", or the number (shortest form)
  double number = 0;  // kNumber only
};

// One event as the oracle sees it.
struct RefEvent {
  std::string id;     // the document id given at ingest
  std::string index;  // the index it was sent to
  std::int64_t ts_ms = 0;
  std::optional<std::string> message;
  std::vector<std::pair<std::string, RefValue>> fields;  // dotted name, value
};

// Fills `out.message` and `out.fields` from a JSON document the way
// query_ast.h describes an event: dotted names, one value per array element,
// nulls dropped, `message` (else `msg`, else a string `log`) as the message,
// `message` and `@timestamp` not fields. Leaves id, index and ts_ms alone.
// Returns false with `error` set when `json` is not a JSON object.
bool FlattenDocument(std::string_view json, RefEvent& out, std::string& error);

// The tokens of `text` by query_ast.h's rule: maximal runs of ASCII letters
// and digits (lowercased); CJK runs as their overlapping 2-character pieces
// (a run of one: that character); everything else separates.
std::vector<std::string> RefTokens(std::string_view text);

// A maximal run of ASCII letters and digits, or of CJK characters, in a
// text: what RefTokens makes its tokens from. Byte offsets.
struct RefWordSpan {
  std::size_t begin = 0, end = 0;
  bool cjk = false;
};
std::vector<RefWordSpan> RefWordSpans(std::string_view text);

// The first code point of `text` the tokenizer above cannot classify, as
// "U+XXXX", or empty when it knows every character.
std::string Unsupported(std::string_view text);

// The test's own query tree. The boolean kinds and leaves mean what
// query_ast.h says; the remaining members only record how the generator
// chose to write the node as text (see query_generator.h).
enum class RefKind {
  kAll,
  kAnd,
  kOr,
  kNot,
  kLuceneOr,  // an or-group of marked operands: see `marks`
  kTerm,
  kWildcard,
  kRegex,
  kNear,
  kFuzzy,
  kRange,      // on a field other than @timestamp: text bounds
  kTimeRange,  // on @timestamp: resolved epoch-ms bounds
  kExists,
};

struct RefNode {
  RefKind kind = RefKind::kAll;
  std::vector<RefNode> children;
  // kLuceneOr: per child '+', '-' or ' '. Means AND(every + child, NOT every
  // - child, and OR(unmarked children) when there is no + child).
  std::string marks;

  // Leaves.
  std::string field;  // empty or "message": the message
  std::string text;   // unescaped term text, pattern, regex, phrase or word
  bool prefix = false;
  int distance = 0;  // kNear, kFuzzy
  // kRange: empty bound = open.
  std::string lower, upper;
  bool include_lower = true, include_upper = true;
  // kTimeRange: inclusive epoch-ms bounds.
  std::int64_t from_ms = std::numeric_limits<std::int64_t>::min();
  std::int64_t to_ms = std::numeric_limits<std::int64_t>::max();

  // How to write it (query_generator.cpp).
  std::string value_text;       // leaves: the rendered value, without `field:`
  bool explicit_field = false;  // leaves on the message: write `message:`
  int op_style = 0;             // And/Or/Not: which operator spelling
  char mark = 0;                // as a clause of an And: '+' (any) or '-' (kNot)
  bool parens = false;          // wrap in redundant parentheses
  std::string group_field;      // inner nodes: written as `group_field:( ... )`
  std::string boost;            // e.g. "^2", written after a primary
};

// Readable, canonical form for failure messages.
std::string DebugString(const RefNode& node);

class ReferenceEvaluator {
 public:
  explicit ReferenceEvaluator(const std::vector<RefEvent>& events);
  ~ReferenceEvaluator();
  ReferenceEvaluator(const ReferenceEvaluator&) = delete;
  ReferenceEvaluator& operator=(const ReferenceEvaluator&) = delete;

  // One flag per event, in the order given to the constructor.
  std::vector<char> Evaluate(const RefNode& node);

  // The most distinct tokens one wildcard position (other than `*` alone)
  // or fuzzy word of any leaf of `node` matches among its field's values in
  // one UTC day of events: what an index that expands such leaves per day
  // partition must list. 0 when `node` has no such leaf.
  std::size_t MaxExpansion(const RefNode& node);

 private:
  struct Data;
  std::unique_ptr<Data> d_;
};

}  // namespace dashcam::testing
