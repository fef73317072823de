#include "ingest/insight_detectors.h"

#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>

#include <re2/re2.h>
#include <re2/set.h>

#include "storage/attrs_codec.h"

namespace dashcam::ingest {
namespace {

using storage::Field;

struct Rule {
  std::string_view kind;
  std::string_view severity;
  std::string_view pattern;  // "{SIZE}" stands for a printed size
};

constexpr std::string_view kSize = R"([0-9]+(?:\.[0-9]+)? ?(?:[KMGTkmgt]i?B|B|bytes))";

// Most specific first: the first rule that matches decides the kind.
constexpr auto kRules = std::to_array<Rule>({
    // --- xid: the kernel driver's report of a GPU fault -------------------
    {"xid", "error",
     R"(NVRM: Xid \(PCI:(?P<pci>[0-9A-Fa-f:.]+)\): (?P<xid>[0-9]+)\b)"
     R"((?:, pid=(?P<pid>[0-9]+))?)"},

    // --- cuda_oom ---------------------------------------------------------
    // PyTorch 1.x: "(GPU 0; T total capacity; A already allocated; F free;
    // [L allowed;] R reserved in total by PyTorch)"; 1.0-1.3 said "cached".
    {"cuda_oom", "error",
     R"((?:CUDA|HIP) out of memory\. Tried to allocate (?P<bytes_requested>{SIZE}) )"
     R"(\(GPU (?P<gpu>[0-9]+); (?P<bytes_total>{SIZE}) total capacity; )"
     R"((?P<bytes_allocated>{SIZE}) already allocated; (?P<bytes_free>{SIZE}) free; )"
     R"((?:(?P<bytes_limit>{SIZE}) allowed; )?)"
     R"((?P<bytes_reserved>{SIZE}) (?:reserved in total by PyTorch|cached))"},
    // PyTorch 2.x (2.1 printed "capacty").
    {"cuda_oom", "error",
     R"((?s)(?:CUDA|HIP) out of memory\. Tried to allocate (?P<bytes_requested>{SIZE})\. )"
     R"(GPU (?P<gpu>[0-9]+) has a total capaci?ty of (?P<bytes_total>{SIZE}) )"
     R"(of which (?P<bytes_free>{SIZE}) is free\.)"
     R"((?:.*?this process has (?P<bytes_in_use>{SIZE}) memory in use\.)?)"
     R"((?:.*?Of the allocated memory (?P<bytes_allocated>{SIZE}) is allocated by PyTorch, )"
     R"(and (?P<bytes_reserved_unallocated>{SIZE}) is reserved by PyTorch but unallocated)?)"},
    {"cuda_oom", "error",
     R"((?:CUDA|HIP) out of memory(?:\. Tried to allocate (?P<bytes_requested>{SIZE}))?)"},
    {"cuda_oom", "error", R"(torch\.(?:cuda\.)?OutOfMemoryError|CUDA error: out of memory)"},

    // --- gpu_unavailable --------------------------------------------------
    {"gpu_unavailable", "error",
     R"(no CUDA-capable device is detected|No CUDA GPUs are available|)"
     R"(CUDA-capable device\(s\) is/are busy or unavailable|)"
     R"(No devices were requested or the requested devices are not accessible|)"
     R"(Found no NVIDIA driver on your system|)"
     R"(NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver|)"
     R"(could not select device driver "[^"]*" with capabilities: \[\[gpu\]\]|)"
     R"(Torch not compiled with CUDA enabled)"},
    {"gpu_unavailable", "warning",
     R"(torch\.cuda\.is_available\(\)\W{0,8}(?:(?:returned|returns|is|was) )?False|)"
     R"(CUDA available: False|CUDA is not available)"},

    // --- cuda_driver_mismatch ---------------------------------------------
    {"cuda_driver_mismatch", "error",
     R"(The NVIDIA driver on your system is too old)"
     R"((?: \(found version (?P<driver_version>[0-9.]+)\))?)"},
    {"cuda_driver_mismatch", "error",
     R"(The NVIDIA driver's CUDA version is (?P<driver_version>[0-9.]+) which is older than )"
     R"(the (?:ptxas )?CUDA version \((?P<required_version>[0-9.]+)\))"},
    {"cuda_driver_mismatch", "error",
     R"(The detected CUDA version \((?P<runtime_version>[0-9.]+)\) mismatches the version )"
     R"(that was used to compile PyTorch \((?P<required_version>[0-9.]+)\))"},
    {"cuda_driver_mismatch", "error",
     R"((?i:driver version) (?:\(?(?P<driver_version>[0-9][0-9.]*)\)? )?is (?:lower|older) )"
     R"(than (?:expected|required)(?:[^0-9\n]{0,40}(?P<required_version>[0-9][0-9.]*))?)"},
    {"cuda_driver_mismatch", "error",
     R"(CUDA driver version is insufficient for CUDA runtime version|)"
     R"(Driver/library version mismatch|cudaErrorInsufficientDriver)"},
    {"cuda_driver_mismatch", "error",
     R"(unsatisfied condition: cuda>=(?P<required_version>[0-9.]+))"},

    // --- nccl -------------------------------------------------------------
    // ProcessGroupNCCL's watchdog: 1.x printed no SeqNum, 2.x does.
    {"nccl", "error",
     R"((?:\[(?:PG [0-9]+(?: \([^)]*\))? )?Rank (?P<rank>[0-9]+)\] )?)"
     R"(Watchdog caught collective operation timeout: WorkNCCL\()"
     R"((?:SeqNum=(?P<seq>[0-9]+), )?OpType=(?P<op>\w+))"
     R"((?:[^\n]*?Timeout\(ms\)=(?P<timeout_ms>[0-9]+))?[^\n]*?\) ran for )"
     R"((?P<ran_ms>[0-9]+) milliseconds)"},
    {"nccl", "error",
     R"(NCCL error in: (?P<where>[^\s,]+), (?P<error>[^,\n]+))"
     R"((?:[^\n]*?NCCL version (?P<nccl_version>[0-9][0-9.]*))?)"},
    {"nccl", "error",
     R"((?P<error>nccl(?:InternalError|UnhandledCudaError|SystemError|InvalidUsage|)"
     R"(InvalidArgument|RemoteError))\b|Some NCCL operations have failed or timed out|)"
     R"(NCCL communicator was aborted|ProcessGroupNCCL[^\n]*?(?:[Hh]eartbeat monitor timed out|)"
     R"(watchdog got stuck))"},
    // NCCL WARN lines: "host:pid:tid [dev] NCCL WARN ...".
    {"nccl", "warning",
     R"((?m)(?:\[(?P<gpu>[0-9]+)\] )?NCCL WARN [^\n]*?(?i:p2p)[^\n]*?)"
     R"((?:dev (?P<p2p_gpu>[0-9]+)\S* and dev (?P<p2p_peer_gpu>[0-9]+)|)"
     R"((?:rank (?P<rank>[0-9]+) and )?rank (?P<peer_rank>[0-9]+)|$))"},
    {"nccl", "warning", R"((?:\[(?P<gpu>[0-9]+)\] )?NCCL WARN )"},

    // --- cuda_error -------------------------------------------------------
    {"cuda_error", "error",
     R"((?P<error>an illegal memory access was encountered|device-side assert triggered|)"
     R"(uncorrectable ECC error encountered|misaligned address|unspecified launch failure|)"
     R"(an illegal instruction was encountered))"},
    {"cuda_error", "error",
     R"(block: \[[0-9]+,[0-9]+,[0-9]+\], thread: \[[0-9]+,[0-9]+,[0-9]+\] Assertion)"},
    {"cuda_error", "error", R"((?P<status>CUBLAS_STATUS_(?:[A-RT-Z]|S[A-TV-Z])[A-Z_]*))"},
    {"cuda_error", "error", R"(cuDNN error: (?P<status>\w+))"},
    {"cuda_error", "error", R"((?P<status>CUDNN_STATUS_(?:[A-RT-Z]|S[A-TV-Z])[A-Z_]*))"},
    {"cuda_error", "error",
     R"((?i:ECC errors? (?:encountered|detected))|cudaErrorECCUncorrectable)"},
    {"cuda_error", "error", R"(CUDA error: (?P<error>[^\n.]+))"},

    // --- process_killed ---------------------------------------------------
    {"process_killed", "critical",
     R"([Oo]ut of memory: Kill(?:ed)? process (?P<pid>[0-9]+) \((?P<process>[^)\n]*)\))"
     R"((?:[^\n]*?anon-rss:(?P<bytes_anon_rss>[0-9]+ ?kB))?)"},
    {"process_killed", "error",
     R"(DataLoader worker \(pid(?:\(s\))? (?P<pid>[0-9]+)[^)\n]*\) )"
     R"((?:is killed by signal: (?P<signal_name>[^.\n]+)|exited unexpectedly))"},
    {"process_killed", "error",
     R"(Signal (?P<signal>[0-9]+) \((?P<signal_name>SIG[A-Z]+)\) received by PID (?P<pid>[0-9]+))"},
    {"process_killed", "error", R"(Segmentation fault(?: \(core dumped\))?)"},
    {"process_killed", "error",
     R"((?s)ChildFailedError(?:.*?exitcode\s*:\s*(?P<exit_code>-?[0-9]+))?)"},
    {"process_killed", "error",
     R"((?i:exit(?:ed with)? ?(?:code|status)|exitcode)\s*[:=]?\s*(?P<exit_code>137|-9)\b|)"
     R"(died with <Signals\.SIGKILL: 9>|(?:received|killed by|terminated by) (?:signal )?SIGKILL)"},
    {"process_killed", "error", R"((?m)^\s*Killed\s*$|line [0-9]+: +(?P<pid>[0-9]+) Killed\b)"},

    // --- nan_loss: fp16 loss-scaler overflows (a step skipped) ------------
    // DeepSpeed: "[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss
    // scale: 65536, reducing to 32768" (newer: "fp16 dynamic loss scale
    // overflow! Rank 0 Skipping step. ...").
    {"nan_loss", "warning",
     R"((?i:overflow)! Rank (?P<rank>[0-9]+) Skipping step\.)"
     R"((?: Attempted loss scale: (?P<attempted_loss_scale>[0-9]+)(?:\.[0-9]+)?, )"
     R"(reducing to (?P<loss_scale>[0-9]+))?)"},
    // apex / Megatron: "Gradient overflow.  Skipping step, loss scaler 0
    // reducing loss scale to 32768.0".
    {"nan_loss", "warning",
     R"(Gradient overflow\.\s+Skipping step(?: [0-9]+)?(?:, loss scaler (?P<scaler>[0-9]+) )"
     R"(reducing loss scale to (?P<loss_scale>[0-9]+))?)"},
});

constexpr std::string_view kRankPattern = R"(\[(?:PG [0-9]+(?: \([^)]*\))? )?[Rr]ank ?([0-9]+)\])";

struct XidInfo {
  int code;
  std::string_view severity;
  std::string_view meaning;
};

// NVIDIA's Xid catalog, the codes a training fleet meets most.
constexpr auto kXids = std::to_array<XidInfo>({
    {13, "error",
     "graphics engine exception (usually an application fault, e.g. out-of-range "
     "access)"},
    {31, "error", "GPU memory page fault (usually an application's invalid memory access)"},
    {43, "error", "GPU stopped processing (the application hit a fault and was stopped)"},
    {45, "warning", "preemptive cleanup after earlier errors (a process was killed or ended)"},
    {48, "critical", "double-bit ECC error (uncorrectable memory error)"},
    {61, "critical", "internal micro-controller breakpoint/warning (PMU halt)"},
    {62, "critical", "internal micro-controller halt"},
    {63, "warning", "ECC page retirement or row remapping recorded"},
    {64, "critical", "ECC page retirement or row remapping failed"},
    {74, "critical", "NVLink error"},
    {79, "critical", "GPU has fallen off the bus"},
    {92, "warning", "high single-bit ECC error rate"},
    {94, "error", "contained ECC error (affected applications must restart)"},
    {95, "critical", "uncontained ECC error (all applications affected; reset the GPU)"},
    {119, "critical", "GSP RPC timeout"},
    {120, "critical", "GSP error"},
});

std::string Expand(std::string_view pattern) {
  std::string out(pattern);
  for (std::size_t at = out.find("{SIZE}"); at != std::string::npos; at = out.find("{SIZE}", at)) {
    out.replace(at, 6, kSize);
    at += kSize.size();
  }
  return out;
}

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

bool IsStringFact(std::string_view name) {
  static constexpr std::array<std::string_view, 8> kStrings = {
      "op", "error", "status", "process", "signal_name", "pci", "where", "meaning"};
  for (auto s : kStrings) {
    if (name == s) return true;
  }
  return EndsWith(name, "_version");
}

Field NumberFact(std::string name, double v) {
  Field f;
  f.name = std::move(name);
  f.type = Field::Type::kNumber;
  f.number = v;
  f.text = storage::CanonicalDouble(v);
  return f;
}

Field StringFact(std::string name, std::string_view v) {
  Field f;
  f.name = std::move(name);
  f.text = std::string(v);
  return f;
}

// Adds the fact named `name` from `value`; a value that does not convert
// (a pid printed as '<unknown>') is left out.
void AddFact(std::string_view name, std::string_view value, std::vector<Field>& facts) {
  if (name.starts_with("bytes_")) {
    if (auto b = ParseByteSize(value)) facts.push_back(NumberFact(std::string(name), *b));
    return;
  }
  if (IsStringFact(name)) {
    facts.push_back(StringFact(std::string(name), value));
    return;
  }
  std::int64_t i = 0;
  auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), i);
  if (ec == std::errc() && p == value.data() + value.size()) {
    facts.push_back(NumberFact(std::string(name), static_cast<double>(i)));
  }
}

