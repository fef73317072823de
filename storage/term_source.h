// TermSource: where the query compiler gets the index terms a wildcard or
// fuzzy term expands to, the span of a field's numbers for a range, and,
// to choose between the index and rows for Exists, how common a leaf is
// and how many events a range holds — one partition's vocabulary,
// number_ranges, events and level counts (vocabulary.h, match_sample.h),
// or fixed answers in tests.
//
// Thread-safety: as the implementation's; the compiler calls it from one
// thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "storage/number_ranges.h"
#include "storage/query_ast.h"
#include "storage/status.h"
#include "storage/time_format.h"

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
  // Whether leaf `n` matches fewer than `share` of the partition's events,
  // judged from a sample of them (read and checked); nullopt when unknown
  // (the default).
  virtual Result<std::optional<bool>> ShareBelow(const query::Node& /*n*/, double /*share*/) {
    return std::optional<bool>();
  }
  // How many events the partition holds, all and in [from, to); nullopt
  // when unknown (the default).
  struct EventCounts {
    std::uint64_t all = 0;
    std::uint64_t in_range = 0;
  };
  virtual Result<std::optional<EventCounts>> Events(TimeMs /*from*/, TimeMs /*to*/) {
    return std::optional<EventCounts>();
  }
};

// The smallest string greater than every string starting with `prefix`
// (empty when there is none: `prefix` is empty or all 0xFF bytes).
std::string PrefixLimit(std::string_view prefix);

}  // namespace dashcam::storage
