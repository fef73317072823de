// Report: see report.h.
#include "tests/bench/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include <fmt/core.h>

namespace dashcam::bench {
namespace {

constexpr int kNameWidth = 36;
constexpr int kValueWidth = 14;

void PrintLine(std::string_view name, std::string_view value, std::string_view unit) {
  std::string line = fmt::format("{:<{}} {:>{}} {}\n", name, kNameWidth, value, kValueWidth, unit);
  std::fwrite(line.data(), 1, line.size(), stdout);
  std::fflush(stdout);
}

}  // namespace

void PrintMetric(std::string_view name, double value, std::string_view unit, int precision) {
  PrintLine(name, fmt::format("{:.{}f}", value, precision), unit);
}

void PrintText(std::string_view name, std::string_view value) {
  PrintLine(name, value, "");
}

double Percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  auto rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(values.size())));
  return values[std::clamp<size_t>(rank, 1, values.size()) - 1];
}

}  // namespace dashcam::bench
