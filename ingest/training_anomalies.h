// TrainingAnomalies: the insight kinds that come from a run's numbers rather
// than from one line's text (issue 8, section 1):
//
//   nan_loss        error    the loss is NaN or +-Inf.
//                            facts: value ("nan", "inf", "-inf")
//   loss_spike      warning  the loss is more than kLossSpikeRatio times the
//                            median of the run's last kWindow losses, and
//                            above all of them, once kMinValues are known.
//                            facts: loss, median
//   grad_explosion  error    the grad norm is NaN/Inf, or more than
//                            kGradExplosionRatio times the median of the
//                            run's last kWindow grad norms and above all of
//                            them, once kMinValues are known.
//                            facts: grad_norm, median (value when not finite)
//
// Why these constants: 20 values make a median that one noisy step cannot
// move; 50 follow a loss that falls during training (the median lags, so a
// falling loss never looks like a spike) while forgetting old phases. "Above
// all of them" keeps a noisy run (whose window already holds values as high)
// quiet and makes a jump to a new, higher level fire once, not on every
// line until the median catches up. A slowly rising loss moves the median
// with it and never fires. A median <= 0 (a loss that can be negative)
// disables the ratio tests. Non-finite values are not kept in the window.
//
// (The AMP/DeepSpeed "OVERFLOW! ... Skipping step" lines are nan_loss
// warnings found by the regex table in insight_detectors.cpp.)
//
// State: per run id, a ring of the last kWindow losses and grad norms. At
// most `max_runs` runs are kept; the least recently seen is forgotten first
// (an LRU), so memory is bounded (~1 KiB a run) whatever the clients send.
// Events without a run id are judged on their own (NaN/Inf only).
//
// Events may be observed in any order across connections; a batch's lines
// interleave with other batches', which only shifts a window by a few values.
//
// Thread-safety: Observe may be called from any number of threads at once
// (one mutex; the critical section is a hash lookup, a ring push and, for
// lines that carry a loss or grad norm, a max of <= 50 values; a median
// only for a value above that max).
#pragma once

#include <cstddef>
#include <list>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "ingest/insight_detectors.h"
#include "ingest/train_metrics.h"

namespace dashcam::ingest {

class TrainingAnomalies {
 public:
  static constexpr std::size_t kWindow = 50;
  static constexpr std::size_t kMinValues = 20;
  static constexpr double kLossSpikeRatio = 3.0;
  static constexpr double kGradExplosionRatio = 10.0;

  // REQUIRES: max_runs > 0. Default: 10 000 runs.
  explicit TrainingAnomalies(std::size_t max_runs = 10'000);
  TrainingAnomalies(const TrainingAnomalies&) = delete;
  TrainingAnomalies& operator=(const TrainingAnomalies&) = delete;

  // Takes one event's metrics into run `run_id`'s history (empty: no run)
  // and says whether they are an anomaly. A NaN/Inf loss wins over a grad
  // explosion, which wins over a loss spike. Returns false and leaves `out`
  // unspecified when nothing is anomalous.
  bool Observe(std::string_view run_id, const TrainMetrics& metrics, Insight& out);

  // Runs currently tracked (<= max_runs).
  std::size_t runs() const;

 private:
  struct Ring {
    double values[kWindow] = {};
    std::size_t size = 0;  // values held, <= kWindow
    std::size_t next = 0;  // where the next value goes
    void Push(double v);
    // The largest value held / the median (upper middle); REQUIRES size > 0.
    double Max() const;
    double Median() const;
  };
  struct Run {
    std::string id;
    Ring loss;
    Ring grad_norm;
  };
  struct Hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  using Lru = std::list<Run>;  // most recently seen first

  Run& Touch(std::string_view run_id);  // REQUIRES: mu_ held
  static bool Jumps(Ring& ring, double v, double ratio, double& median);

  // Constant after construction.
  const std::size_t max_runs_;

  mutable std::mutex mu_;
  Lru lru_;                                                                     // guarded by mu_
  std::unordered_map<std::string, Lru::iterator, Hash, std::equal_to<>> runs_;  // guarded by mu_
};

}  // namespace dashcam::ingest
