#include "tests/common/fleet_corpus.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <optional>

#include <boost/json.hpp>

#include "storage/time_format.h"

namespace dashcam::testing {
namespace {

namespace json = boost::json;

constexpr int64_t kSecond = 1000;
constexpr int64_t kMinute = 60 * kSecond;
constexpr int kFleetRuns = 30;
constexpr int kFleetHosts = 8;
constexpr std::array<const char*, 5> kFleetUsers = {"zhangsan", "alice", "bob", "wei", "lisi"};
constexpr double kGiB = 1024.0 * 1024 * 1024;

enum class Style { kRankLine, kHuggingFace, kLightning };

enum class Ending { kFinished, kStalled, kRunning, kFailed };

// Where a line goes and who printed it.
struct Origin {
  std::string host;
  std::string path;
  std::string user;
  std::string run_id;     // empty: no run_id member
  std::string container;  // empty: no container member
};

class Builder {
 public:
  // Adds an event; returns its id.
  std::string Add(int64_t ts, const Origin& o, std::string_view level, std::string_view message) {
    json::object doc;
    doc["@timestamp"] = dashcam::FormatRfc3339Ms(ts);
    doc["message"] = message;
    json::object log;
    if (!level.empty()) log["level"] = level;
    log["file"] = json::object{{"path", o.path}};
    doc["log"] = std::move(log);
    doc["host"] = json::object{{"name", o.host}};
    if (!o.user.empty()) doc["user"] = o.user;
    if (!o.run_id.empty()) doc["run_id"] = o.run_id;
    if (!o.container.empty()) doc["container"] = json::object{{"id", o.container}};
    char id[24];
    std::snprintf(id, sizeof id, "f-%06zu", events_.size());
    events_.push_back({id, ts, json::serialize(doc)});
    return id;
  }
  std::vector<FleetEvent> Take() {
    std::stable_sort(events_.begin(), events_.end(),
                     [](const FleetEvent& a, const FleetEvent& b) { return a.ts_ms < b.ts_ms; });
    return std::move(events_);
  }

 private:
  std::vector<FleetEvent> events_;
};

// A small deterministic noise source in [-1, 1).
double Noise(uint64_t a, uint64_t b) {
  uint64_t x = a * 0x9E3779B97F4A7C15ULL ^ (b + 0x632BE59BD9B4E019ULL);
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ULL;
  x ^= x >> 29;
  return static_cast<double>(x % 20000) / 10000.0 - 1.0;
}

std::string Fixed(double v, int digits) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string Host(int h) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "gpu-node-%02d", h % kFleetHosts + 1);
  return buf;
}

std::string RunName(int i) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "r-%02d", i);
  return buf;
}

// The step line of `style` at step index k (50 optimizer steps apart).
std::string FleetStepLine(Style style, int rank, int k, const std::string& loss,
                          const std::string& grad_norm) {
  const int step = k * 50;
  const double epoch = k / 20.0;
  switch (style) {
    case Style::kRankLine:
      return "[rank" + std::to_string(rank) + "]: epoch " + std::to_string(k / 20) + " step " +
             std::to_string(step) + "/5000 loss=" + loss + " grad_norm=" + grad_norm +
             " lr=3.0e-04 tokens/s=41235";
    case Style::kHuggingFace:
      return "{'loss': " + loss + ", 'grad_norm': " + grad_norm +
             ", 'learning_rate': 5e-05, 'epoch': " + Fixed(epoch, 2) + "}";
    case Style::kLightning:
      return "Epoch " + std::to_string(k / 20) + ":  " + std::to_string(k % 20 * 5) + "%|" +
             std::string(static_cast<size_t>(k % 20 / 2), '#') + " | " +
             std::to_string(k % 20 * 50) + "/1000 [01:23<01:40, 5.41it/s, loss=" + loss +
             ", grad_norm=" + grad_norm + ", v_num=1]";
  }
  return {};
}

