// TermSource: where the query compiler gets the index terms a wildcard or
// fuzzy term expands to, and the span of a field's numbers for a range —
// one partition's vocabulary and number_ranges (vocabulary.h), or fixed
// lists in tests.
//
// Thread-safety: as the implementation's; the compiler calls it from one
// thread.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "storage/number_ranges.h"
#include "storage/query_ast.h"
#include "storage/status.h"

namespace dashcam::storage {

// Which terms to list: those in [first, limit) (limit empty: no upper bound)
// for which `accept` is true. Message tokens are the terms without a 0x1F;
// a field's string tokens start with FieldTermPrefix(field) (attrs_codec.h).
struct TermRange {
  std::string first;
  std::string limit;
  std::function<bool(std::string_view term)> accept;
};

class TermSource {
 public:
  virtual ~TermSource() = default;
  // The accepted terms of `range`, sorted, stopping after max_terms + 1 (so
  // the caller can tell "more than max_terms"). Errors: DeadlineExceeded,
  // or a storage error.
  virtual Result<std::vector<std::string>> Terms(const TermRange& range, std::size_t max_terms) = 0;
  // What the partition records of the numbers of `field` (a query's field
  // name), for numeric ranges (number_ranges.h). Default: nothing recorded.
  virtual Result<FieldNumbersLookup> Numbers(const std::string& /*field*/) {
    return FieldNumbersLookup{};
  }
  // The share of a sample of the partition's events that leaf `n` matches
  // (by reading them), in [0, 1]; nullopt when unknown. Default: unknown.
  virtual Result<std::optional<double>> Share(const query::Node& /*n*/) {
    return std::optional<double>();
  }
};

// The smallest string greater than every string starting with `prefix`
// (empty when there is none: `prefix` is empty or all 0xFF bytes).
std::string PrefixLimit(std::string_view prefix);

}  // namespace dashcam::storage
