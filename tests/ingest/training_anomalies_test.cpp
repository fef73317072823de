// Unit tests of the per-run anomaly state (ingest/training_anomalies.h):
// NaN/Inf, a spike fires once, a slowly rising or noisy loss does not,
// grad-norm explosions, runs kept apart, and the LRU bound.
#include "ingest/training_anomalies.h"

#include <cmath>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace dashcam::ingest {
namespace {

using M = TrainMetric;

TrainMetrics Loss(double v) {
  TrainMetrics m;
  m.Set(M::kLoss, v);
  return m;
}
TrainMetrics Grad(double v) {
  TrainMetrics m;
  m.Set(M::kGradNorm, v);
  return m;
}

// "r<i>" (appended, not operator+: GCC 12 warns wrongly on the latter).
std::string RunName(int i) {
  std::string s = "r";
  s += std::to_string(i);
  return s;
}

double FactValue(const Insight& i, std::string_view name) {
  for (const auto& f : i.facts) {
    if (f.name == name) return f.number;
  }
  return -1;
}

// How many of `values` (the losses of one run, in order) are anomalies.
int Fires(TrainingAnomalies& a, const std::string& run, const std::vector<double>& values) {
  int fires = 0;
  Insight out;
  for (double v : values) fires += a.Observe(run, Loss(v), out);
  return fires;
}

TEST(TrainingAnomaliesTest, NanAndInfLossWithoutHistoryOrRun) {
  TrainingAnomalies a;
  Insight out;
  ASSERT_TRUE(a.Observe("", Loss(std::numeric_limits<double>::quiet_NaN()), out));
  EXPECT_EQ(out.kind, "nan_loss");
  EXPECT_EQ(out.severity, "error");
  ASSERT_EQ(out.facts.size(), 1u);
  EXPECT_EQ(out.facts[0].name, "value");
  EXPECT_EQ(out.facts[0].text, "nan");
  ASSERT_TRUE(a.Observe("r", Loss(-std::numeric_limits<double>::infinity()), out));
  EXPECT_EQ(out.facts[0].text, "-inf");
  ASSERT_TRUE(a.Observe("r", Grad(std::numeric_limits<double>::infinity()), out));
  EXPECT_EQ(out.kind, "grad_explosion");
  EXPECT_EQ(out.facts[0].text, "inf");
  EXPECT_FALSE(a.Observe("r", Loss(0.5), out));
}

TEST(TrainingAnomaliesTest, SpikeFiresOnceWithFacts) {
  TrainingAnomalies a;
  std::vector<double> losses;
  for (int i = 0; i < 30; ++i) losses.push_back(1.0 + 0.01 * (i % 5));
  EXPECT_EQ(Fires(a, "r", losses), 0);
  Insight out;
  ASSERT_TRUE(a.Observe("r", Loss(9.0), out));
  EXPECT_EQ(out.kind, "loss_spike");
  EXPECT_EQ(out.severity, "warning");
  EXPECT_EQ(FactValue(out, "loss"), 9.0);
  EXPECT_NEAR(FactValue(out, "median"), 1.02, 0.011);
  // Back to normal, or staying at the new level: no more.
  EXPECT_EQ(Fires(a, "r", {1.0, 1.01, 9.0, 8.5, 9.0, 1.0}), 0);
}

TEST(TrainingAnomaliesTest, NeedsMinValuesFirst) {
  TrainingAnomalies a;
  std::vector<double> losses(TrainingAnomalies::kMinValues - 1, 1.0);
  losses.push_back(100.0);  // the 20th value: only 19 known before it
  EXPECT_EQ(Fires(a, "r", losses), 0);
  EXPECT_EQ(Fires(a, "r", {1.0, 99.0}), 0);  // 100 is in the window: 99 is not above all of it
  EXPECT_EQ(Fires(a, "r", {100.5}), 1);
}

TEST(TrainingAnomaliesTest, SlowRiseFallingLossAndNoiseDoNotFire) {
  TrainingAnomalies a;
  std::vector<double> rising, falling, noisy;
  for (int i = 0; i < 500; ++i) rising.push_back(1.0 * std::pow(1.02, i));  // x20000 overall
  for (int i = 0; i < 500; ++i) falling.push_back(10.0 * std::exp(-i / 50.0));
  // Values near zero that jump around by more than 3x, all the time.
  for (int i = 0; i < 500; ++i) noisy.push_back(i % 7 == 0 ? 0.009 : 0.001 + 0.0001 * (i % 3));
  EXPECT_EQ(Fires(a, "rising", rising), 0);
  EXPECT_EQ(Fires(a, "falling", falling), 0);
  EXPECT_EQ(Fires(a, "noisy", noisy), 0);
}

TEST(TrainingAnomaliesTest, GradExplosionUsesItsOwnRatio) {
  TrainingAnomalies a;
  Insight out;
  for (int i = 0; i < 25; ++i) EXPECT_FALSE(a.Observe("r", Grad(1.0 + 0.1 * (i % 3)), out));
  EXPECT_FALSE(a.Observe("r", Grad(5.0), out));  // 5x: not an explosion
  ASSERT_TRUE(a.Observe("r", Grad(50.0), out));
  EXPECT_EQ(out.kind, "grad_explosion");
  EXPECT_EQ(out.severity, "error");
  EXPECT_EQ(FactValue(out, "grad_norm"), 50.0);
  EXPECT_NEAR(FactValue(out, "median"), 1.1, 1e-9);
}

TEST(TrainingAnomaliesTest, RunsAreKeptApart) {
  TrainingAnomalies a;
  EXPECT_EQ(Fires(a, "small", std::vector<double>(30, 0.1)), 0);
  // A run whose loss is simply higher is not a spike of the other run.
  EXPECT_EQ(Fires(a, "big", std::vector<double>(30, 5.0)), 0);
  EXPECT_EQ(Fires(a, "small", {0.5}), 1);
  // No run: no history, so no spike.
  EXPECT_EQ(Fires(a, "", std::vector<double>(30, 0.1)), 0);
  EXPECT_EQ(Fires(a, "", {50.0}), 0);
  EXPECT_EQ(a.runs(), 2u);
}

TEST(TrainingAnomaliesTest, LruBoundsTheRunsKept) {
  TrainingAnomalies a(3);
  EXPECT_EQ(Fires(a, "old", std::vector<double>(30, 1.0)), 0);
  for (int i = 0; i < 2; ++i) Fires(a, RunName(i), {1.0});
  EXPECT_EQ(Fires(a, "old", {1.0}), 0);  // touched: now the most recent
  Fires(a, "r2", {1.0});                 // evicts r0, the least recent
  EXPECT_EQ(a.runs(), 3u);
  EXPECT_EQ(Fires(a, "old", {10.0}), 1);  // its history survived
  for (int i = 3; i < 10; ++i) Fires(a, RunName(i), {1.0});
  EXPECT_EQ(a.runs(), 3u);
  EXPECT_EQ(Fires(a, "old", {30.0}), 0);  // forgotten: starts again with no history
}

TEST(TrainingAnomaliesTest, ConcurrentObserversKeepTheBound) {
  TrainingAnomalies a(64);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&a, t] {
      Insight out;
      for (int i = 0; i < 2000; ++i) {
        a.Observe(std::to_string((i * 7 + t) % 200), Loss(1.0), out);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(a.runs(), 64u);
}

}  // namespace
}  // namespace dashcam::ingest
