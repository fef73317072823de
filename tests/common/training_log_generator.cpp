// TrainingLogGenerator: see the header for the event shape and the mix.
//
// How it works: a fixed set of simulated training runs (user, host, model,
// progress, log-file offset) is drawn from the seed; every event picks a run,
// picks a kind of line by weight, formats the message with the run's state
// and wraps it in the Filebeat envelope. JSON is written by hand (escaping
// every string) because building a boost::json::object per event would cost
// several times more than the rest of the work.
#include "tests/common/training_log_generator.h"

#include "storage/json_text.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <numbers>
#include <string_view>
#include <utility>
#include <vector>

namespace dashcam::testing {
namespace {

// splitmix64: tiny, fast and identical everywhere, unlike <random>'s
// distributions whose output is implementation-defined.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}

  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, 1).
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }
  // Uniform in [0, n). REQUIRES: n > 0.
  int Below(int n) { return static_cast<int>(((Next() >> 32) * static_cast<uint64_t>(n)) >> 32); }
  // Uniform in [lo, hi], both ends included.
  int Between(int lo, int hi) { return lo + Below(hi - lo + 1); }
  double Between(double lo, double hi) { return lo + (hi - lo) * Uniform(); }

 private:
  uint64_t state_;
};

constexpr std::array<const char*, 9> kUsers = {"zhangsan", "lisi",    "wangwu",   "alice", "bob",
                                               "carol",    "liuyang", "chenjing", "dave"};
constexpr std::array<const char*, 8> kModels = {"llama7b-sft",   "llama13b-pt",   "qwen7b-lora",
                                                "resnet50-ddp",  "bert-base-mlm", "vit-l16-ft",
                                                "whisper-md-ft", "sdxl-ft"};
// PCI bus of GPU 0..7 on a typical 8-GPU node, as NVRM prints it.
constexpr std::array<int, 8> kPciBus = {0x18, 0x2a, 0x3b, 0x5d, 0x9a, 0xab, 0xba, 0xdb};
constexpr int kHosts = 16;
constexpr int kRuns = 32;
constexpr int kGpusPerHost = 8;
constexpr int kStepsPerEpoch = 5000;
constexpr int kLogEvery = 10;  // steps between two step lines of one run

enum class Kind {
  kStep,
  kDataLoader,
  kWarn,
  kEval,
  kOom,
  kNccl,
  kDriver,
  kXid,
  kJupyter,
  kSsh,
  kChinese
};

struct KindWeight {
  Kind kind;
  int per_mille;
};
constexpr std::array<KindWeight, 11> kMix = {{{Kind::kStep, 720},
                                              {Kind::kDataLoader, 100},
                                              {Kind::kWarn, 80},
                                              {Kind::kEval, 40},
                                              {Kind::kOom, 15},
                                              {Kind::kNccl, 5},
                                              {Kind::kDriver, 2},
                                              {Kind::kXid, 2},
                                              {Kind::kJupyter, 8},
                                              {Kind::kSsh, 8},
                                              {Kind::kChinese, 20}}};
constexpr int MixTotal() {
  int total = 0;
  for (const auto& w : kMix) total += w.per_mille;
  return total;
}
static_assert(MixTotal() == 1000, "the mix must add up to 1000 per mille");

// One simulated training run: the source of one train.log file.
struct Run {
  std::string user;
  std::string host;
  std::string run_id;
  std::string path;
  int epoch = 0;
  int step = 0;  // within the epoch, 1..kStepsPerEpoch
  int64_t offset = 0;
  double loss_floor = 0;
  double lr_peak = 0;
  int tokens_per_s = 0;
};

// A log line before it is wrapped in the envelope. Negative means absent.
struct Line {
  std::string message;
  const char* level = "INFO";
  int gpu_id = -1;
  int64_t step = -1;
  double loss = -1;
  int gpu_mem_mb = -1;
};

__attribute__((format(printf, 2, 3))) void Appendf(std::string& out, const char* fmt, ...) {
  char buf[512];
  va_list args;
  va_start(args, fmt);
  int n = std::vsnprintf(buf, sizeof(buf), fmt, args);
  va_end(args);
  if (n > 0) out.append(buf, std::min<size_t>(static_cast<size_t>(n), sizeof(buf) - 1));
}

