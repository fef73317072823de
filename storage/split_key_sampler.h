// SplitKeySampler: a histogram split's series when the field has more
// values than HistogramAccumulator can discover.
//
// Thread-safety: one sampler per thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace dashcam::storage {

// The `n` values with the highest counts, most frequent first (ties:
// smaller value first).
std::vector<std::string> MostFrequent(const std::unordered_map<std::string, std::uint64_t>& counts,
                                      std::size_t n);

// Chooses the series when HistogramAccumulator::Add returned false: the
// `n` most frequent values (ties: smaller first) among the newest
// kEvents matching events, counting at most kValues distinct values.
class SplitKeySampler {
 public:
  static constexpr std::size_t kEvents = 100'000;
  static constexpr std::size_t kValues = 100'000;

  // One event's split values; false once kEvents were taken (this one is
  // not, and the sample is then incomplete).
  bool Add(const std::vector<std::string_view>& values);
  // The keys; `complete` says whether every event and value was counted.
  std::vector<std::string> Keys(std::size_t n, bool& complete);

 private:
  std::unordered_map<std::string, std::uint64_t> counts_;
  std::size_t events_ = 0;
  bool truncated_ = false;
};

}  // namespace dashcam::storage
