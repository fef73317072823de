#include "storage/split_key_sampler.h"

#include <algorithm>

namespace dashcam::storage {

bool SplitKeySampler::Add(const std::vector<std::string_view>& values) {
  if (events_ == kEvents) {
    truncated_ = true;
    return false;
  }
  ++events_;
  for (std::string_view v : values) {
    // Bounded whatever the documents hold (arrays of many values).
    auto it = counts_.find(std::string(v));
    if (it != counts_.end())
      ++it->second;
    else if (counts_.size() < kValues)
      counts_.emplace(std::string(v), 1);
    else
      truncated_ = true;
  }
  return true;
}

std::vector<std::string> MostFrequent(const std::unordered_map<std::string, std::uint64_t>& counts,
                                      std::size_t n) {
  std::vector<std::pair<std::string, std::uint64_t>> all(counts.begin(), counts.end());
  n = std::min(n, all.size());
  std::partial_sort(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(n), all.end(),
                    [](const auto& a, const auto& b) {
                      return a.second != b.second ? a.second > b.second : a.first < b.first;
                    });
  std::vector<std::string> keys;
  for (std::size_t i = 0; i < n; ++i) keys.push_back(std::move(all[i].first));
  return keys;
}

std::vector<std::string> SplitKeySampler::Keys(std::size_t n, bool& complete) {
  complete = !truncated_;
  return MostFrequent(counts_, n);
}

}  // namespace dashcam::storage
