#include "api/message_template.h"

#include <array>
#include <cstdint>

#include "storage/ascii.h"

namespace dashcam::api {
namespace {

// Byte classes of the single pass. A table, because every byte of every
// sampled message goes through it.
enum : std::uint8_t { kToken = 0, kBlank = 1, kDelim = 2 };

constexpr std::array<std::uint8_t, 256> MakeClasses() {
  std::array<std::uint8_t, 256> t{};
  for (int c = 0; c < 0x20; ++c) t[c] = kBlank;
  t[' '] = t[0x7f] = kBlank;
  for (unsigned char c : std::string_view(",;()[]{}<>\"'=|`@")) t[c] = kDelim;
  return t;
}
constexpr std::array<std::uint8_t, 256> kClass = MakeClasses();

constexpr std::size_t kMaxToken = 200;  // longer tokens (blobs) become <long>
constexpr std::size_t kMaxBarScan = 256;

using storage::IsAsciiAlnum;
using storage::IsAsciiAlpha;
using storage::IsAsciiDigit;
using storage::IsAsciiHex;
std::uint8_t ClassOf(char c) {
  return kClass[static_cast<unsigned char>(c)];
}

// A UTF-8 box-drawing or block character (U+2500..U+259F: tqdm's and rich's
// bars) at s[i]: its length (3), else 0.
std::size_t BlockCharAt(std::string_view s, std::size_t i) {
  if (i + 2 >= s.size() || static_cast<unsigned char>(s[i]) != 0xE2) return 0;
  const auto b1 = static_cast<unsigned char>(s[i + 1]), b2 = static_cast<unsigned char>(s[i + 2]);
  if (b2 < 0x80 || b2 > 0xBF) return 0;
  return b1 == 0x94 || b1 == 0x95 || (b1 == 0x96 && b2 <= 0x9F) ? 3 : 0;
}

// s[i] is '|' or '[': the index just past the matching '|' or ']' when
// what lies between is a progress bar (only bar characters, and for [...]
// at least one of = # or a block character), else 0.
std::size_t BarEnd(std::string_view s, std::size_t i) {
  const char close = s[i] == '[' ? ']' : '|';
  bool solid = s[i] == '|';  // an empty tqdm bar is all blanks
  const std::size_t limit = std::min(s.size(), i + kMaxBarScan);
  for (std::size_t k = i + 1; k < limit;) {
    const char c = s[k];
    if (c == close) return k > i + 1 && solid ? k + 1 : 0;
    if (const std::size_t n = BlockCharAt(s, k)) {
      solid = true;
      k += n;
      continue;
    }
    if (c == '=' || c == '#') {
      solid = true;
    } else if (c != ' ' && c != '>' && c != '-' && c != '.' && c != '*') {
      return 0;
    }
    ++k;
  }
  return 0;
}

std::size_t SkipDigits(std::string_view s, std::size_t k) {
  while (k < s.size() && IsAsciiDigit(s[k])) ++k;
  return k;
}

// s[k] is a digit: the end of the number there (digits, an optional
// fraction, an optional exponent).
std::size_t NumberEnd(std::string_view s, std::size_t k) {
  k = SkipDigits(s, k);
  if (k + 1 < s.size() && s[k] == '.' && IsAsciiDigit(s[k + 1])) k = SkipDigits(s, k + 1);
  if (k + 1 < s.size() && (s[k] == 'e' || s[k] == 'E')) {
    std::size_t e = k + 1;
    if (e + 1 < s.size() && (s[e] == '-' || s[e] == '+')) ++e;
    if (e < s.size() && IsAsciiDigit(s[e])) k = SkipDigits(s, e);
  }
  return k;
}

bool EqualsLower(std::string_view word, std::string_view lower) {
  if (word.size() != lower.size()) return false;
  for (std::size_t i = 0; i < word.size(); ++i) {
    char c = word[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c != lower[i]) return false;
  }
  return true;
}

template <std::size_t N>
bool OneOf(std::string_view word, const std::array<std::string_view, N>& names, bool fold) {
  for (std::string_view n : names) {
    if (fold ? EqualsLower(word, n) : word == n) return true;
  }
  return false;
}

// Units after a number. Attached ("350ms") they may be short; separated by
// a blank ("3 min") only the unambiguous ones count, so "epoch 3 m" or
// "7 B params" keep their words.
constexpr std::array<std::string_view, 17> kDurationUnits = {
    "ns", "us",  "µs",   "ms",     "s",       "sec", "secs",  "second", "seconds",
    "m",  "min", "mins", "minute", "minutes", "h",   "hours", "hour"};
constexpr std::array<std::string_view, 12> kSizeUnits = {"kb", "kib", "mb", "mib", "gb",    "gib",
                                                         "tb", "tib", "pb", "pib", "bytes", "byte"};

// "<duration>", "<size>" or nullptr for a unit word after a number.
const char* UnitPlaceholder(std::string_view unit, bool separated) {
  if (OneOf(unit, kSizeUnits, true)) return "<size>";
  if (separated && unit.size() == 1 && unit != "s" && unit != "h") return nullptr;
  if (OneOf(unit, kDurationUnits, false)) return "<duration>";
  return nullptr;
}

// The unit word starting at s[k] (letters, or "µs"): its end, else k.
std::size_t UnitEnd(std::string_view s, std::size_t k) {
  std::size_t e = k;
  if (s.substr(k, 3) == "µs") return k + 3;
  while (e < s.size() && IsAsciiAlpha(s[e])) ++e;
  return e;
}

bool IsUrl(std::string_view t) {
  const std::size_t p = t.find("://");
  if (p == 0 || p == std::string_view::npos || p > 16) return false;
  for (std::size_t i = 0; i < p; ++i) {
    if (!IsAsciiAlnum(t[i]) && t[i] != '+' && t[i] != '-' && t[i] != '.') return false;
  }
  return true;
}

// A date (2026-11-29, 2026/11/29, with anything after: T10:23:15Z) or a
// clock time (10:23, 10:23:15, 10:23:15.123, with a zone).
bool IsTime(std::string_view t) {
  auto digits = [&](std::size_t at, std::size_t n) {
    if (at + n > t.size()) return false;
    for (std::size_t i = at; i < at + n; ++i)
      if (!IsAsciiDigit(t[i])) return false;
    return true;
  };
  if (digits(0, 4) && t.size() >= 10 && (t[4] == '-' || t[4] == '/') && t[7] == t[4] &&
      digits(5, 2) && digits(8, 2)) {
    return t.size() == 10 || t[10] == 'T' || t[10] == '_';
  }
  std::size_t k = SkipDigits(t, 0);
  if (k < 1 || k > 2) return false;
  int fields = 1;
  while (k < t.size() && t[k] == ':' && digits(k + 1, 2) && fields < 3) {
    k += 3;
    ++fields;
  }
  if (fields < 2) return false;
  if (k + 1 < t.size() && (t[k] == '.' || t[k] == ',') && IsAsciiDigit(t[k + 1]))
    k = SkipDigits(t, k + 1);
  if (k < t.size() && t[k] == 'Z') ++k;
  if (k < t.size() && (t[k] == '+' || t[k] == '-')) {
    const std::size_t z = SkipDigits(t, k + 1);
    if (z == k + 1) return false;
    k = z;
    if (k < t.size() && t[k] == ':') k = SkipDigits(t, k + 1);
  }
  return k == t.size();
}

bool IsUuid(std::string_view t) {
  if (t.size() != 36) return false;
  for (std::size_t i = 0; i < 36; ++i) {
    const bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash ? t[i] != '-' : !IsAsciiHex(t[i])) return false;
  }
  return true;
}

// IPv4 (with :port or /prefix), IPv6 and MAC addresses.
bool IsIp(std::string_view t) {
  std::size_t k = 0;
  int groups = 0;
  while (groups < 4) {
    const std::size_t e = SkipDigits(t, k);
    if (e == k || e - k > 3) break;
    ++groups;
    k = e;
    if (groups < 4) {
      if (k >= t.size() || t[k] != '.') break;
      ++k;
    }
  }
  if (groups == 4) {
    if (k < t.size() && (t[k] == ':' || t[k] == '/') && SkipDigits(t, k + 1) == t.size() &&
        k + 1 < t.size())
      return true;
    return k == t.size();
  }
  // Colon-separated hex groups: "::" or at least five colons (full IPv6,
  // MAC), so that "a:b:c" and times stay out.
  int colons = 0, run = 0;
  for (char c : t) {
    if (c == ':') {
      ++colons;
      run = 0;
    } else if (IsAsciiHex(c) && ++run <= 4) {
    } else {
      return false;
    }
  }
  return colons >= 5 || (colons >= 2 && t.find("::") != std::string_view::npos);
}

// A PCI bus id, optionally prefixed (PCI:0000:3b:00, 00000000:3B:00.0).
bool IsBusId(std::string_view t) {
  std::size_t k = 0;
  while (k < t.size() && IsAsciiAlpha(t[k])) ++k;
  if (k > 0) {
    if (k >= t.size() || t[k] != ':') return false;
    ++k;
  }
  auto hex_run = [&](std::size_t min, std::size_t max) {
    std::size_t e = k;
    while (e < t.size() && IsAsciiHex(t[e])) ++e;
    if (e - k < min || e - k > max) return false;
    k = e;
    return true;
  };
  if (!hex_run(4, 8) || k >= t.size() || t[k++] != ':' || !hex_run(2, 2) || k >= t.size() ||
      t[k++] != ':' || !hex_run(2, 2))
    return false;
  if (k + 1 < t.size() && t[k] == '.') {
    ++k;
    if (!hex_run(1, 1)) return false;
  }
  return k == t.size();
}

bool IsPath(std::string_view t) {
  if (t.size() < 2) return false;
  if (t[0] == '/' || t.starts_with("./") || t.starts_with("../") || t.starts_with("~/"))
    return true;
  if (IsAsciiAlpha(t[0]) && t[1] == ':' && t.size() > 2 && t[2] == '\\') return true;  // C:\...
  const std::size_t first = t.find('/');
  if (first == std::string_view::npos || t.find('/', first + 1) == std::string_view::npos)
    return false;
  // "SHA256:ab/c+d/..." (a key fingerprint) is not a path.
  if (t.substr(0, first).find(':') != std::string_view::npos) return false;
  for (char c : t)
    if (IsAsciiAlpha(c)) return true;
  return false;
}

class TemplateBuilder {
 public:
  explicit TemplateBuilder(std::string& out) : out_(out) {}