std::string FinishLine(Style style) {
  switch (style) {
    case Style::kRankLine:
      return "Training finished.";
    case Style::kHuggingFace:
      return "Training completed. Do not forget to share your model on huggingface.co/models =)";
    case Style::kLightning:
      return "`Trainer.fit` stopped: `max_epochs=10` reached.";
  }
  return {};
}

struct FleetRun {
  int index = 0;
  std::string name;
  int ranks = 1;
  Style style = Style::kRankLine;
  int64_t start = 0, end = 0;
  Ending ending = Ending::kFinished;
  std::string failure;  // the injected kind, if any
  std::string user;
};

Origin RankOrigin(const FleetRun& run, int rank) {
  Origin o;
  o.host = Host(run.index + (run.ranks == 8 && rank >= 4 ? 1 : 0));
  o.user = run.user;
  o.path = "/home/" + run.user + "/runs/" + run.name + "/train.log";
  if (run.index == 16 || run.index == 17) {
    o.container = "c0ffee" + std::to_string(run.index) + "d00d";
  } else {
    o.run_id = run.name;
  }
  return o;
}

int LocalGpu(const FleetRun& run, int rank) {
  return run.ranks == 8 ? rank % 4 : rank;
}

class FleetWriter {
 public:
  FleetWriter(const FleetOptions& options) : options_(options) {}

  FleetCorpus Write() {
    for (int i = 0; i < kFleetRuns; ++i) WriteRun(MakeRun(i));
    WriteHostNoise();
    if (options_.inject) WriteKernelFailures();
    FleetCorpus corpus;
    corpus.events = b_.Take();
    corpus.failures = std::move(failures_);
    corpus.runs = std::move(runs_);
    corpus.first_ms = corpus.events.front().ts_ms;
    corpus.last_ms = corpus.events.back().ts_ms;
    return corpus;
  }

 private:
  FleetRun MakeRun(int i) const {
    FleetRun r;
    r.index = i;
    r.name = RunName(i);
    r.ranks = i % 3 == 0 ? 8 : i % 3 == 1 ? 4 : 1;
    r.style = static_cast<Style>(i / 3 % 3);
    r.user = kFleetUsers[static_cast<size_t>(i) % kFleetUsers.size()];
    const int64_t now = options_.now_ms;
    r.start = now - 175 * kMinute + i * 4 * kMinute;
    r.end = std::min(r.start + (50 + i * 7 % 40) * kMinute, now - 2 * kMinute);
    if (i == 7 || i == 18) r.ending = Ending::kStalled;
    if (i >= 27) {
      r.ending = Ending::kRunning;
      r.end = now - 20 * kSecond - i * 100;
    }
    if (options_.inject) {
      static const std::array<std::pair<int, const char*>, 8> kInjected = {
          {{3, "cuda_oom"},
           {5, "cuda_driver_mismatch"},
           {6, "gpu_unavailable"},
           {9, "nccl"},
           {10, "cuda_error"},
           {12, "nan_loss"},
           {13, "loss_spike"},
           {15, "grad_explosion"}}};
      for (const auto& [index, kind] : kInjected) {
        if (index != i) continue;
        r.failure = kind;
        // A loss spike is a warning: the run recovers and finishes.
        if (r.failure != "loss_spike") r.ending = Ending::kFailed;
      }
    }
    return r;
  }

  void WriteRun(const FleetRun& run) {
    const bool at_start = run.failure == "cuda_driver_mismatch" || run.failure == "gpu_unavailable";
    const int64_t fail_at =
        at_start ? run.start + 5 * kSecond
                 : run.start + 30 * kSecond + (run.end - run.start) / 2 / kMinute * kMinute;
    WriteStartup(run);
    if (at_start) {
      WriteFailure(run, fail_at, 0);
    } else {
      int k = 0;
      bool injected = false;
      for (int64_t t = run.start + 30 * kSecond; t < run.end; t += kMinute, ++k) {
        if (!run.failure.empty() && !injected && t >= fail_at) {
          injected = true;
          if (WriteFailure(run, t, k)) return;
          continue;  // the failure was a step of its own (a loss spike)
        }
        WriteStep(run, t, k, std::nullopt);
      }
    }
    if (run.ending == Ending::kFailed) return;  // nothing after an injected failure
    if (run.ending == Ending::kFinished) {
      b_.Add(run.end, RankOrigin(run, 0), "INFO", FinishLine(run.style));
    }
    if (!RankOrigin(run, 0).run_id.empty()) {
      runs_.push_back({run.name, run.ending == Ending::kFinished  ? "finished"
                                 : run.ending == Ending::kStalled ? "stalled"
                                                                  : "running"});
    }
  }

