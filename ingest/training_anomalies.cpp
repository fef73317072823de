#include "ingest/training_anomalies.h"

#include <algorithm>
#include <cmath>

#include "storage/attrs_codec.h"

namespace dashcam::ingest {
namespace {

using storage::Field;

void AddNumber(std::vector<Field>& facts, std::string name, double v) {
  facts.push_back({std::move(name), Field::Type::kNumber, storage::CanonicalDouble(v), v});
}

std::string_view NonFiniteText(double v) {
  if (std::isnan(v)) return "nan";
  return v > 0 ? "inf" : "-inf";
}

void SetNonFinite(std::string_view kind, double v, Insight& out) {
  out.kind = kind;
  out.severity = "error";
  out.facts.clear();
  out.facts.push_back({"value", Field::Type::kString, std::string(NonFiniteText(v)), 0});
}

}  // namespace

void TrainingAnomalies::Ring::Push(double v) {
  values[next] = v;
  next = (next + 1) % kWindow;
  size = std::min(size + 1, kWindow);
}

double TrainingAnomalies::Ring::Max() const {
  return *std::max_element(values, values + size);
}

double TrainingAnomalies::Ring::Median() const {
  double sorted[kWindow] = {};
  std::copy(values, values + size, sorted);
  std::nth_element(sorted, sorted + size / 2, sorted + size);
  return sorted[size / 2];
}

TrainingAnomalies::TrainingAnomalies(std::size_t max_runs)
    : max_runs_(std::max<std::size_t>(1, max_runs)) {}

std::size_t TrainingAnomalies::runs() const {
  std::lock_guard lock(mu_);
  return runs_.size();
}

TrainingAnomalies::Run& TrainingAnomalies::Touch(std::string_view run_id) {
  if (auto it = runs_.find(run_id); it != runs_.end()) {
    lru_.splice(lru_.begin(), lru_, it->second);
    return lru_.front();
  }
  if (runs_.size() >= max_runs_) {
    runs_.erase(lru_.back().id);
    lru_.pop_back();
  }
  lru_.emplace_front();
  lru_.front().id = std::string(run_id);
  runs_.emplace(lru_.front().id, lru_.begin());
  return lru_.front();
}

// Whether `v` jumps far above `ring`'s recent values; then pushes it. The
// median (a partial sort) is only needed for a value above all the others,
// which in a steady run is about one line in kWindow.
bool TrainingAnomalies::Jumps(Ring& ring, double v, double ratio, double& median) {
  bool jump = false;
  if (ring.size >= kMinValues && v > ring.Max()) {
    median = ring.Median();
    jump = median > 0 && v > ratio * median;
  }
  ring.Push(v);
  return jump;
}

bool TrainingAnomalies::Observe(std::string_view run_id, const TrainMetrics& m, Insight& out) {
  using M = TrainMetric;
  const bool loss = m.Has(M::kLoss), grad = m.Has(M::kGradNorm);
  bool grad_jump = false, loss_jump = false;
  double grad_median = 0, loss_median = 0;
  if (!run_id.empty() && (loss || grad)) {
    std::lock_guard lock(mu_);
    Run& run = Touch(run_id);
    if (grad) {
      grad_jump = Jumps(run.grad_norm, m.Get(M::kGradNorm), kGradExplosionRatio, grad_median);
    }
    if (loss) loss_jump = Jumps(run.loss, m.Get(M::kLoss), kLossSpikeRatio, loss_median);
  }
  if (m.NonFinite(M::kLoss)) {
    SetNonFinite("nan_loss", m.Get(M::kLoss), out);
    return true;
  }
  if (m.NonFinite(M::kGradNorm)) {
    SetNonFinite("grad_explosion", m.Get(M::kGradNorm), out);
    return true;
  }
  out.facts.clear();
  if (grad_jump) {
    out.kind = "grad_explosion";
    out.severity = "error";
    AddNumber(out.facts, "grad_norm", m.Get(M::kGradNorm));
    AddNumber(out.facts, "median", grad_median);
    return true;
  }
  if (loss_jump) {
    out.kind = "loss_spike";
    out.severity = "warning";
    AddNumber(out.facts, "loss", m.Get(M::kLoss));
    AddNumber(out.facts, "median", loss_median);
    return true;
  }
  return false;
}

}  // namespace dashcam::ingest