const Field* FindFact(const std::vector<Field>& facts, std::string_view name) {
  for (const auto& f : facts) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

// Facts a rule implies beyond its captures.
void Complete(Insight& out) {
  auto& facts = out.facts;
  if (out.kind == "cuda_oom") {
    // 2.x prints reserved-but-unallocated; the total reserved is what 1.x printed.
    const Field* a = FindFact(facts, "bytes_allocated");
    const Field* u = FindFact(facts, "bytes_reserved_unallocated");
    if (a && u && !FindFact(facts, "bytes_reserved")) {
      facts.push_back(NumberFact("bytes_reserved", a->number + u->number));
    }
  } else if (out.kind == "xid") {
    if (const Field* x = FindFact(facts, "xid")) {
      // The captured digits can be any number; one past int's range would
      // make the cast undefined. No Xid code is that large: -1 names none.
      const bool in_range = x->number >= 0 && x->number <= std::numeric_limits<int>::max();
      const int code = in_range ? static_cast<int>(x->number) : -1;
      if (auto m = XidMeaning(code); !m.empty()) facts.push_back(StringFact("meaning", m));
      out.severity = XidSeverity(code);
    }
  }
}

}  // namespace

std::optional<double> ParseByteSize(std::string_view text) {
  double v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || !std::isfinite(v) || v < 0) return std::nullopt;
  std::string_view unit = text.substr(static_cast<std::size_t>(p - text.data()));
  if (!unit.empty() && unit.front() == ' ') unit.remove_prefix(1);
  double scale = 1;
  if (unit.empty() || unit == "B" || unit == "bytes") {
    scale = 1;
  } else {
    switch (unit.front()) {
      case 'K':
      case 'k':
        scale = 1024.0;
        break;
      case 'M':
      case 'm':
        scale = 1024.0 * 1024;
        break;
      case 'G':
      case 'g':
        scale = 1024.0 * 1024 * 1024;
        break;
      case 'T':
      case 't':
        scale = 1024.0 * 1024 * 1024 * 1024;
        break;
      default:
        return std::nullopt;
    }
    unit.remove_prefix(1);
    if (unit != "iB" && unit != "B") return std::nullopt;
  }
  return std::round(v * scale);
}