  void WriteStartup(const FleetRun& run) {
    const Origin o = RankOrigin(run, 0);
    b_.Add(run.start, o, "INFO",
           "CUDA_VISIBLE_DEVICES=0,1,2,3 WORLD_SIZE=" + std::to_string(run.ranks) +
               " MASTER_PORT=29500");
    for (int rank = 0; rank < run.ranks && run.ranks > 1; ++rank) {
      b_.Add(run.start + 2 * kSecond + rank * 20, RankOrigin(run, rank), "INFO",
             "[rank" + std::to_string(rank) + "]: " + RankOrigin(run, rank).host + ":2231:2231 [" +
                 std::to_string(LocalGpu(run, rank)) + "] NCCL INFO comm 0x55d5" +
                 std::to_string(rank) + " rank " + std::to_string(rank) + " nranks " +
                 std::to_string(run.ranks) + " cudaDev " + std::to_string(LocalGpu(run, rank)) +
                 " busId 3b000 - Init COMPLETE");
    }
  }

  // One step of every rank; `loss_override` replaces every rank's loss.
  void WriteStep(const FleetRun& run, int64_t t, int k, std::optional<std::string> loss_override,
                 std::optional<std::string> grad_override = std::nullopt) {
    const double base = 0.35 + 2.2 * std::exp(-k / 15.0);
    for (int rank = 0; rank < run.ranks; ++rank) {
      const auto seed = static_cast<uint64_t>(run.index * 1000 + rank);
      const std::string loss = loss_override.value_or(
          Fixed(base * (1 + 0.02 * Noise(seed, static_cast<uint64_t>(k))), 4));
      const std::string grad =
          grad_override.value_or(Fixed(0.9 + 0.2 * Noise(seed + 77, static_cast<uint64_t>(k)), 3));
      b_.Add(t + rank * 37, RankOrigin(run, rank), "INFO",
             FleetStepLine(run.style, rank, k, loss, grad));
    }
    if (k > 0 && k % 10 == 0) {
      const Origin o = RankOrigin(run, 0);
      b_.Add(
          t + 5 * kSecond, o, "INFO",
          "Saving model checkpoint to /ckpt/" + run.name + "/checkpoint-" + std::to_string(k * 50));
      b_.Add(t + 9 * kSecond, o, "INFO",
             "validation loss=" + Fixed(base * 1.05, 4) + " (best so far " + Fixed(base * 1.04, 4) +
                 ")");
    }
  }