template <class Int>
void AppendInt(std::string& out, Int value) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), value);
  out.append(buf, end);
}

// Zero-padded to `width` digits. REQUIRES: 0 <= value < 10^width, width <= 4.
void AppendPadded(std::string& out, int value, int width) {
  char buf[4];
  for (int i = width - 1; i >= 0; --i, value /= 10) buf[i] = static_cast<char>('0' + value % 10);
  out.append(buf, static_cast<size_t>(width));
}

// Same text as printf's "%.<precision>f" / "%.<precision>e", at a fraction
// of the cost (the step lines carry four numbers each).
void AppendFixed(std::string& out, double value, int precision) {
  char buf[64];
  auto [end, ec] =
      std::to_chars(buf, buf + sizeof(buf), value, std::chars_format::fixed, precision);
  out.append(buf, end);
}
void AppendScientific(std::string& out, double value, int precision) {
  char buf[64];
  auto [end, ec] =
      std::to_chars(buf, buf + sizeof(buf), value, std::chars_format::scientific, precision);
  out.append(buf, end);
}

struct CivilTime {
  int year, month, day, hour, minute, second, millis;
};

// Howard Hinnant's civil_from_days, extended to milliseconds.
CivilTime ToCivil(int64_t ms) {
  int64_t days = ms >= 0 ? ms / 86400000 : (ms - 86399999) / 86400000;
  int64_t ms_of_day = ms - days * 86400000;
  int64_t z = days + 719468;
  int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  int64_t doe = z - era * 146097;
  int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  int64_t mp = (5 * doy + 2) / 153;
  int day = static_cast<int>(doy - (153 * mp + 2) / 5 + 1);
  int month = static_cast<int>(mp < 10 ? mp + 3 : mp - 9);
  int year = static_cast<int>(yoe + era * 400 + (month <= 2));
  int secs = static_cast<int>(ms_of_day / 1000);
  return {
      year, month, day, secs / 3600, secs / 60 % 60, secs % 60, static_cast<int>(ms_of_day % 1000)};
}

void AppendRfc3339(std::string& out, int64_t ms) {
  CivilTime t = ToCivil(ms);
  AppendPadded(out, t.year, 4);
  out.push_back('-');
  AppendPadded(out, t.month, 2);
  out.push_back('-');
  AppendPadded(out, t.day, 2);
  out.push_back('T');
  AppendPadded(out, t.hour, 2);
  out.push_back(':');
  AppendPadded(out, t.minute, 2);
  out.push_back(':');
  AppendPadded(out, t.second, 2);
  out.push_back('.');
  AppendPadded(out, t.millis, 3);
  out.push_back('Z');
}

Run MakeRun(Rng& rng, int index) {
  Run run;
  run.user = kUsers[index % kUsers.size()];
  char host[16];
  std::snprintf(host, sizeof(host), "gpu-node-%02d", index % kHosts + 1);
  run.host = host;
  run.run_id = kModels[rng.Below(static_cast<int>(kModels.size()))];
  Appendf(run.run_id, "-%03d", rng.Between(1, 999));
  run.path = "/home/" + run.user + "/runs/" + run.run_id + "/train.log";
  run.epoch = rng.Between(0, 5);
  run.step = rng.Between(1, kStepsPerEpoch / kLogEvery) * kLogEvery;
  run.offset = rng.Between(0, 1 << 24);
  run.loss_floor = rng.Between(0.15, 0.6);
  run.lr_peak = rng.Between(1, 30) * 1e-5;
  run.tokens_per_s = rng.Between(18000, 42000);
  return run;
}

int64_t GlobalStep(const Run& run) {
  return static_cast<int64_t>(run.epoch) * kStepsPerEpoch + run.step;
}

void AdvanceStep(Run& run) {
  run.step += kLogEvery;
  if (run.step > kStepsPerEpoch) {
    run.step = kLogEvery;
    ++run.epoch;
  }
}

