// Metrics: dashcam's counters and histograms, rendered in the Prometheus text
// format (version 0.0.4) at GET /metrics. A metric is named once
// ("dashcam_ingest_events_total") and may carry one label set per series
// ("protocol=\"bulk\""); GetCounter()/GetHistogram() return the same object for
// the same name and labels, for the life of the registry. A name has one
// type: REQUIRES that a name is not used both as a counter and a histogram.
//
// Thread-safety: all methods may be called from any thread; counters and
// histograms are lock-free once obtained (callers may keep the reference).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dashcam {

class Counter {
 public:
  void Add(std::uint64_t n = 1) { value_.fetch_add(n, std::memory_order_relaxed); }
  std::uint64_t value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<std::uint64_t> value_{0};
};

// A Prometheus histogram with fixed buckets: Observe() is one relaxed atomic
// increment plus one atomic add to the sum, no lock.
class HistogramMetric {
 public:
  // `bounds`: the buckets' upper bounds (inclusive, `le`), ascending; the
  // +Inf bucket is implicit.
  explicit HistogramMetric(std::span<const double> bounds);

  void Observe(double value);

  // A consistent-enough copy for rendering: the cumulative counts are
  // monotonic by construction and `count` is the +Inf bucket, even while
  // other threads observe; `sum` may lag or lead them by a few observations.
  struct Snapshot {
    std::vector<std::uint64_t> cumulative;  // one per bound, then +Inf
    double sum = 0;
    std::uint64_t count = 0;
  };
  Snapshot Take() const;
  const std::vector<double>& bounds() const { return bounds_; }

 private:
  const std::vector<double> bounds_;
  // Per bucket (not cumulative), bounds_.size() + 1 of them.
  const std::unique_ptr<std::atomic<std::uint64_t>[]> counts_;
  std::atomic<double> sum_{0};
};

// Bucket bounds for latencies in seconds: 1 ms to 10 s.
inline constexpr double kLatencySecondsBuckets[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                                    0.25,  0.5,    1,     2.5,  5,     10};
// Bucket bounds for sizes in events (commit groups): 1 to 64 Ki.
inline constexpr double kBatchSizeBuckets[] = {1, 4, 16, 64, 256, 1024, 4096, 16384, 65536};

class Metrics {
 public:
  // `help` is recorded the first time a name is seen.
  Counter& GetCounter(std::string_view name, std::string_view help, std::string_view labels = "");
  // `help` and `bounds` are recorded the first time a name is seen; every
  // label set of the name has the same buckets.
  HistogramMetric& GetHistogram(std::string_view name, std::string_view help,
                                std::span<const double> bounds, std::string_view labels = "");
  // The Prometheus text exposition of every metric, names in order.
  std::string Render() const;

 private:
  struct Family {
    std::string help;
    std::vector<double> bounds;  // histograms only
    std::map<std::string, std::unique_ptr<Counter>> counters;
    std::map<std::string, std::unique_ptr<HistogramMetric>> histograms;
  };
  Family& FamilyFor(std::string_view name, std::string_view help);  // REQUIRES: mu_ held

  mutable std::mutex mu_;
  std::map<std::string, Family, std::less<>> families_;  // guarded by mu_
};

// What a store's write path reports, whichever the store: events per
// commit (SQLite: one transaction per day of a group; ClickHouse: one
// insert), its wall time, and the commits that failed to store events.
// Thread-safety: Record from any thread.
class CommitMetrics {
 public:
  // `metrics` may be null: nothing is recorded.
  explicit CommitMetrics(Metrics* metrics);
  void Record(std::size_t events, double seconds, bool ok);

 private:
  HistogramMetric* events_ = nullptr;
  HistogramMetric* seconds_ = nullptr;
  Counter* failures_ = nullptr;
};

// Events per second over a sliding minute, in one-second slots. Cheap enough
// to call once per commit group, not meant for once per event.
// Thread-safety: any thread.
class RateWindow {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr int kSeconds = 60;

  void Add(std::uint64_t n, Clock::time_point now = Clock::now());
  // The events added in the kSeconds seconds up to `now` (the current
  // second included).
  std::uint64_t LastMinute(Clock::time_point now = Clock::now()) const;

 private:
  struct Slot {
    std::int64_t second = -1;  // which second the slot counts
    std::uint64_t n = 0;
  };
  mutable std::mutex mu_;
  Slot slots_[kSeconds];  // guarded by mu_
};

// Appends one sample line, `name{labels} value`, for values kept elsewhere.
void AppendMetricLine(std::string& out, std::string_view name, std::string_view labels,
                      std::uint64_t value);
// Appends `# HELP` and `# TYPE` lines.
void AppendMetricHeader(std::string& out, std::string_view name, std::string_view help,
                        std::string_view type);
// Appends a histogram's _bucket, _sum and _count lines.
void AppendHistogramLines(std::string& out, std::string_view name, std::string_view labels,
                          const std::vector<double>& bounds, const HistogramMetric::Snapshot& s);

}  // namespace dashcam
