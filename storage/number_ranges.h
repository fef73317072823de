// Number ranges: what a partition records of each field's numbers, so that
// a range query (`gpu_mem_mb:>=77998`) reads a few index terms instead of
// every event's document.
//
// The index holds a number as one term, <name> 0x1F '#' <canonical text>
// (attrs_codec.h), and canonical text does not sort like numbers, so no term
// range holds a numeric range. But the text of a plain number (an integer or
// a decimal without exponent) starts with the digits of its integer part, so
// a few text prefixes cover any range of integer parts: [70001, 78000] is
// 7000[1-9], 700[1-9], 70[1-9], 7[1-7] and 78000. A prefix also matches
// longer numbers (`7` matches 7, 75 and 7123456), so the prefixes give
// candidates and reading the candidate events decides; clipping the range
// to the least and greatest value the field holds keeps the prefixes long.
// When every number of the field is a non-negative integer of as many
// digits as the others (gpu_mem_mb, a step count), a prefix matches exactly
// the integers it stands for, and the prefixes are the answer: no event is
// read.
//
//   number_ranges(field TEXT PRIMARY KEY, lo REAL, hi REAL, plain INTEGER,
//                 strings INTEGER, integers INTEGER) WITHOUT ROWID
//
// One row per field name (as indexed: FieldTermPrefix without its 0x1F)
// that has a number, or a string that reads whole as one: kRange of
// query_ast.h compares both. lo and hi: the least and greatest of them;
// plain: 1 while every number is plain and below 2^53 in magnitude (so its
// text and its double agree digit for digit); strings: 1 once a string
// value reads as a number (an index text term, which no number prefix
// finds); integers: 1 while every number is written as a non-negative
// integer, no sign, point or exponent (since schema 13; 0 in rows from
// before, as nothing is known of their numbers).
// The writer widens a row in the transaction that stores the
// events and never narrows it: a deleted event may leave it wider than the
// live ones, which costs candidates, never answers.
//
// Thread-safety: a collector belongs to its writer's thread; the rest are
// pure functions.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "storage/query_ast.h"

namespace dashcam::storage {

// Part of the partition schema (partition.h).
inline constexpr const char* kNumberRangesSchemaSql =
    "CREATE TABLE IF NOT EXISTS number_ranges(field TEXT PRIMARY KEY, lo REAL NOT NULL, "
    "hi REAL NOT NULL, plain INTEGER NOT NULL, strings INTEGER NOT NULL, integers INTEGER NOT "
    "NULL DEFAULT 0) WITHOUT ROWID;";

// One field's row.
struct FieldNumbers {
  double lo = 0;
  double hi = 0;
  bool plain = true;
  bool strings = false;
  bool integers = false;

  void Widen(const FieldNumbers& o);
};

// What a partition knows of one field's numbers.
struct FieldNumbersLookup {
  // False: the partition does not record them (a file created before
  // number_ranges, or a field left out of the index).
  bool recorded = false;
  // When recorded: the field's row, or nullopt when it has no number.
  std::optional<FieldNumbers> numbers;
};

// Learns the numbers a transaction indexes, one attrs record at a time
// (IndexedTermSink::OnFieldValue), and keeps them until the transaction
// ends.
class NumberRangeCollector {
 public:
  // An attrs record: `type` 'n' (value: canonical number text), 's' or 'k'.
  void Add(std::string_view name, char type, std::string_view value);

  // The rows this transaction widens, by field name.
  const std::vector<std::pair<std::string, FieldNumbers>>& pending() const { return pending_; }
  // The transaction ended (committed or rolled back).
  void Clear() { pending_.clear(); }

 private:
  FieldNumbers* Row(std::string_view name, double first);

  std::vector<std::pair<std::string, FieldNumbers>> pending_;
};

// The number a string value reads as for kRange (std::from_chars, whole),
// or nullopt.
std::optional<double> ReadNumber(std::string_view text);

// The most prefixes NumberPrefixes returns; past it the range is read
// event by event.
inline constexpr std::size_t kMaxNumberPrefixes = 64;

// How a numeric range runs in one partition.
struct NumberRangePlan {
  enum class Kind {
    kScan,      // read every event (nothing recorded helps)
    kNone,      // no event of the partition can match
    kPrefixes,  // the candidates are the numbers starting with `prefixes`
  };
  Kind kind = Kind::kScan;
  // Canonical-text prefixes ("-12", "7799"), none a prefix of another.
  std::vector<std::string> prefixes;
  // kPrefixes: the numbers starting with `prefixes` are exactly those in
  // the range (FieldNumbers::integers, and as many digits each).
  bool exact = false;
};

// The plan for `r` (numeric bounds: both parse whole as numbers, or are
// empty) over a field whose recorded numbers are `numbers` (nullopt: none).
NumberRangePlan PlanNumberRange(const query::Range& r, const std::optional<FieldNumbers>& numbers);

}  // namespace dashcam::storage