void StepLine(Rng& rng, Run& run, Line& line) {
  AdvanceStep(run);
  int64_t step = GlobalStep(run);
  double progress = std::min(1.0, static_cast<double>(step) / (kStepsPerEpoch * 20.0));
  double loss =
      run.loss_floor + 2.2 * std::exp(-static_cast<double>(step) / 4000.0) + rng.Between(0.0, 0.08);
  double lr = std::max(1e-7, run.lr_peak * 0.5 * (1 + std::cos(std::numbers::pi * progress)));
  std::string& m = line.message;
  m.append("epoch ");
  AppendInt(m, run.epoch);
  m.append(" step ");
  AppendInt(m, run.step);
  m.push_back('/');
  AppendInt(m, kStepsPerEpoch);
  m.append(" loss=");
  AppendFixed(m, loss, 4);
  m.append(" lr=");
  AppendScientific(m, lr, 1);
  m.append(" grad_norm=");
  AppendFixed(m, rng.Between(0.3, 3.0), 2);
  m.append(" tokens/s=");
  AppendInt(m, run.tokens_per_s + rng.Between(-1500, 1500));
  line.gpu_id = rng.Below(kGpusPerHost);
  line.step = step;
  line.loss = loss;
  line.gpu_mem_mb = rng.Between(52000, 78000);
}

void DataLoaderLine(Rng& rng, Run&, Line& line) {
  line.level = "DEBUG";
  line.gpu_id = rng.Below(kGpusPerHost);
  if (rng.Below(3) == 0) {
    Appendf(line.message,
            "DataLoader: opened shard /data/shards/train-%05d-of-01024.parquet (%d rows)",
            rng.Below(1024), rng.Between(90000, 140000));
  } else {
    Appendf(line.message, "DataLoader worker %d: prefetched batch %d (%d samples) in %.1f ms",
            rng.Below(16), rng.Between(1, 99999), 32 << rng.Below(4), rng.Between(2.0, 90.0));
  }
}

void WarnLine(Rng& rng, Run& run, Line& line) {
  line.level = "WARN";
  line.gpu_id = rng.Below(kGpusPerHost);
  switch (rng.Below(4)) {
    case 0:
      line.message =
          "UserWarning: Detected call of \"lr_scheduler.step()\" before \"optimizer.step()\". "
          "In PyTorch 1.1.0 and later, you should call them in the opposite order.";
      break;
    case 1:
      Appendf(line.message,
              "Gradient overflow. Skipping step %lld, loss scaler 0 reducing loss scale to %.1f",
              static_cast<long long>(GlobalStep(run)), 65536.0 / (1 << rng.Below(6)));
      break;
    case 2:
      Appendf(line.message,
              "GPU %d temperature %d C exceeds slowdown threshold 87 C, clocks throttled",
              line.gpu_id, rng.Between(88, 94));
      break;
    default:
      Appendf(
          line.message,
          "torch.distributed.elastic: worker group \"default\" rank %d heartbeat late by %.1f s",
          line.gpu_id, rng.Between(1.0, 30.0));
  }
}

void EvalLine(Rng& rng, Run& run, Line& line) {
  line.gpu_id = 0;
  if (rng.Below(2) == 0) {
    Appendf(line.message,
            "Saved checkpoint to /home/%s/runs/%s/ckpt/step_%lld.pt (%.2f GiB) in %.1f s",
            run.user.c_str(), run.run_id.c_str(), static_cast<long long>(GlobalStep(run)),
            rng.Between(0.4, 26.0), rng.Between(2.0, 60.0));
  } else {
    Appendf(line.message, "eval epoch %d step %d val_loss=%.4f val_acc=%.4f", run.epoch, run.step,
            run.loss_floor + rng.Between(0.05, 0.5), rng.Between(0.6, 0.95));
  }
}

