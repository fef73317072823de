#include "api/insight_explanations.h"

#include <cmath>
#include <functional>

#include <fmt/format.h>

#include "api/training_options.h"

namespace dashcam::api {
namespace {

using storage::Field;

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

const Field* FindFact(const InsightEvent& e, std::string_view name) {
  for (const Field& f : e.facts)
    if (f.name == name) return &f;
  return nullptr;
}
std::optional<double> Number(const InsightEvent& e, std::string_view name) {
  const Field* f = FindFact(e, name);
  if (!f || f->type != Field::Type::kNumber) return std::nullopt;
  return f->number;
}
std::string Text(const InsightEvent& e, std::string_view name) {
  const Field* f = FindFact(e, name);
  return f ? f->text : std::string();
}
std::string GiB(double bytes, int decimals) {
  return fmt::format("{:.{}f}", bytes / kGiB, decimals);
}
std::string Integer(double v) {
  return fmt::format("{}", static_cast<long long>(std::llround(v)));
}

// "on gpu-node-07 GPU 0" / "on gpu-node-07" / "".
std::string Where(const InsightEvent& e, bool with_gpu = true) {
  std::string out;
  if (!e.host.empty()) out = " on " + e.host;
  if (with_gpu && e.gpu) out += fmt::format("{} GPU {}", out.empty() ? " on" : "", *e.gpu);
  return out;
}

// "run r-42, user zhangsan, rank 3, first at 10:23:15 UTC".
std::string Who(const InsightEvent& e, TimeMs first_seen) {
  std::string out;
  auto add = [&](const std::string& part) { out += (out.empty() ? "" : ", ") + part; };
  if (!e.run_id.empty()) add("run " + e.run_id);
  if (!e.user.empty()) add("user " + e.user);
  if (e.rank) add(fmt::format("rank {}", *e.rank));
  const std::string ts = FormatRfc3339Ms(first_seen);  // 2026-11-29T10:23:15.123Z
  add("first at " + (ts.size() >= 19 ? ts.substr(11, 8) : ts) + " UTC");
  return out;
}

Explanation CudaOom(const InsightEvent& e, TimeMs t) {
  Explanation x;
  x.title = "CUDA out of memory" + Where(e);
  std::string detail;
  if (auto req = Number(e, "bytes_requested"))
    detail = "tried to allocate " + GiB(*req, 2) + " GiB";
  const auto total = Number(e, "bytes_total"), alloc = Number(e, "bytes_allocated"),
             reserved = Number(e, "bytes_reserved"), free = Number(e, "bytes_free");
  if (alloc && total) {
    detail += fmt::format("{}{} of {} GiB allocated", detail.empty() ? "" : " with ",
                          GiB(*alloc, 1), GiB(*total, 1));
  } else if (total) {
    detail += fmt::format("{}{} GiB total", detail.empty() ? "" : " on a GPU of ", GiB(*total, 1));
  }
  if (reserved) detail += fmt::format(" and {} GiB reserved by PyTorch", GiB(*reserved, 1));
  if (free) detail += fmt::format(" ({} GiB free)", GiB(*free, 1));
  x.explanation = fmt::format("CUDA out of memory{}, {}{}", Where(e), Who(e, t),
                              detail.empty() ? "." : ": " + detail + ".");
  x.fixes = {"Reduce the batch size (or the sequence length) on this GPU",
             "Use gradient accumulation to keep the effective batch size",
             "Use mixed precision (bf16/fp16) and activation checkpointing"};
  if (reserved && alloc && *reserved - *alloc > 0.1 * *reserved) {
    x.fixes.push_back(
        "Much reserved memory is unallocated: set "
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to reduce fragmentation");
  }
  return x;
}

Explanation DriverMismatch(const InsightEvent& e, TimeMs t) {
  Explanation x;
  x.title = "CUDA driver too old" + Where(e, false);
  const std::string driver = Text(e, "driver_version"), required = Text(e, "required_version"),
                    runtime = Text(e, "runtime_version");
  std::string detail;
  if (!driver.empty()) detail = "driver " + driver;
  if (!runtime.empty()) detail += (detail.empty() ? "CUDA " : ", CUDA ") + runtime;
  if (!required.empty()) detail += (detail.empty() ? "" : ", ") + required + " required";
  x.explanation =
      fmt::format("The NVIDIA driver{} does not support the CUDA version this program needs, {}{}",
                  Where(e, false), Who(e, t), detail.empty() ? "." : ": " + detail + ".");
  x.fixes = {"Install a PyTorch/CUDA build that matches the node's driver (nvidia-smi shows it)",
             "Or upgrade the NVIDIA driver on this node",
             "In containers, check the image's CUDA version against the host driver"};
  return x;
}

Explanation GpuUnavailable(const InsightEvent& e, TimeMs t) {
  Explanation x;
  x.title = "No GPU available" + Where(e, false);
  x.explanation = fmt::format("The process found no usable GPU{}, {}.", Where(e, false), Who(e, t));
  x.fixes = {"Check the job requested GPUs (--gres=gpu:N, --gpus, resources.limits)",
             "Check nvidia-smi on the node and CUDA_VISIBLE_DEVICES",
             "In containers, run with the NVIDIA runtime (--gpus all)"};
  return x;
}

Explanation Nccl(const InsightEvent& e, TimeMs t) {
  Explanation x;
  const std::string op = Text(e, "op");
  const auto seq = Number(e, "seq"), timeout = Number(e, "timeout_ms"), ran = Number(e, "ran_ms");
  if (!op.empty() || ran) {
    x.title = "NCCL collective timeout" + (op.empty() ? "" : " in " + op) + Where(e, false);
    std::string detail = op.empty() ? "a collective" : op;
    if (seq) detail += " #" + Integer(*seq);
    if (ran) detail += " ran for " + Integer(*ran) + " ms";
    if (timeout) detail += " (timeout " + Integer(*timeout) + " ms)";
    x.explanation =
        fmt::format("NCCL watchdog timeout{}, {}: {}.", Where(e, false), Who(e, t), detail);
    x.fixes = {"Find the rank that stopped first (a crash or OOM there hangs the others)",
               "Check the network (InfiniBand/RoCE) and run with NCCL_DEBUG=INFO",
               "If a step is legitimately slow, raise the process group timeout"};
    return x;
  }
  const std::string error = Text(e, "error");
  x.title = "NCCL " + std::string(e.severity == "warning" ? "warning" : "error") + Where(e, false);
  std::string detail = error;
  if (auto peer = Number(e, "peer_rank"))
    detail += (detail.empty() ? "" : ", ") + fmt::format("peer rank {}", Integer(*peer));
  if (auto g = Number(e, "p2p_gpu"))
    detail +=
        (detail.empty() ? "" : ", ") + fmt::format("P2P between GPU {} and GPU {}", Integer(*g),
                                                   Integer(Number(e, "p2p_peer_gpu").value_or(-1)));
  if (const std::string v = Text(e, "nccl_version"); !v.empty()) detail += ", NCCL " + v;
  x.explanation = fmt::format("NCCL reported a problem{}, {}{}", Where(e, false), Who(e, t),
                              detail.empty() ? "." : ": " + detail + ".");
  x.fixes = {
      "Run with NCCL_DEBUG=INFO to see which transport and peer failed",
      "For P2P failures, try NCCL_P2P_DISABLE=1 or check the GPU topology (nvidia-smi topo -m)",
      "Check that every rank runs the same NCCL and PyTorch versions"};
  return x;
}

Explanation CudaError(const InsightEvent& e, TimeMs t) {
  Explanation x;
  std::string what = Text(e, "error");
  if (what.empty()) what = Text(e, "status");
  x.title = "CUDA error" + (what.empty() ? "" : ": " + what) + Where(e);
  x.explanation = fmt::format("A CUDA error stopped the process{}, {}{}", Where(e), Who(e, t),
                              what.empty() ? "." : ": " + what + ".");
  x.fixes = {"Rerun with CUDA_LAUNCH_BLOCKING=1 to see the kernel that failed",
             "A device-side assert is usually an index out of range (labels vs. num_classes)",
             "ECC errors point to the hardware: check nvidia-smi -q and the kernel log for Xid"};
  return x;
}

Explanation Xid(const InsightEvent& e, TimeMs t) {
  Explanation x;
  const auto code = Number(e, "xid");
  const std::string meaning = Text(e, "meaning"), pci = Text(e, "pci");
  x.title = fmt::format("GPU Xid {}{}", code ? Integer(*code) : "error", Where(e, false));
  std::string detail = meaning.empty() ? "an NVIDIA driver fault" : meaning;
  if (!pci.empty()) detail += " (PCI " + pci + ")";
  x.explanation = fmt::format("The NVIDIA driver reported Xid {}{}, {}: {}.",
                              code ? Integer(*code) : "?", Where(e, false), Who(e, t), detail);
  if (e.severity == "critical") {
    x.fixes = {"Drain the node and reset the GPU (nvidia-smi -r) or reboot",
               "If it repeats, have the GPU replaced (RMA); check nvidia-smi -q for ECC counts"};
  } else {
    x.fixes = {"Usually the application: look for a CUDA error in the same run just before",
               "If it repeats on one node only, drain it and check the GPU"};
  }
  return x;
}

Explanation ProcessKilled(const InsightEvent& e, TimeMs t) {
  Explanation x;
  const std::string process = Text(e, "process"), signal = Text(e, "signal_name");
  const auto pid = Number(e, "pid"), rss = Number(e, "bytes_anon_rss"),
             exit_code = Number(e, "exit_code");
  const bool host_oom = rss.has_value() || !process.empty();
  x.title = (host_oom ? "Killed by the Linux OOM killer" : "Process killed") + Where(e, false);
  std::string detail;
  if (!process.empty()) detail = process;
  if (pid)
    detail += (detail.empty() ? "pid " : " (pid ") + Integer(*pid) + (detail.empty() ? "" : ")");
  if (rss) detail += fmt::format("{}{} GiB resident", detail.empty() ? "" : ", ", GiB(*rss, 1));
  if (!signal.empty()) detail += (detail.empty() ? "" : ", ") + signal;
  if (exit_code) detail += (detail.empty() ? "exit code " : ", exit code ") + Integer(*exit_code);
  x.explanation = fmt::format("A training process was killed{}, {}{}", Where(e, false), Who(e, t),
                              detail.empty() ? "." : ": " + detail + ".");
  x.fixes = {
      "Host memory: fewer DataLoader workers, smaller prefetch_factor, or a node with more RAM",
      "Check the job's memory limit (cgroup, Slurm --mem, Kubernetes limits)",
      "For a segfault, get a core dump or rerun under faulthandler (python -X faulthandler)"};
  return x;
}

Explanation TrainingMetric(const InsightEvent& e, TimeMs t) {
  Explanation x;
  const auto loss = Number(e, "loss"), grad = Number(e, "grad_norm"), median = Number(e, "median"),
             step = Number(e, "step");
  std::string detail;
  if (step) detail = "step " + Integer(*step);
  auto num = [](double v) { return fmt::format("{:.4g}", v); };
  if (e.kind == "nan_loss") {
    x.title = "Loss became NaN/Inf";
    detail += detail.empty() ? "" : ", ";
    detail += loss ? "loss " + num(*loss) : "loss not finite";
  } else if (e.kind == "loss_spike") {
    x.title = "Loss spike";
    if (loss) detail += (detail.empty() ? "" : ", ") + ("loss " + num(*loss));
    if (median) detail += " against a recent median of " + num(*median);
  } else {
    x.title = "Gradient explosion";
    if (grad) detail += (detail.empty() ? "" : ", ") + ("grad norm " + num(*grad));
    if (median) detail += " against a recent median of " + num(*median);
  }
  if (!e.run_id.empty()) x.title += " in run " + e.run_id;
  x.explanation = fmt::format("{}{}, {}{}", x.title, Where(e, false), Who(e, t),
                              detail.empty() ? "." : ": " + detail + ".");
  x.fixes = {"Lower the learning rate or lengthen the warm-up",
             "Clip gradients (torch.nn.utils.clip_grad_norm_)",
             "With fp16, use a dynamic loss scaler or switch to bf16; check the batch that spiked"};
  return x;
}

struct KindText {
  std::string_view kind;
  Explanation (*explain)(const InsightEvent&, TimeMs);
};
constexpr KindText kKinds[] = {
    {"cuda_oom", CudaOom},
    {"cuda_driver_mismatch", DriverMismatch},
    {"gpu_unavailable", GpuUnavailable},
    {"nccl", Nccl},
    {"cuda_error", CudaError},
    {"xid", Xid},
    {"process_killed", ProcessKilled},
    {"nan_loss", TrainingMetric},
    {"loss_spike", TrainingMetric},
    {"grad_explosion", TrainingMetric},
};

std::optional<std::int64_t> AsInt(const Field& f) {
  // A client can store any number here (1e300): casting one outside int64 is undefined.
  constexpr double kLimit = 9.0e18;
  if (f.type != Field::Type::kNumber || !(std::fabs(f.number) < kLimit)) return std::nullopt;
  return static_cast<std::int64_t>(f.number);
}

}  // namespace

std::optional<InsightEvent> ReadInsightEvent(storage::DocumentView& view) {
  InsightEvent e;
  std::string user_name, host_plain;
  std::optional<std::int64_t> run_rank;
  for (Field& f : view.fields) {
    const bool str = f.type != Field::Type::kNumber;
    if (f.name == "insight.kind" && str) {
      e.kind = f.text;
    } else if (f.name == "insight.severity" && str) {
      e.severity = f.text;
    } else if (f.name == "run.id" && str) {
      if (e.run_id.empty()) e.run_id = f.text;
    } else if (f.name == "host.name" && str) {
      if (e.host.empty()) e.host = f.text;
    } else if (f.name == "host" && str) {
      host_plain = f.text;
    } else if (f.name == "user" && str) {
      if (e.user.empty()) e.user = f.text;
    } else if (f.name == "user.name" && str) {
      user_name = f.text;
    } else if (f.name == "run.rank") {
      run_rank = AsInt(f);
    } else if (f.name.starts_with("insight.")) {
      f.name.erase(0, 8);
      if (f.name == "gpu") e.gpu = AsInt(f);
      if (f.name == "rank") e.rank = AsInt(f);
      e.facts.push_back(std::move(f));
    }
  }
  if (e.kind.empty()) return std::nullopt;
  if (e.severity.empty()) e.severity = "error";
  if (e.host.empty()) e.host = std::move(host_plain);
  if (e.user.empty()) e.user = std::move(user_name);
  if (!e.rank) e.rank = run_rank;
  e.message = std::move(view.message).value_or(std::string());
  return e;
}

Explanation Explain(const InsightEvent& subject, TimeMs first_seen) {
  for (const KindText& k : kKinds) {
    if (k.kind == subject.kind) return k.explain(subject, first_seen);
  }
  Explanation x;
  x.title = subject.kind + Where(subject);
  x.explanation = fmt::format("{}{}, {}.", subject.kind, Where(subject), Who(subject, first_seen));
  return x;
}

int SeverityRank(std::string_view severity) {
  if (severity == "critical") return 3;
  if (severity == "error") return 2;
  if (severity == "warning") return 1;
  return 0;
}

std::string RunLink(const TrainingOptions& options, std::string_view run_id) {
  static constexpr std::string_view kPlaceholder = "{run.id}";
  if (options.run_link.empty()) return {};
  std::string encoded;
  for (unsigned char c : run_id) {
    if ((c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '-' ||
        c == '_' || c == '.' || c == '~') {
      encoded.push_back(static_cast<char>(c));
    } else {
      encoded += fmt::format("%{:02X}", c);
    }
  }
  std::string out = options.run_link;
  for (auto pos = out.find(kPlaceholder); pos != std::string::npos;
       pos = out.find(kPlaceholder, pos + encoded.size())) {
    out.replace(pos, kPlaceholder.size(), encoded);
  }
  return out;
}

}  // namespace dashcam::api
