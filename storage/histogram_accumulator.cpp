#include "storage/histogram_accumulator.h"

#include <algorithm>
#include <numeric>

#include <fmt/format.h>

namespace dashcam::storage {
namespace {

TimeMs FloorTo(TimeMs t, TimeMs interval) {
  return t >= 0 ? t / interval * interval : -((-t + interval - 1) / interval) * interval;
}

void MergeCell(HistogramCell& into, const HistogramCell& c) {
  into.count += c.count;
  into.value.Merge(c.value);
}

}  // namespace

std::uint64_t HistogramAccumulator::BucketCount(TimeMs from, TimeMs to, TimeMs interval) {
  if (from >= to || interval <= 0) return 0;
  return static_cast<std::uint64_t>((FloorTo(to - 1, interval) - FloorTo(from, interval)) /
                                    interval) +
         1;
}

Status HistogramAccumulator::CheckBucketCount(TimeMs from, TimeMs to, TimeMs interval) {
  const std::uint64_t buckets = BucketCount(from, to, interval);
  if (buckets <= kMaxHistogramBuckets) return Status::Ok();
  return Status::InvalidArgument(
      fmt::format("the range holds {} buckets of {} ms; at most {} are allowed", buckets, interval,
                  kMaxHistogramBuckets));
}

HistogramAccumulator::HistogramAccumulator(TimeMs from, TimeMs to, const HistogramSpec& spec,
                                           std::optional<std::vector<std::string>> keys)
    : first_bucket_(FloorTo(from, spec.interval)),
      from_(from),
      to_(to),
      interval_(spec.interval),
      buckets_(static_cast<std::size_t>(BucketCount(from, to, spec.interval))),
      split_size_(spec.split_size),
      splitting_(!spec.split_field.empty()),
      discovering_(!keys.has_value()) {
  if (keys) keys_ = std::move(*keys);
  for (std::size_t i = 0; i < keys_.size(); ++i) key_index_.emplace(keys_[i], i);
  by_key_.resize(keys_.size());
}

void HistogramAccumulator::AddTo(Series& s, std::size_t bucket, std::span<const double> numbers,
                                 std::uint64_t weight) {
  if (s.empty()) s.resize(buckets_);
  HistogramCell& cell = s[bucket];
  cell.count += weight;
  for (double v : numbers) cell.value.Add(v);
}

std::optional<std::size_t> HistogramAccumulator::SeriesOf(std::string_view value) {
  auto it = key_index_.find(value);
  if (it != key_index_.end()) return it->second;
  if (!discovering_) return std::nullopt;
  if (keys_.size() >= kMaxDiscoveredValues) return std::nullopt;
  keys_.emplace_back(value);
  by_key_.emplace_back();
  key_index_.emplace(keys_.back(), keys_.size() - 1);
  return keys_.size() - 1;
}

bool HistogramAccumulator::Add(TimeMs t, std::span<const std::string_view> split_values,
                               std::span<const double> numbers, std::uint64_t weight) {
  if (t < from_ || t >= to_) return true;
  const auto bucket = static_cast<std::size_t>((FloorTo(t, interval_) - first_bucket_) / interval_);
  AddTo(total_, bucket, numbers, weight);
  if (!splitting_) return true;
  if (split_values.empty()) {
    AddTo(missing_, bucket, numbers, weight);
    return true;
  }
  for (std::string_view v : split_values) {
    if (auto series = SeriesOf(v)) {
      AddTo(by_key_[*series], bucket, numbers, weight);
    } else if (discovering_) {
      return false;
    } else {
      AddTo(other_, bucket, numbers, weight);
    }
  }
  return true;
}

void HistogramAccumulator::ChooseKeys() {
  std::vector<std::uint64_t> totals(keys_.size(), 0);
  for (std::size_t k = 0; k < keys_.size(); ++k) {
    for (const HistogramCell& c : by_key_[k]) totals[k] += c.count;
  }
  std::vector<std::size_t> order(keys_.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return totals[a] != totals[b] ? totals[a] > totals[b] : keys_[a] < keys_[b];
  });
  std::vector<std::string> keys;
  std::vector<Series> by_key;
  for (std::size_t i = 0; i < order.size(); ++i) {
    Series& s = by_key_[order[i]];
    if (i < split_size_) {
      keys.push_back(std::move(keys_[order[i]]));
      by_key.push_back(std::move(s));
      continue;
    }
    if (s.empty()) continue;
    if (other_.empty()) other_.resize(buckets_);
    for (std::size_t b = 0; b < buckets_; ++b) MergeCell(other_[b], s[b]);
  }
  keys_ = std::move(keys);
  by_key_ = std::move(by_key);
}

HistogramTable HistogramAccumulator::Finish(bool keys_sampled) {
  if (discovering_) ChooseKeys();
  HistogramTable out;
  out.keys_sampled = keys_sampled;
  out.keys = keys_;
  for (std::size_t b = 0; b < buckets_ && !total_.empty(); ++b) {
    if (total_[b].count == 0) continue;
    HistogramTable::Bucket bucket;
    bucket.start = first_bucket_ + static_cast<TimeMs>(b) * interval_;
    bucket.total = total_[b];
    for (const Series& s : by_key_) bucket.by_key.push_back(s.empty() ? HistogramCell{} : s[b]);
    if (!other_.empty()) bucket.other = other_[b];
    if (!missing_.empty()) bucket.missing = missing_[b];
    out.buckets.push_back(std::move(bucket));
  }
  return out;
}

}  // namespace dashcam::storage