std::string_view XidMeaning(int xid) {
  for (const auto& x : kXids) {
    if (x.code == xid) return x.meaning;
  }
  return {};
}

std::string_view XidSeverity(int xid) {
  for (const auto& x : kXids) {
    if (x.code == xid) return x.severity;
  }
  return "error";
}

InsightDetectors::InsightDetectors() {
  RE2::Options options;
  options.set_log_errors(false);
  options.set_max_mem(64 << 20);
  set_ = std::make_unique<RE2::Set>(options, RE2::UNANCHORED);
  for (const auto& rule : kRules) {
    const std::string pattern = Expand(rule.pattern);
    auto re = std::make_unique<RE2>(pattern, options);
    std::string error;
    if (!re->ok() || set_->Add(pattern, &error) < 0) {
      std::fprintf(stderr, "insight pattern for %.*s does not compile: %s\n",
                   static_cast<int>(rule.kind.size()), rule.kind.data(), re->error().c_str());
      std::abort();
    }
    rules_.push_back(std::move(re));
  }
  if (!set_->Compile()) std::abort();
  rank_ = std::make_unique<RE2>(kRankPattern, options);
}

InsightDetectors::~InsightDetectors() = default;

bool InsightDetectors::Detect(std::string_view message, std::string_view error_message,
                              Insight& out) const {
  if (DetectIn(message, out)) return true;
  return !error_message.empty() && DetectIn(error_message, out);
}