  // Writes `run`'s injected failure at `t` (step index k). Returns true when
  // the run ends with it.
  bool WriteFailure(const FleetRun& run, int64_t t, int k) {
    InjectedFailure f;
    f.kind = run.failure;
    f.run_id = RankOrigin(run, 0).run_id;
    f.host = RankOrigin(run, 0).host;
    f.lines = run.ranks;
    auto per_rank = [&](int64_t spacing, auto&& text) {
      for (int rank = 0; rank < run.ranks; ++rank) {
        const std::string id = b_.Add(t + rank * spacing, RankOrigin(run, rank), "ERROR",
                                      text(rank, LocalGpu(run, rank)));
        if (rank == 0) f.first_id = id;
      }
    };
    const auto prefix = [](int rank) { return "[rank" + std::to_string(rank) + "]: "; };
    bool ends = true;
    if (f.kind == "cuda_oom") {
      for (int rank = 0; rank < run.ranks; ++rank) {
        b_.Add(t - 40 + rank * 120, RankOrigin(run, rank), "ERROR",
               prefix(rank) + "Traceback (most recent call last):");
      }
      per_rank(120, [&](int rank, int gpu) {
        return prefix(rank) +
               "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.10 GiB. GPU " +
               std::to_string(gpu) +
               " has a total capacity of 79.15 GiB of which 1.20 GiB is free. Including "
               "non-PyTorch memory, this process has 77.94 GiB memory in use. Of the allocated "
               "memory 72.10 GiB is allocated by PyTorch, and 2.10 GiB is reserved by PyTorch but "
               "unallocated. If reserved but unallocated memory is large try setting "
               "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.";
      });
      f.facts = {{"bytes_requested", 2.10 * kGiB}, {"gpu", 0}, {"bytes_total", 79.15 * kGiB}};
    } else if (f.kind == "cuda_driver_mismatch") {
      per_rank(50, [&](int rank, int) {
        return prefix(rank) +
               "RuntimeError: The NVIDIA driver on your system is too old (found version 11040). "
               "Please update your GPU driver by downloading and installing a new version.";
      });
    } else if (f.kind == "gpu_unavailable") {
      per_rank(50, [&](int rank, int) {
        return prefix(rank) + "RuntimeError: No CUDA GPUs are available";
      });
    } else if (f.kind == "nccl") {
      per_rank(200, [&](int rank, int) {
        return prefix(rank) + "[E ProcessGroupNCCL.cpp:563] [Rank " + std::to_string(rank) +
               "] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=4821, "
               "OpType=ALLREDUCE, NumelIn=262144, NumelOut=262144, Timeout(ms)=600000) ran for "
               "600075 milliseconds before timing out.";
      });
      f.facts = {{"seq", 4821}, {"timeout_ms", 600000}, {"rank", 0}};
    } else if (f.kind == "cuda_error") {
      per_rank(90, [&](int rank, int) {
        return prefix(rank) + "RuntimeError: CUDA error: an illegal memory access was encountered";
      });
    } else if (f.kind == "nan_loss") {
      // Three steps of NaN loss on every rank, then the user stops the run.
      for (int s = 0; s < 3; ++s) {
        const std::string id = b_.Add(t + s * kMinute, RankOrigin(run, 0), "INFO",
                                      FleetStepLine(run.style, 0, k + s, "nan", "1.021"));
        if (s == 0) f.first_id = id;
        for (int rank = 1; rank < run.ranks; ++rank) {
          b_.Add(t + s * kMinute + rank * 37, RankOrigin(run, rank), "INFO",
                 FleetStepLine(run.style, rank, k + s, "nan", "1.021"));
        }
      }
      f.lines = 3 * run.ranks;
      f.exact_lines = false;
    } else if (f.kind == "loss_spike") {
      f.first_id =
          b_.Add(t, RankOrigin(run, 0), "INFO", FleetStepLine(run.style, 0, k, "12.5000", "1.013"));
      f.facts = {{"loss", 12.5}};
      f.lines = 1;
      f.exact_lines = false;
      ends = false;
    } else if (f.kind == "grad_explosion") {
      for (int rank = 0; rank < run.ranks; ++rank) {
        const std::string id = b_.Add(t + rank * 37, RankOrigin(run, rank), "INFO",
                                      FleetStepLine(run.style, rank, k, "0.4012", "850.000"));
        if (rank == 0) f.first_id = id;
      }
      f.facts = {{"grad_norm", 850}};
      f.exact_lines = false;
    }
    failures_.push_back(std::move(f));
    if (ends && !RankOrigin(run, 0).run_id.empty()) runs_.push_back({run.name, "failed"});
    return ends;
  }

