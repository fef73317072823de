// FieldStatsCollector: the facets of a set of documents (FieldsSummary,
// exploration.h): every field seen, how many documents have it, its value
// types and its most frequent values. Fields are DocumentReader's (dotted
// names, one value per array element), plus `message` and `_index`.
//
// Memory is bounded whatever the documents hold: at most Budget::max_fields
// field names and Budget::max_values distinct (field, value) pairs totalling
// Budget::max_value_bytes are tracked. Past that, new names are dropped
// (FieldsSummary::fields_truncated) and new values of known fields are not
// counted (FieldSummary::distinct_exact = false); counts of values already
// tracked stay exact.
//
// Thread-safety: none; one collector per query.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "storage/document_reader.h"
#include "storage/exploration.h"

namespace dashcam::storage {

class FieldStatsCollector {
 public:
  struct Budget {
    std::size_t max_fields = 1000;
    std::size_t max_values = 200'000;
    std::size_t max_value_bytes = 32u << 20;
  };

  explicit FieldStatsCollector(Budget budget) : budget_(budget) {}
  FieldStatsCollector() : FieldStatsCollector(Budget{}) {}

  // One document; `index` is the index it was written to (may be empty).
  void Add(const DocumentView& doc, std::string_view index);

  // The summary with `top` values per field; `complete` is passed through.
  FieldsSummary Finish(std::size_t top, bool complete) const;

 private:
  struct Hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  template <class V>
  using Map = std::unordered_map<std::string, V, Hash, std::equal_to<>>;

  struct ValueState {
    std::uint64_t events = 0;
    std::uint64_t last_doc = 0;  // the document that last counted it (arrays count once)
  };
  struct FieldState {
    std::uint64_t events = 0;
    std::uint64_t last_doc = 0;
    bool has_string = false, has_number = false, has_bool = false;
    bool values_dropped = false;
    Map<ValueState> values;
  };

  void AddValue(std::string_view name, Field::Type type, std::string_view text);

  const Budget budget_;
  std::uint64_t docs_ = 0;  // documents added; also the id of the current one
  std::size_t values_ = 0, value_bytes_ = 0;
  bool fields_dropped_ = false;
  Map<FieldState> fields_;
};

}  // namespace dashcam::storage
