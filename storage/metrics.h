// Metrics: dashcam's counters, rendered in the Prometheus text format at
// GET /metrics. A counter is named once ("dashcam_ingest_events_total") and
// may carry one label set ("protocol=\"bulk\""); Counter() returns the same
// object for the same name and labels, for the life of the registry.
//
// Thread-safety: all methods may be called from any thread; counters are
// lock-free once obtained (callers may keep the reference).
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>

namespace dashcam {

class Counter {
 public:
  void Add(std::uint64_t n = 1) { value_.fetch_add(n, std::memory_order_relaxed); }
  std::uint64_t value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<std::uint64_t> value_{0};
};

class Metrics {
 public:
  // `help` is recorded the first time a name is seen.
  Counter& GetCounter(std::string_view name, std::string_view help, std::string_view labels = "");
  // The Prometheus text exposition of every counter, names in order.
  std::string Render() const;

 private:
  struct Family {
    std::string help;
    std::map<std::string, std::unique_ptr<Counter>> by_labels;
  };
  mutable std::mutex mu_;
  std::map<std::string, Family, std::less<>> families_;  // guarded by mu_
};

// Appends one sample line, `name{labels} value`, for values kept elsewhere.
void AppendMetricLine(std::string& out, std::string_view name, std::string_view labels,
                      std::uint64_t value);
// Appends `# HELP` and `# TYPE` lines.
void AppendMetricHeader(std::string& out, std::string_view name, std::string_view help,
                        std::string_view type);

}  // namespace dashcam