  // sshd, Jupyter, kernel and supervisor lines on every host, every two
  // minutes, and the near misses.
  void WriteHostNoise() {
    const int64_t now = options_.now_ms;
    int n = 0;
    for (int64_t t = now - 178 * kMinute; t < now - kMinute; t += 2 * kMinute) {
      for (int h = 0; h < kFleetHosts; ++h, ++n) {
        const std::string user = kFleetUsers[static_cast<size_t>(n) % kFleetUsers.size()];
        Origin o{Host(h), "", user, "", ""};
        const int64_t at = t + h * 1500;
        switch (n % 6) {
          case 0:
            o.path = "/var/log/auth.log";
            b_.Add(at, o, "",
                   "Accepted publickey for " + user + " from 10.0." + std::to_string(h) + "." +
                       std::to_string(n % 200 + 10) + " port " + std::to_string(40000 + n % 20000) +
                       " ssh2: ED25519 SHA256:Vd1mP0wQ8xkq3M1c2tS5o1hYb3Zr0q5n8eLkQ1w2e3r");
            break;
          case 1:
            o.path = "/var/log/auth.log";
            b_.Add(at, o, "",
                   "pam_unix(sshd:session): session opened for user " + user +
                       "(uid=1001) by (uid=0)");
            break;
          case 2:
            o.path = "/home/" + user + "/.jupyter/jupyter.log";
            b_.Add(at, o, "INFO",
                   "[I " + dashcam::FormatRfc3339Ms(at).substr(11, 12) +
                       " ServerApp] Saving file at /notebooks/" + user + "/eval.ipynb");
            break;
          case 3:
            o.path = "/var/log/supervisor/dataloader.log";
            b_.Add(at, o, "INFO", n % 12 == 3 ? "killed 0 zombie workers" : "Memory usage: 10 GiB");
            break;
          case 4:
            o.path = "/var/log/kern.log";
            o.user.clear();
            b_.Add(at, o, "",
                   n % 12 == 4 ? "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  535.154.05"
                               : "nvidia-modeset: Loading NVIDIA Kernel Mode Setting Driver");
            break;
          default:
            o.path = "/home/" + user + "/.jupyter/jupyter.log";
            b_.Add(at, o, "INFO",
                   "[I ServerApp] Kernel started: 9f1c" + std::to_string(n) +
                       "-e1b2, name: python3 (torch.cuda.is_available(): True)");
            break;
        }
      }
    }
  }

  void WriteKernelFailures() {
    const int64_t now = options_.now_ms;
    {
      InjectedFailure f{"xid", "", Host(4), "", 1, true, {{"xid", 79}}};
      f.first_id = b_.Add(now - 100 * kMinute + 123, {Host(4), "/var/log/kern.log", "", "", ""}, "",
                          "NVRM: Xid (PCI:0000:3b:00): 79, pid=23817, name=python, GPU has "
                          "fallen off the bus.");
      failures_.push_back(std::move(f));
    }
    {
      InjectedFailure f{"process_killed", "", Host(5), "", 1, true, {{"pid", 31337}}};
      f.first_id = b_.Add(now - 80 * kMinute + 456, {Host(5), "/var/log/kern.log", "", "", ""}, "",
                          "Out of memory: Killed process 31337 (python) total-vm:98765432kB, "
                          "anon-rss:45678901kB, file-rss:0kB, shmem-rss:0kB, UID:1001 "
                          "pgtables:123456kB oom_score_adj:0");
      failures_.push_back(std::move(f));
    }
  }

  const FleetOptions options_;
  Builder b_;
  std::vector<InjectedFailure> failures_;
  std::vector<ExpectedRun> runs_;
};

}  // namespace

FleetCorpus MakeFleetCorpus(const FleetOptions& options) {
  return FleetWriter(options).Write();
}

std::string FleetBulkBody(const std::vector<FleetEvent>& events, std::size_t begin, std::size_t end,
                          const std::string& index) {
  std::string body;
  for (std::size_t i = begin; i < end && i < events.size(); ++i) {
    body += R"({"create":{"_index":")" + index + R"(","_id":")" + events[i].id + "\"}}\n";
    body += events[i].json;
    body += '\n';
  }
  return body;
}

}  // namespace dashcam::testing
