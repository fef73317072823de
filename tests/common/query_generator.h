// QueryGenerator: random queries over the whole query language (README
// "Query language", api/query_parser.h), built from values actually present
// in a set of events (and some that are absent), as RefNode trees that the
// ReferenceEvaluator answers and RenderQuery() writes as query text.
//
// Every tree is generated together with the way it is written: operator
// spellings, +/- marks, field groups, escapes, redundant parentheses and
// boosts are chosen at generation time and stored in the node, so
// RenderQuery is a pure function and a failing query can be regenerated
// from the seed alone. A tree's meaning never depends on how it is written:
// the renderer adds whatever parentheses the grammar needs.
//
// Determinism: the same events, seed, features and `now_ms` give the same
// queries on every platform (the PRNG is the generator's own).
//
// Thread-safety: a generator is not safe for concurrent use.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tests/common/reference_evaluator.h"

namespace dashcam::testing {

// Which parts of the language to generate; the test turns on what the
// server under test implements.
struct QueryFeatures {
  bool lowercase_operators = false;  // and or not
  bool symbol_operators = false;     // && || !
  bool marks = false;                // +a -a, and or-groups of marked clauses
  bool field_groups = false;         // field:(a OR b)
  bool wildcards = false;            // cud? *memory gpu-node-*
  bool regexes = false;              // /re/ field:/re/
  bool ranges = false;               // [a TO b] {a TO *] >5 <=5 on fields
  bool timestamp_ranges = false;     // @timestamp ranges, dates, date math
  bool exists = false;               // _exists_:f f:*
  bool fuzzy = false;                // word~1
  bool near = false;                 // "a b"~3
  bool index_field = false;          // _index:...
  bool id_field = false;             // _id:...
  bool boosts = false;               // a^2 (no effect on hits)
  bool keyword_fields = false;       // whole-value leaves on run.id
  // Percent of queries that may use the leaves a backend checks by reading
  // each candidate event (ranges on fields other than @timestamp, exists,
  // regexes): they cost far more than the others when nothing narrows the
  // candidates, so a test with a time budget caps them.
  int document_leaf_percent = 100;
};

class QueryGenerator {
 public:
  // `events` must outlive the generator. `now_ms` is what `now` means in
  // date math; dates near enough to it or to events for a clock difference
  // between test and server to matter are not generated.
  QueryGenerator(const std::vector<RefEvent>& events, std::uint64_t seed, QueryFeatures features,
                 std::int64_t now_ms);
  ~QueryGenerator();
  QueryGenerator(const QueryGenerator&) = delete;
  QueryGenerator& operator=(const QueryGenerator&) = delete;

  RefNode Next();

  // `tree` AND a new leaf (either side): for a tree that matches too many
  // events to be worth comparing in full. REQUIRES: tree is not kAll.
  RefNode Narrow(RefNode tree);
  // `tree` OR a new leaf, for a tree that matches nothing.
  RefNode Widen(RefNode tree);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The query text for `root` (see the header comment).
std::string RenderQuery(const RefNode& root);

}  // namespace dashcam::testing
