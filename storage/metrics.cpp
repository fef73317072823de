#include "storage/metrics.h"

#include <fmt/format.h>

namespace dashcam {

Counter& Metrics::GetCounter(std::string_view name, std::string_view help,
                             std::string_view labels) {
  std::lock_guard lock(mu_);
  auto it = families_.find(name);
  if (it == families_.end())
    it = families_.emplace(std::string(name), Family{std::string(help), {}}).first;
  auto& slot = it->second.by_labels[std::string(labels)];
  if (!slot) slot = std::make_unique<Counter>();
  return *slot;
}

std::string Metrics::Render() const {
  std::string out;
  std::lock_guard lock(mu_);
  for (const auto& [name, family] : families_) {
    AppendMetricHeader(out, name, family.help, "counter");
    for (const auto& [labels, counter] : family.by_labels) {
      AppendMetricLine(out, name, labels, counter->value());
    }
  }
  return out;
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

}  // namespace dashcam
