// Training metrics from an event (issue 8, section 2): the numbers a
// training loop prints (loss, grad norm, learning rate, step, ...) pulled out
// of the message text, or taken from the event's own structured fields, so
// that they become the numeric fields `train.<name>` (`train.loss:>10`).
//
// Text shapes understood (names case-insensitive, a table of aliases in
// train_metrics.cpp maps each to its canonical metric):
//   name=value, name: value, name value, "name": value, 'name': value
//     (key=value logs, JSON or Python dicts inside the text, Hugging Face
//     Trainer's {'loss': 0.43, 'learning_rate': 5e-05, 'epoch': 0.5},
//     tqdm/Lightning postfixes "loss=0.234, v_num=1", Megatron's
//     "lm loss: 2.345E+00 | grad norm: 1.2", "[Step 100] Loss: 0.4321,
//     Gradient Norm: 1.23", "lr=[0.0001]", "loss: tensor(0.43, ...)")
//   name N/M and name [N/M]  (step 1200/5000, Epoch [3/10]) -> N
//   value unit                (5.41it/s, 1.23s/it, 1234 tokens/s, 12 samples/s)
// A value is a decimal number (exponents allowed) or nan/inf/infinity. It
// must end at a word boundary: "loss 0.5x", "step 12:30:01" (a time),
// "lr 10.0.0.1" (an address), "epoch 2024-01-02" (a date) and "loss of 3"
// give nothing. Units: step_time is seconds ("0.5s", "520ms", it/s
// inverted); gpu_mem is bytes and needs a printed unit ("61.2 GiB", "3.2G",
// binary multiples) or an alias that names it (gpu_mem_mb).
// The first value found for a metric wins.
//
// Structured fields (TakeStructuredMetrics): `train.<name>` sent by the
// client is that metric as sent; top-level `loss`, `train_loss`,
// `grad_norm`, `lr`, `learning_rate`, `step`, `global_step`, `epoch`, ...
// (numbers, or strings holding one, "NaN" included) are the metric too.
// Structured values are exact, so they win over text.
//
// NaN and Inf: a JSON number cannot be either, so a non-finite value is
// never a field; it is flagged (`non_finite`) and the training anomalies
// (training_anomalies.h) turn a NaN/Inf loss into insight.kind:nan_loss.
//
// Cost: a line without any alias costs one pass over its bytes with a table
// lookup each; only a word that starts with an alias's first letter is
// compared. Only the first kMaxScanBytes of a text are looked at.
//
// Thread-safety: stateless functions; call from any thread.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "storage/record.h"

namespace dashcam::ingest {

enum class TrainMetric : std::uint8_t {
  kLoss,
  kGradNorm,
  kLr,
  kStep,
  kEpoch,
  kTokensPerS,
  kSamplesPerS,
  kStepTime,
  kGpuMem,
};
inline constexpr std::size_t kTrainMetricCount = 9;

// "loss", "grad_norm", ... (the name after "train.").
std::string_view TrainMetricName(TrainMetric m);

struct TrainMetrics {
  std::array<double, kTrainMetricCount> value{};
  std::uint16_t present = 0;     // bit m: value[m] holds a finite value
  std::uint16_t non_finite = 0;  // bit m: the value was NaN or +-Inf (value[m] holds it)
  std::uint16_t sent = 0;        // bit m: the event already has the field train.<m>

  static constexpr std::uint16_t Bit(TrainMetric m) {
    return static_cast<std::uint16_t>(1u << static_cast<unsigned>(m));
  }
  bool Has(TrainMetric m) const { return (present & Bit(m)) != 0; }
  bool NonFinite(TrainMetric m) const { return (non_finite & Bit(m)) != 0; }
  bool Sent(TrainMetric m) const { return (sent & Bit(m)) != 0; }
  double Get(TrainMetric m) const { return value[static_cast<std::size_t>(m)]; }
  // Records `v` unless the metric already has a value (the first one wins).
  void Set(TrainMetric m, double v);
  void Clear() { *this = TrainMetrics{}; }
};

// Adds the metrics printed in `text` to `out` (see above).
void ExtractTrainMetrics(std::string_view text, TrainMetrics& out);

// Adds the metrics the event carries as fields (see above) to `out`.
void TakeStructuredMetrics(const std::vector<storage::Field>& fields, TrainMetrics& out);

inline constexpr std::size_t kMaxTrainScanBytes = 16 * 1024;

}  // namespace dashcam::ingest