void OomLine(Rng& rng, Run&, Line& line) {
  line.level = "ERROR";
  line.gpu_id = rng.Below(kGpusPerHost);
  double allocated = rng.Between(68.0, 77.0);
  Appendf(
      line.message,
      "RuntimeError: CUDA out of memory. Tried to allocate %.2f GiB (GPU %d; 79.35 GiB total "
      "capacity; %.2f GiB already allocated; %.2f GiB free; %.2f GiB reserved in total by PyTorch)",
      rng.Between(0.5, 4.0), line.gpu_id, allocated, rng.Between(0.1, 1.5),
      allocated + rng.Between(0.5, 2.5));
  line.gpu_mem_mb = static_cast<int>(allocated * 1024);
}

void NcclLine(Rng& rng, Run&, Line& line) {
  line.level = "WARN";
  line.gpu_id = rng.Below(kGpusPerHost);
  int other = (line.gpu_id + rng.Between(1, kGpusPerHost - 1)) % kGpusPerHost;
  Appendf(line.message, "NCCL WARN Could not enable P2P access between rank %d and rank %d",
          line.gpu_id, other);
}

void DriverLine(Rng&, Run&, Line& line) {
  line.level = "ERROR";
  line.message = "CUDA driver version is insufficient for CUDA runtime version";
}

void XidLine(Rng& rng, Run&, Line& line) {
  line.level = "ERROR";
  line.gpu_id = rng.Below(kGpusPerHost);
  Appendf(line.message, "NVRM: Xid (PCI:0000:%02x:00): 79, pid=%d, GPU has fallen off the bus.",
          kPciBus[line.gpu_id], rng.Between(1000, 99999));
}

void JupyterLine(Rng& rng, Run& run, Line& line, int64_t ts_ms) {
  CivilTime t = ToCivil(ts_ms);
  Appendf(line.message, "[I %02d:%02d:%02d.%03d NotebookApp] ", t.hour, t.minute, t.second,
          t.millis);
  if (rng.Below(2) == 0) {
    // Jupyter prints its access token in the URL: a secret for redaction to
    // mask. Derived from the time, not drawn, so the rest of the stream is
    // the same as without it.
    std::uint64_t x = static_cast<std::uint64_t>(ts_ms) * 0x9E3779B97F4A7C15ull;
    line.message += "Jupyter Server is running at http://localhost:8888/lab?token=";
    for (int i = 0; i < 48; ++i) {
      x ^= x >> 29;
      x *= 0xBF58476D1CE4E5B9ull;
      line.message.push_back("0123456789abcdef"[(x >> 60) & 0xF]);
    }
  } else {
    Appendf(line.message, "Saving file at /runs/%s/analysis.ipynb", run.run_id.c_str());
  }
}

void SshLine(Rng& rng, Run& run, Line& line) {
  Appendf(line.message, "Accepted publickey for %s from 10.0.%d.%d port %d ssh2", run.user.c_str(),
          rng.Below(4), rng.Between(2, 254), rng.Between(32768, 60999));
}

void ChineseLine(Rng& rng, Run& run, Line& line) {
  line.gpu_id = rng.Below(kGpusPerHost);
  switch (rng.Below(4)) {
    case 0:
      line.level = "WARN";
      Appendf(line.message, "训练进度 epoch %d 显存不足 CUDA显存溢出", run.epoch);
      break;
    case 1:
      Appendf(line.message, "数据加载完成，用时 %.1f 秒", rng.Between(0.5, 30.0));
      break;
    case 2:
      Appendf(line.message, "模型已保存到 /home/%s/runs/%s/ckpt/step_%lld.pt", run.user.c_str(),
              run.run_id.c_str(), static_cast<long long>(GlobalStep(run)));
      break;
    default:
      Appendf(line.message, "验证集准确率 %.2f%%，损失 %.4f", rng.Between(60.0, 95.0),
              run.loss_floor + rng.Between(0.05, 0.5));
  }
}

Kind PickKind(Rng& rng) {
  int r = rng.Below(1000);
  for (const auto& w : kMix) {
    if (r < w.per_mille) return w.kind;
    r -= w.per_mille;
  }
  return Kind::kStep;
}

