// HistogramAccumulator: builds a HistogramTable (exploration.h) from events
// fed one at a time, whatever produced them: a scan of documents, a SQL
// GROUP BY, or the per-minute level counts.
//
// Split values either are known up front (`keys`), or are discovered: the
// accumulator then tracks every distinct value it sees, up to
// kMaxDiscoveredValues, and picks the spec.split_size most frequent at
// Finish. Past that many distinct values Add returns false and the caller
// starts again with keys chosen some other way (a sample).
//
// Memory: one HistogramCell per (series, bucket) of the range, allocated for
// a series when it is first used: at most (kMaxDiscoveredValues + 2) x
// kMaxHistogramBuckets cells.
//
// Thread-safety: none; one accumulator per query.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "storage/exploration.h"
#include "storage/status.h"

namespace dashcam::storage {

class HistogramAccumulator {
 public:
  static constexpr std::size_t kMaxDiscoveredValues = 32;

  // Buckets cover [from, to). `keys`: the split values to count apart;
  // nullopt: discover them. REQUIRES: spec.interval > 0, from < to, and at
  // most kMaxHistogramBuckets buckets (BucketCount).
  HistogramAccumulator(TimeMs from, TimeMs to, const HistogramSpec& spec,
                       std::optional<std::vector<std::string>> keys);

  // Buckets the range [from, to) spans at `interval`.
  static std::uint64_t BucketCount(TimeMs from, TimeMs to, TimeMs interval);
  // InvalidArgument, saying how many, when that is more than
  // kMaxHistogramBuckets.
  static Status CheckBucketCount(TimeMs from, TimeMs to, TimeMs interval);

  // One event at time t (in [from, to); others are ignored) with these split
  // values (none: the event lacks the split field) and numeric values of the
  // value field, counted `weight` times (the numbers once). False only when
  // discovering and `split_values` holds a value past kMaxDiscoveredValues
  // distinct ones; the accumulator is then unusable.
  bool Add(TimeMs t, std::span<const std::string_view> split_values,
           std::span<const double> numbers, std::uint64_t weight = 1);

  HistogramTable Finish(bool keys_sampled);

 private:
  using Series = std::vector<HistogramCell>;  // one cell per bucket, or empty (unused)

  void AddTo(Series& s, std::size_t bucket, std::span<const double> numbers, std::uint64_t weight);
  std::optional<std::size_t> SeriesOf(std::string_view value);
  // Discovery: chooses the keys, folding the other series into `other_`.
  void ChooseKeys();

  const TimeMs first_bucket_;  // start of the bucket holding `from`
  const TimeMs from_, to_, interval_;
  const std::size_t buckets_;
  const std::size_t split_size_;
  const bool splitting_;
  const bool discovering_;
  std::vector<std::string> keys_;
  struct Hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, std::size_t, Hash, std::equal_to<>> key_index_;
  std::vector<Series> by_key_;
  Series total_, other_, missing_;
};

}  // namespace dashcam::storage
