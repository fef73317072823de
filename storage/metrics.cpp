#include "storage/metrics.h"

#include <algorithm>

#include <fmt/format.h>

namespace dashcam {

HistogramMetric::HistogramMetric(std::span<const double> bounds)
    : bounds_(bounds.begin(), bounds.end()),
      counts_(std::make_unique<std::atomic<std::uint64_t>[]>(bounds.size() + 1)) {}

void HistogramMetric::Observe(double value) {
  // The first bucket whose bound is >= value; past the last bound, +Inf.
  const auto i = static_cast<std::size_t>(std::lower_bound(bounds_.begin(), bounds_.end(), value) -
                                          bounds_.begin());
  counts_[i].fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(value, std::memory_order_relaxed);
}

HistogramMetric::Snapshot HistogramMetric::Take() const {
  Snapshot s;
  s.cumulative.reserve(bounds_.size() + 1);
  std::uint64_t total = 0;
  for (std::size_t i = 0; i <= bounds_.size(); ++i) {
    total += counts_[i].load(std::memory_order_relaxed);
    s.cumulative.push_back(total);
  }
  s.count = total;
  s.sum = sum_.load(std::memory_order_relaxed);
  return s;
}

Metrics::Family& Metrics::FamilyFor(std::string_view name, std::string_view help) {
  auto it = families_.find(name);
  if (it == families_.end()) {
    it = families_.emplace(std::string(name), Family{}).first;
    it->second.help = help;
  }
  return it->second;
}

Counter& Metrics::GetCounter(std::string_view name, std::string_view help,
                             std::string_view labels) {
  std::lock_guard lock(mu_);
  auto& slot = FamilyFor(name, help).counters[std::string(labels)];
  if (!slot) slot = std::make_unique<Counter>();
  return *slot;
}

HistogramMetric& Metrics::GetHistogram(std::string_view name, std::string_view help,
                                       std::span<const double> bounds, std::string_view labels) {
  std::lock_guard lock(mu_);
  Family& family = FamilyFor(name, help);
  if (family.histograms.empty()) family.bounds.assign(bounds.begin(), bounds.end());
  auto& slot = family.histograms[std::string(labels)];
  if (!slot) slot = std::make_unique<HistogramMetric>(family.bounds);
  return *slot;
}

std::string Metrics::Render() const {
  std::string out;
  std::lock_guard lock(mu_);
  for (const auto& [name, family] : families_) {
    if (!family.histograms.empty()) {
      AppendMetricHeader(out, name, family.help, "histogram");
      for (const auto& [labels, h] : family.histograms) {
        AppendHistogramLines(out, name, labels, h->bounds(), h->Take());
      }
      continue;
    }
    AppendMetricHeader(out, name, family.help, "counter");
    for (const auto& [labels, counter] : family.counters) {
      AppendMetricLine(out, name, labels, counter->value());
    }
  }
  return out;
}

void RateWindow::Add(std::uint64_t n, Clock::time_point now) {
  const std::int64_t second =
      std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count();
  std::lock_guard lock(mu_);
  Slot& slot = slots_[second % kSeconds];
  if (slot.second != second) slot = Slot{second, 0};
  slot.n += n;
}

std::uint64_t RateWindow::LastMinute(Clock::time_point now) const {
  const std::int64_t second =
      std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count();
  std::lock_guard lock(mu_);
  std::uint64_t total = 0;
  for (const Slot& slot : slots_) {
    if (slot.second > second - kSeconds && slot.second <= second) total += slot.n;
  }
  return total;
}

void AppendMetricLine(std::string& out, std::string_view name, std::string_view labels,
                      std::uint64_t value) {
  if (labels.empty())
    fmt::format_to(std::back_inserter(out), "{} {}\n", name, value);
  else
    fmt::format_to(std::back_inserter(out), "{}{{{}}} {}\n", name, labels, value);
}

void AppendMetricHeader(std::string& out, std::string_view name, std::string_view help,
                        std::string_view type) {
  fmt::format_to(std::back_inserter(out), "# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

void AppendHistogramLines(std::string& out, std::string_view name, std::string_view labels,
                          const std::vector<double>& bounds, const HistogramMetric::Snapshot& s) {
  const std::string sep = labels.empty() ? "" : ",";
  auto it = std::back_inserter(out);
  for (std::size_t i = 0; i < s.cumulative.size(); ++i) {
    const std::string le = i < bounds.size() ? fmt::format("{}", bounds[i]) : "+Inf";
    fmt::format_to(it, "{}_bucket{{{}{}le=\"{}\"}} {}\n", name, labels, sep, le, s.cumulative[i]);
  }
  const std::string braces = labels.empty() ? "" : fmt::format("{{{}}}", labels);
  fmt::format_to(it, "{}_sum{} {}\n", name, braces, s.sum);
  fmt::format_to(it, "{}_count{} {}\n", name, braces, s.count);
}

CommitMetrics::CommitMetrics(Metrics* metrics) {
  if (metrics == nullptr) return;
  events_ = &metrics->GetHistogram(
      "dashcam_commit_group_events",
      "Events per commit (SQLite: one transaction per day; ClickHouse: one insert).",
      kBatchSizeBuckets);
  seconds_ =
      &metrics->GetHistogram("dashcam_commit_duration_seconds",
                             "Wall time of one commit (SQLite: from its first write, parts of a "
                             "batch waited for included, to the fsync; ClickHouse: the cluster's "
                             "answer).",
                             kLatencySecondsBuckets);
  failures_ = &metrics->GetCounter("dashcam_commit_failures_total",
                                   "Commits that failed to store some events.");
}

void CommitMetrics::Record(std::size_t events, double seconds, bool ok) {
  if (events_ == nullptr) return;
  events_->Observe(static_cast<double>(events));
  seconds_->Observe(seconds);
  if (!ok) failures_->Add();
}

}  // namespace dashcam