bool InsightDetectors::DetectIn(std::string_view text, Insight& out) const {
  text = text.substr(0, kMaxScanBytes);
  thread_local std::vector<int> matched;
  matched.clear();
  if (!set_->Match(text, &matched)) return false;
  int first = matched.front();
  for (int m : matched) first = std::min(first, m);

  const RE2& re = *rules_[static_cast<std::size_t>(first)];
  const int groups = re.NumberOfCapturingGroups();
  std::vector<re2::StringPiece> caps(static_cast<std::size_t>(groups) + 1);
  if (!re.Match(text, 0, text.size(), RE2::UNANCHORED, caps.data(), groups + 1)) return false;

  out.kind = kRules[static_cast<std::size_t>(first)].kind;
  out.severity = kRules[static_cast<std::size_t>(first)].severity;
  out.facts.clear();
  // Facts in pattern order: CapturingGroupNames maps index -> name.
  const auto& names = re.CapturingGroupNames();
  for (int i = 1; i <= groups; ++i) {
    const auto it = names.find(i);
    const auto& cap = caps[static_cast<std::size_t>(i)];
    if (it == names.end() || cap.data() == nullptr) continue;
    if (FindFact(out.facts, it->second)) continue;  // the same name in two alternatives
    AddFact(it->second, std::string_view(cap.data(), cap.size()), out.facts);
  }
  if (!FindFact(out.facts, "rank")) {
    re2::StringPiece rank;
    if (RE2::PartialMatch(text, *rank_, &rank)) {
      AddFact("rank", std::string_view(rank.data(), rank.size()), out.facts);
    }
  }
  Complete(out);
  return true;
}

}  // namespace dashcam::ingest