  void Run(std::string_view s);

 private:
  void Token(std::string_view t);
  void Mixed(std::string_view t);
  std::size_t AlnumRun(std::string_view t, std::size_t k);
  std::size_t FoldSeparatedUnit(std::string_view s, std::size_t i);

  std::string& out_;
};

void TemplateBuilder::Run(std::string_view s) {
  bool space = false;
  for (std::size_t i = 0; i < s.size();) {
    const char c = s[i];
    const std::uint8_t cls = ClassOf(c);
    if (cls == kBlank) {
      space = !out_.empty();
      ++i;
      continue;
    }
    if (out_.size() >= kMaxTemplateBytes) {
      out_ += " …";
      return;
    }
    if (space) out_ += ' ';
    space = false;
    if (c == '|' || c == '[') {
      if (const std::size_t end = BarEnd(s, i)) {
        out_ += c;
        out_ += "<bar>";
        out_ += s[end - 1];
        i = end;
        continue;
      }
    }
    if (BlockCharAt(s, i)) {
      while (const std::size_t n = BlockCharAt(s, i)) i += n;
      out_ += "<bar>";
      continue;
    }
    if (cls == kDelim) {
      out_ += c;
      ++i;
      continue;
    }
    std::size_t j = i + 1;
    while (j < s.size() && ClassOf(s[j]) == kToken && !BlockCharAt(s, j)) ++j;
    Token(s.substr(i, j - i));
    i = FoldSeparatedUnit(s, j);
  }
}

// After a token: when the template ends in <num> and the next word is a
// unit ("2.10 GiB"), the two become one placeholder. Returns where to go on.
std::size_t TemplateBuilder::FoldSeparatedUnit(std::string_view s, std::size_t i) {
  constexpr std::string_view kNum = "<num>";
  if (!out_.ends_with(kNum)) return i;
  std::size_t k = i;
  while (k < s.size() && (s[k] == ' ' || s[k] == '\t')) ++k;
  if (k == i) return i;
  const std::size_t e = UnitEnd(s, k);
  if (e == k || (e < s.size() && ClassOf(s[e]) == kToken && s[e] != '.' && s[e] != ':' &&
                 s[e] != '/' && s[e] != '!' && s[e] != '?'))
    return i;
  const char* unit = UnitPlaceholder(s.substr(k, e - k), true);
  if (!unit) return i;
  out_.resize(out_.size() - kNum.size());
  out_ += unit;
  return e;
}

void TemplateBuilder::Token(std::string_view t) {
  if (t.size() > kMaxToken) {
    out_ += "<long>";
    return;
  }
  // Whole-token shapes, tried on the token without trailing punctuation.
  std::string_view core = t;
  while (!core.empty() &&
         (core.back() == '.' || core.back() == ':' || core.back() == '!' || core.back() == '?'))
    core.remove_suffix(1);
  const char* whole = nullptr;
  if (core.empty()) {
  } else if (IsUrl(core)) {
    whole = "<url>";
  } else if (IsAsciiDigit(core[0]) && IsTime(core)) {
    whole = "<time>";
  } else if (IsUuid(core)) {
    whole = "<uuid>";
  } else if (IsIp(core)) {
    whole = "<ip>";
  } else if (IsBusId(core)) {
    whole = "<hex>";
  } else if (IsPath(core)) {
    whole = "<path>";
  }
  if (whole) {
    out_ += whole;
    out_ += t.substr(core.size());
    return;
  }
  Mixed(t);
}

// The token piece by piece: numbers, hex and ids masked, words and
// punctuation kept.
void TemplateBuilder::Mixed(std::string_view t) {
  for (std::size_t k = 0; k < t.size();) {
    const char c = t[k];
    const bool sign = (c == '-' || c == '+') && k + 1 < t.size() && IsAsciiDigit(t[k + 1]) &&
                      (k == 0 || !IsAsciiAlnum(t[k - 1]));
    if (IsAsciiAlnum(c) || sign) {
      k = AlnumRun(t, sign ? k + 1 : k);
    } else {
      out_ += c;
      ++k;
    }
  }
}

// t[k] is a letter or digit: masks the run of them there; returns its end.
std::size_t TemplateBuilder::AlnumRun(std::string_view t, std::size_t k) {
  std::size_t end = k;
  int digit_runs = 0;
  bool all_hex = true, letters = false;
  for (; end < t.size() && IsAsciiAlnum(t[end]); ++end) {
    const char c = t[end];
    if (IsAsciiDigit(c)) {
      if (end == k || !IsAsciiDigit(t[end - 1])) ++digit_runs;
    } else {
      letters = true;
      all_hex = all_hex && IsAsciiHex(c);
    }
  }
  const std::size_t len = end - k;
  const bool zero_x = len > 2 && t[k] == '0' && (t[k + 1] == 'x' || t[k + 1] == 'X');
  if (zero_x) {
    bool hex = true;
    for (std::size_t i = k + 2; i < end; ++i) hex = hex && IsAsciiHex(t[i]);
    if (hex) {
      out_ += "<hex>";
      return end;
    }
  }
  if (digit_runs > 0 && letters) {
    if (all_hex && len >= 8) {
      out_ += "<hex>";
      return end;
    }
    // Random ids (W&B run ids, base64): digits scattered among letters.
    if ((len >= 8 && digit_runs >= 2) || len >= 16) {
      out_ += "<id>";
      return end;
    }
  }
  if (IsAsciiDigit(t[k])) {
    const std::size_t num = NumberEnd(t, k);
    const std::size_t unit = UnitEnd(t, num);
    if (unit > num && (unit == t.size() || !IsAsciiAlnum(t[unit]))) {
      if (const char* p = UnitPlaceholder(t.substr(num, unit - num), false)) {
        out_ += p;
        return unit;
      }
    }
    out_ += "<num>";
    return num;
  }
  // A word, digit runs in it masked (rank3, gpu07).
  for (std::size_t i = k; i < end;) {
    if (IsAsciiDigit(t[i])) {
      out_ += "<num>";
      i = SkipDigits(t, i);
    } else {
      out_ += t[i++];
    }
  }
  return end;
}

}  // namespace

void BuildMessageTemplate(std::string_view message, std::string& out) {
  out.clear();
  TemplateBuilder(out).Run(message);
}

std::string MessageTemplate(std::string_view message) {
  std::string out;
  BuildMessageTemplate(message, out);
  return out;
}

}  // namespace dashcam::api
