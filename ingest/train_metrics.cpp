#include "ingest/train_metrics.h"

#include <charconv>
#include <cmath>

#include "storage/ascii.h"

namespace dashcam::ingest {
namespace {

using storage::AsciiLower;
using storage::IsAsciiAlpha;
using storage::IsAsciiDigit;

using M = TrainMetric;

// How a printed value becomes the metric's value.
enum class Unit : std::uint8_t {
  kPlain,      // as printed
  kSeconds,    // step_time: a trailing "s"/"sec" is seconds, "ms" milliseconds
  kMillis,     // the alias says milliseconds
  kPerSecond,  // iterations per second: step_time is its inverse
  kBytes,      // a size with a printed unit (K/M/G/T, binary), else nothing
  kMiB,        // the alias says MiB; a printed unit still wins
  kGiB,
};

// Where the value stands relative to the name.
enum class Side : std::uint8_t { kAfter, kBefore, kEither };  // kEither: before, else after

struct Alias {
  std::string_view name;  // lowercase ASCII
  TrainMetric metric;
  Side side;
  Unit unit;
};

// Longer names first where one starts another ("step time" before "step"
// is not needed: a name must end at a word boundary, and a name that finds
// no value lets the next one try).
constexpr Alias kAliases[] = {
    {"loss", M::kLoss, Side::kAfter, Unit::kPlain},
    {"train_loss", M::kLoss, Side::kAfter, Unit::kPlain},
    {"training_loss", M::kLoss, Side::kAfter, Unit::kPlain},
    {"train loss", M::kLoss, Side::kAfter, Unit::kPlain},
    {"training loss", M::kLoss, Side::kAfter, Unit::kPlain},
    {"grad_norm", M::kGradNorm, Side::kAfter, Unit::kPlain},
    {"gradient_norm", M::kGradNorm, Side::kAfter, Unit::kPlain},
    {"grad norm", M::kGradNorm, Side::kAfter, Unit::kPlain},
    {"gradient norm", M::kGradNorm, Side::kAfter, Unit::kPlain},
    {"gnorm", M::kGradNorm, Side::kAfter, Unit::kPlain},
    {"lr", M::kLr, Side::kAfter, Unit::kPlain},
    {"learning_rate", M::kLr, Side::kAfter, Unit::kPlain},
    {"learning rate", M::kLr, Side::kAfter, Unit::kPlain},
    {"step", M::kStep, Side::kAfter, Unit::kPlain},
    {"global_step", M::kStep, Side::kAfter, Unit::kPlain},
    {"iteration", M::kStep, Side::kAfter, Unit::kPlain},
    {"iter", M::kStep, Side::kAfter, Unit::kPlain},
    {"epoch", M::kEpoch, Side::kAfter, Unit::kPlain},
    {"tokens_per_s", M::kTokensPerS, Side::kAfter, Unit::kPlain},
    {"tokens_per_sec", M::kTokensPerS, Side::kAfter, Unit::kPlain},
    {"tokens_per_second", M::kTokensPerS, Side::kAfter, Unit::kPlain},
    {"tokens/s", M::kTokensPerS, Side::kEither, Unit::kPlain},
    {"tokens/sec", M::kTokensPerS, Side::kEither, Unit::kPlain},
    {"tok/s", M::kTokensPerS, Side::kEither, Unit::kPlain},
    {"samples_per_s", M::kSamplesPerS, Side::kAfter, Unit::kPlain},
    {"samples_per_sec", M::kSamplesPerS, Side::kAfter, Unit::kPlain},
    {"samples_per_second", M::kSamplesPerS, Side::kAfter, Unit::kPlain},
    {"train_samples_per_second", M::kSamplesPerS, Side::kAfter, Unit::kPlain},
    {"samples/s", M::kSamplesPerS, Side::kEither, Unit::kPlain},
    {"samples/sec", M::kSamplesPerS, Side::kEither, Unit::kPlain},
    {"step_time", M::kStepTime, Side::kAfter, Unit::kSeconds},
    {"step time", M::kStepTime, Side::kAfter, Unit::kSeconds},
    {"time_per_step", M::kStepTime, Side::kAfter, Unit::kSeconds},
    {"iter_time", M::kStepTime, Side::kAfter, Unit::kSeconds},
    {"elapsed time per iteration (ms)", M::kStepTime, Side::kAfter, Unit::kMillis},
    {"it/s", M::kStepTime, Side::kBefore, Unit::kPerSecond},
    {"s/it", M::kStepTime, Side::kBefore, Unit::kSeconds},
    {"gpu_mem", M::kGpuMem, Side::kAfter, Unit::kBytes},
    {"gpu mem", M::kGpuMem, Side::kAfter, Unit::kBytes},
    {"gpu_memory", M::kGpuMem, Side::kAfter, Unit::kBytes},
    {"gpu memory", M::kGpuMem, Side::kAfter, Unit::kBytes},
    {"gpu_mem_mb", M::kGpuMem, Side::kAfter, Unit::kMiB},
    {"gpu_mem_gb", M::kGpuMem, Side::kAfter, Unit::kGiB},
    {"max_memory_allocated", M::kGpuMem, Side::kAfter, Unit::kBytes},
};

// Names of structured fields, matched exactly.
struct FieldAlias {
  std::string_view name;
  TrainMetric metric;
  double scale;
};
constexpr FieldAlias kFieldAliases[] = {
    {"loss", M::kLoss, 1},
    {"train_loss", M::kLoss, 1},
    {"train/loss", M::kLoss, 1},
    {"grad_norm", M::kGradNorm, 1},
    {"train/grad_norm", M::kGradNorm, 1},
    {"lr", M::kLr, 1},
    {"learning_rate", M::kLr, 1},
    {"train/learning_rate", M::kLr, 1},
    {"step", M::kStep, 1},
    {"global_step", M::kStep, 1},
    {"train/global_step", M::kStep, 1},
    {"epoch", M::kEpoch, 1},
    {"train/epoch", M::kEpoch, 1},
    {"tokens_per_second", M::kTokensPerS, 1},
    {"samples_per_second", M::kSamplesPerS, 1},
    {"train_samples_per_second", M::kSamplesPerS, 1},
    {"step_time", M::kStepTime, 1},
    {"gpu_mem_mb", M::kGpuMem, 1024.0 * 1024},
    {"gpu_mem_gb", M::kGpuMem, 1024.0 * 1024 * 1024},
    {"gpu_mem_bytes", M::kGpuMem, 1},
};

constexpr std::string_view kNames[kTrainMetricCount] = {
    "loss",         "grad_norm",     "lr",        "step",   "epoch",
    "tokens_per_s", "samples_per_s", "step_time", "gpu_mem"};

constexpr bool IsWordChar(char c) {
  return IsAsciiAlpha(c) || IsAsciiDigit(c) || c == '_';
}

// For each byte (either case), the aliases that start with it: the one
// lookup a byte costs, then only those aliases are compared.
struct StartTable {
  std::uint8_t count[256] = {};
  std::uint8_t index[256][16] = {};
  constexpr StartTable() {
    for (std::size_t a = 0; a < std::size(kAliases); ++a) {
      const char c = kAliases[a].name.front();
      Add(static_cast<unsigned char>(c), a);
      if (c >= 'a' && c <= 'z') Add(static_cast<unsigned char>(c - 32), a);
    }
  }
  constexpr void Add(unsigned char c, std::size_t a) {
    index[c][count[c]++] =
        static_cast<std::uint8_t>(a);  // 16 per letter at most (static_assert below)
  }
};
constexpr StartTable kStarts;
static_assert([] {
  for (auto n : StartTable().count) {
    if (n > 16) return false;
  }
  return true;
}());

bool StartsWithLower(std::string_view text, std::string_view lower_name) {
  if (text.size() < lower_name.size()) return false;
  for (std::size_t i = 0; i < lower_name.size(); ++i) {
    if (AsciiLower(text[i]) != lower_name[i]) return false;
  }
  return true;
}

// A number at the start of `s` ('+' allowed, nan/inf included): its length,
// 0 when there is none.
std::size_t ParseNumber(std::string_view s, double& v) {
  std::size_t skip = (!s.empty() && s.front() == '+') ? 1 : 0;
  const char* begin = s.data() + skip;
  auto [p, ec] = std::from_chars(begin, s.data() + s.size(), v, std::chars_format::general);
  if (ec == std::errc::result_out_of_range) {
    // from_chars leaves `v` as it was: "1e400" is too large (Inf, which
    // the anomalies see as non-finite), "1e-400" too small (0).
    const std::string_view digits(begin, static_cast<std::size_t>(p - begin));
    const auto e = digits.find_first_of("eE");
    const bool tiny = e != std::string_view::npos && e + 1 < digits.size() && digits[e + 1] == '-';
    const bool negative = !digits.empty() && digits.front() == '-';
    v = tiny ? 0.0 : (negative ? -HUGE_VAL : HUGE_VAL);
  } else if (ec != std::errc()) {
    return 0;
  }
  return static_cast<std::size_t>(p - s.data());
}

// A printed size unit at the start of `s` ("GiB", "G", "GB", " MiB"): its
// multiplier and length; 0 when none.
std::size_t ParseSizeUnit(std::string_view s, double& scale) {
  std::size_t i = (!s.empty() && s.front() == ' ') ? 1 : 0;
  if (i >= s.size()) return 0;
  switch (s[i]) {
    case 'K':
    case 'k':
      scale = 1024.0;
      break;
    case 'M':
      scale = 1024.0 * 1024;
      break;
    case 'G':
      scale = 1024.0 * 1024 * 1024;
      break;
    case 'T':
      scale = 1024.0 * 1024 * 1024 * 1024;
      break;
    default:
      return 0;
  }
  ++i;
  if (i < s.size() && s[i] == 'i') ++i;
  if (i < s.size() && s[i] == 'B') ++i;
  if (i < s.size() && IsWordChar(s[i])) return 0;
  return i;
}

// A time unit at the start of `s` ("s", "ms", " sec"): what divides a value
// in it to seconds, and its length; 0 when none. (Dividing by 1000 keeps
// "520ms" exactly 0.52, where multiplying by 0.001 would not.)
std::size_t ParseTimeUnit(std::string_view s, double& scale) {
  std::size_t i = (!s.empty() && s.front() == ' ') ? 1 : 0;
  std::size_t len = 0;
  if (StartsWithLower(s.substr(i), "ms")) {
    scale = 1000, len = 2;
  } else if (StartsWithLower(s.substr(i), "sec")) {
    scale = 1, len = 3;
  } else if (StartsWithLower(s.substr(i), "s")) {
    scale = 1, len = 1;
  } else {
    return 0;
  }
  i += len;
  if (i < s.size() && IsWordChar(s[i])) return 0;
  return i;
}

// Whether `c` then `next` continue a number in a way that makes it not a
// value of its own: "12:30" (a time), "10.0.0.1", "1.2.3" (an address or
// version), "2024-01-02" (a date), "12,345" (digit grouping).
bool ContinuesNumber(char c, char next) {
  return (c == ':' || c == '.' || c == '-' || c == ',') && IsAsciiDigit(next);
}

// Applies the alias's unit to `v` given the text after the number; false
// when the value must be dropped.
bool ApplyUnit(Unit unit, std::string_view rest, double& v) {
  double scale = 1;
  switch (unit) {
    case Unit::kPlain:
      return true;
    case Unit::kSeconds:
      if (ParseTimeUnit(rest, scale)) v /= scale;
      return true;
    case Unit::kMillis:
      v /= 1000;
      return true;
    case Unit::kPerSecond:
      if (!(v > 0)) return false;
      v = 1.0 / v;
      return true;
    case Unit::kBytes:
      if (!ParseSizeUnit(rest, scale)) return false;
      v = std::round(v * scale);
      return true;
    case Unit::kMiB:
    case Unit::kGiB:
      if (!ParseSizeUnit(rest, scale))
        scale = unit == Unit::kMiB ? 1024.0 * 1024 : 1024.0 * 1024 * 1024;
      v = std::round(v * scale);
      return true;
  }
  return false;
}

// The value after a name ending at text[at]: separators, then the number.
bool ValueAfter(std::string_view text, std::size_t at, const Alias& alias, double& v) {
  std::size_t i = at;
  if (i < text.size() && (text[i] == '"' || text[i] == '\'')) ++i;
  const std::size_t sep_start = i;
  while (i < text.size() && i - sep_start < 8 &&
         (text[i] == ' ' || text[i] == '\t' || text[i] == ':' || text[i] == '=')) {
    ++i;
  }
  if (i == sep_start) return false;
  if (i < text.size() && (text[i] == '[' || text[i] == '(')) ++i;
  if (StartsWithLower(text.substr(i), "tensor(")) i += 7;  // loss: tensor(0.43, device=...)
  const std::size_t len = ParseNumber(text.substr(i), v);
  if (len == 0) return false;
  i += len;
  const char next = i < text.size() ? text[i] : '\0';
  const char after = i + 1 < text.size() ? text[i + 1] : '\0';
  if (next == '/' && IsAsciiDigit(after)) {
    // "step 1200/5000": a counter out of a total; only counters have one.
    if (alias.metric != M::kStep && alias.metric != M::kEpoch) return false;
    ++i;
    while (i < text.size() && IsAsciiDigit(text[i])) ++i;
  } else if (ContinuesNumber(next, after)) {
    return false;
  }
  const std::string_view rest = text.substr(i);
  if (!rest.empty() && IsWordChar(rest.front())) {
    // Only a unit may follow a value directly ("0.5s", "3.2G"; not "0.5x").
    double scale = 0;
    const bool sized =
        alias.unit == Unit::kBytes || alias.unit == Unit::kMiB || alias.unit == Unit::kGiB;
    const bool unit = (alias.unit == Unit::kSeconds && ParseTimeUnit(rest, scale)) ||
                      (sized && ParseSizeUnit(rest, scale));
    if (!unit) return false;
  }
  return ApplyUnit(alias.unit, rest, v);
}

// The value before a unit-like name starting at text[at] ("5.41it/s").
bool ValueBefore(std::string_view text, std::size_t at, const Alias& alias, double& v) {
  std::size_t end = at;
  if (end > 0 && text[end - 1] == ' ') --end;
  std::size_t begin = end;
  while (begin > 0 && (IsAsciiDigit(text[begin - 1]) || text[begin - 1] == '.')) --begin;
  if (begin == end || !IsAsciiDigit(text[end - 1])) return false;
  if (begin > 0) {
    // Only a number standing on its own: after "grad_norm=2.29 tokens/s=1"
    // the 2.29 is grad_norm's, and "12,345" is not 345.
    const char before = text[begin - 1];
    const bool alone = before == ' ' || before == '\t' || before == '(' || before == '[' ||
                       before == '{' || before == '|' ||
                       (before == ',' && begin > 1 && !IsAsciiDigit(text[begin - 2]));
    if (!alone) return false;
  }
  const std::size_t len = ParseNumber(text.substr(begin, end - begin), v);
  if (len != end - begin) return false;
  return ApplyUnit(alias.unit, {}, v);
}

}  // namespace

std::string_view TrainMetricName(TrainMetric m) {
  return kNames[static_cast<std::size_t>(m)];
}

void TrainMetrics::Set(TrainMetric m, double v) {
  const std::uint16_t bit = Bit(m);
  if ((present | non_finite) & bit) return;
  value[static_cast<std::size_t>(m)] = v;
  if (std::isfinite(v)) {
    present |= bit;
  } else {
    non_finite |= bit;
  }
}

void ExtractTrainMetrics(std::string_view text, TrainMetrics& out) {
  text = text.substr(0, kMaxTrainScanBytes);
  const std::size_t n = text.size();
  for (std::size_t i = 0; i < n; ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (kStarts.count[c] == 0) continue;
    // A name starts a word; a digit may precede one that follows its value.
    if (i > 0 && (IsAsciiAlpha(text[i - 1]) || text[i - 1] == '_')) continue;
    const std::string_view rest = text.substr(i);
    for (std::uint8_t k = 0; k < kStarts.count[c]; ++k) {
      const Alias& alias = kAliases[kStarts.index[c][k]];
      if (!StartsWithLower(rest, alias.name)) continue;
      const std::size_t end = i + alias.name.size();
      if (end < n && IsWordChar(text[end]) && IsWordChar(alias.name.back())) continue;
      if ((out.present | out.non_finite) & TrainMetrics::Bit(alias.metric)) continue;
      double v = 0;
      const bool found = (alias.side != Side::kAfter && ValueBefore(text, i, alias, v)) ||
                         (alias.side != Side::kBefore && ValueAfter(text, end, alias, v));
      if (found) {
        out.Set(alias.metric, v);
        break;
      }
    }
  }
}

void TakeStructuredMetrics(const std::vector<storage::Field>& fields, TrainMetrics& out) {
  constexpr std::string_view kPrefix = "train.";
  for (const auto& f : fields) {
    if (f.name.starts_with(kPrefix)) {
      const std::string_view name = std::string_view(f.name).substr(kPrefix.size());
      for (std::size_t m = 0; m < kTrainMetricCount; ++m) {
        if (kNames[m] != name) continue;
        const auto metric = static_cast<TrainMetric>(m);
        out.sent |= TrainMetrics::Bit(metric);
        if (f.type == storage::Field::Type::kNumber) out.Set(metric, f.number);
      }
      continue;
    }
    for (const auto& alias : kFieldAliases) {
      if (alias.name != f.name) continue;
      double v = 0;
      if (f.type == storage::Field::Type::kNumber) {
        v = f.number;
      } else if (f.type != storage::Field::Type::kString ||
                 ParseNumber(f.text, v) != f.text.size() || f.text.empty()) {
        break;
      }
      out.Set(alias.metric, v * alias.scale);
      break;
    }
  }
}

}  // namespace dashcam::ingest