void FillLine(Rng& rng, Run& run, int64_t ts_ms, Line& line) {
  switch (PickKind(rng)) {
    case Kind::kStep:
      return StepLine(rng, run, line);
    case Kind::kDataLoader:
      return DataLoaderLine(rng, run, line);
    case Kind::kWarn:
      return WarnLine(rng, run, line);
    case Kind::kEval:
      return EvalLine(rng, run, line);
    case Kind::kOom:
      return OomLine(rng, run, line);
    case Kind::kNccl:
      return NcclLine(rng, run, line);
    case Kind::kDriver:
      return DriverLine(rng, run, line);
    case Kind::kXid:
      return XidLine(rng, run, line);
    case Kind::kJupyter:
      return JupyterLine(rng, run, line, ts_ms);
    case Kind::kSsh:
      return SshLine(rng, run, line);
    case Kind::kChinese:
      return ChineseLine(rng, run, line);
  }
}

template <class Int>
void AppendIntField(std::string& out, std::string_view key_with_comma, Int value) {
  out.append(key_with_comma);
  AppendInt(out, value);
}

// Wraps a line in the Filebeat envelope; see the header for the shape.
void AppendEnvelope(std::string& out, const Run& run, const Line& line, int64_t ts_ms) {
  out.append("{\"@timestamp\":\"");
  AppendRfc3339(out, ts_ms);
  out.append("\",\"message\":");
  AppendJsonString(out, line.message);
  out.append(",\"log\":{\"level\":");
  AppendJsonString(out, line.level);
  out.append(",\"file\":{\"path\":");
  AppendJsonString(out, run.path);
  out.append("},\"offset\":");
  AppendInt(out, run.offset);
  out.append("},\"host\":{\"name\":");
  AppendJsonString(out, run.host);
  out.append("},\"user\":");
  AppendJsonString(out, run.user);
  out.append(",\"run_id\":");
  AppendJsonString(out, run.run_id);
  if (line.gpu_id >= 0) AppendIntField(out, ",\"gpu_id\":", line.gpu_id);
  if (line.step >= 0) AppendIntField(out, ",\"step\":", line.step);
  if (line.loss >= 0) {
    out.append(",\"loss\":");
    AppendFixed(out, line.loss, 4);
  }
  if (line.gpu_mem_mb >= 0) AppendIntField(out, ",\"gpu_mem_mb\":", line.gpu_mem_mb);
  out.push_back('}');
}

}  // namespace

struct TrainingLogGenerator::State {
  explicit State(const GeneratorOptions& o) : options(o), rng(o.seed) {
    runs.reserve(kRuns);
    for (int i = 0; i < kRuns; ++i) runs.push_back(MakeRun(rng, i));
  }

  // Slot i covers [i, i+1) * span / expected; the event lands at a random
  // point of its slot, so timestamps never decrease.
  int64_t NextTimestamp() {
    double slot = static_cast<double>(produced++) + rng.Uniform();
    double offset =
        slot * static_cast<double>(options.span_ms) / static_cast<double>(options.expected_events);
    return options.start_ms + static_cast<int64_t>(offset);
  }

  GeneratorOptions options;
  Rng rng;
  std::vector<Run> runs;
  int64_t produced = 0;
};

TrainingLogGenerator::TrainingLogGenerator(GeneratorOptions options)
    : state_(std::make_unique<State>(options)) {}
TrainingLogGenerator::~TrainingLogGenerator() = default;
TrainingLogGenerator::TrainingLogGenerator(TrainingLogGenerator&&) noexcept = default;
TrainingLogGenerator& TrainingLogGenerator::operator=(TrainingLogGenerator&&) noexcept = default;

GeneratedEvent TrainingLogGenerator::Next() {
  State& s = *state_;
  GeneratedEvent event;
  event.ts_ms = s.NextTimestamp();
  Run& run = s.runs[s.rng.Below(kRuns)];
  Line line;
  FillLine(s.rng, run, event.ts_ms, line);
  event.json.reserve(512);
  AppendEnvelope(event.json, run, line, event.ts_ms);
  run.offset += static_cast<int64_t>(event.json.size()) + 1;
  event.host = run.host;
  event.user = run.user;
  event.level = line.level;
  event.message = std::move(line.message);
  event.gpu_id = line.gpu_id;
  return event;
}

}  // namespace dashcam::testing
