// Metrics registry: histogram buckets (le semantics, cumulative rendering
// under concurrent observers) and the one-minute rate window.
#include "storage/metrics.h"

#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace dashcam {
namespace {

TEST(HistogramMetricTest, BucketsAreInclusiveUpperBoundsAndCumulative) {
  const double bounds[] = {1, 10};
  HistogramMetric h(bounds);
  for (double v : {0.5, 1.0, 1.5, 10.0, 11.0}) h.Observe(v);
  const auto s = h.Take();
  EXPECT_EQ(s.cumulative, (std::vector<std::uint64_t>{2, 4, 5}));  // le=1, le=10, +Inf
  EXPECT_EQ(s.count, 5u);
  EXPECT_DOUBLE_EQ(s.sum, 24.0);
}

TEST(HistogramMetricTest, CountIsTheInfBucketWhileOtherThreadsObserve) {
  HistogramMetric h(kLatencySecondsBuckets);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&h, t] {
      for (int i = 0; i < 20000; ++i) h.Observe(0.0001 * ((i + t) % 200000));
    });
  }
  for (int i = 0; i < 200; ++i) {
    const auto s = h.Take();
    EXPECT_EQ(s.count, s.cumulative.back());
    for (std::size_t b = 1; b < s.cumulative.size(); ++b) {
      EXPECT_LE(s.cumulative[b - 1], s.cumulative[b]);
    }
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(h.Take().count, 80000u);
}

TEST(MetricsTest, RendersHistogramFamiliesWithLabelsAndOneHeader) {
  Metrics m;
  const double bounds[] = {0.5};
  m.GetHistogram("x_seconds", "X.", bounds, "endpoint=\"a\"").Observe(0.25);
  m.GetHistogram("x_seconds", "X.", bounds, "endpoint=\"b\"").Observe(2);
  m.GetCounter("y_total", "Y.").Add(3);
  EXPECT_EQ(m.Render(),
            "# HELP x_seconds X.\n# TYPE x_seconds histogram\n"
            "x_seconds_bucket{endpoint=\"a\",le=\"0.5\"} 1\n"
            "x_seconds_bucket{endpoint=\"a\",le=\"+Inf\"} 1\n"
            "x_seconds_sum{endpoint=\"a\"} 0.25\n"
            "x_seconds_count{endpoint=\"a\"} 1\n"
            "x_seconds_bucket{endpoint=\"b\",le=\"0.5\"} 0\n"
            "x_seconds_bucket{endpoint=\"b\",le=\"+Inf\"} 1\n"
            "x_seconds_sum{endpoint=\"b\"} 2\n"
            "x_seconds_count{endpoint=\"b\"} 1\n"
            "# HELP y_total Y.\n# TYPE y_total counter\ny_total 3\n");
}

TEST(RateWindowTest, CountsTheLastSixtySecondsOnly) {
  RateWindow w;
  const RateWindow::Clock::time_point t0{std::chrono::seconds(1000)};
  w.Add(5, t0);
  w.Add(7, t0 + std::chrono::milliseconds(500));  // same second
  w.Add(1, t0 + std::chrono::seconds(30));
  EXPECT_EQ(w.LastMinute(t0), 12u);
  EXPECT_EQ(w.LastMinute(t0 + std::chrono::seconds(59)), 13u);
  EXPECT_EQ(w.LastMinute(t0 + std::chrono::seconds(60)), 1u);  // second 1000 has left
  // A slot reused 60 s later starts over rather than adding to the old count.
  w.Add(2, t0 + std::chrono::seconds(60));
  EXPECT_EQ(w.LastMinute(t0 + std::chrono::seconds(60)), 3u);
  EXPECT_EQ(w.LastMinute(t0 + std::chrono::seconds(200)), 0u);
}

}  // namespace
}  // namespace dashcam
