// QueryGenerator: see the header. Leaves are drawn from the events' own
// messages and field values (cut at token boundaries, case-mangled, escaped
// and quoted in every way the grammar allows), plus a few absent values;
// inner nodes combine them with every operator spelling.
#include "tests/common/query_generator.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>
#include <re2/re2.h>

namespace dashcam::testing {
namespace {

// splitmix64, as in the training-log generator: identical everywhere.
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : state_(seed) {}
  std::uint64_t Next() {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, n). REQUIRES: n > 0.
  int Below(int n) {
    return static_cast<int>(((Next() >> 32) * static_cast<std::uint64_t>(n)) >> 32);
  }
  std::size_t Index(std::size_t n) { return static_cast<std::size_t>(Below(static_cast<int>(n))); }
  bool Chance(int percent) { return Below(100) < percent; }
  template <class T>
  const T& Pick(const std::vector<T>& v) {
    return v[Index(v.size())];
  }

 private:
  std::uint64_t state_;
};

bool IsAsciiAlnum(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

bool HasNonAscii(std::string_view s) {
  return std::any_of(s.begin(), s.end(),
                     [](char c) { return static_cast<unsigned char>(c) >= 0x80; });
}

bool IsOperatorWord(std::string_view w) {
  std::string lower(w);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lower == "and" || lower == "or" || lower == "not" || lower == "to";
}

// Byte offsets of each code point of `s` (plus s.size() at the end).
std::vector<std::size_t> CodePointOffsets(std::string_view s) {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) out.push_back(i);
  }
  out.push_back(s.size());
  return out;
}

// ---- Dates (UTC), Howard Hinnant's algorithms --------------------------------

std::int64_t DaysFromCivil(int y, int m, int d) {
  y -= m <= 2;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const std::int64_t yoe = y - era * 400;
  const std::int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const std::int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

struct Civil {
  int y, m, d, hh, mm, ss, ms;
};

Civil ToCivil(std::int64_t t) {
  std::int64_t days = t >= 0 ? t / 86400000 : (t - 86399999) / 86400000;
  const std::int64_t rem = t - days * 86400000;
  const std::int64_t z = days + 719468;
  const std::int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const std::int64_t doe = z - era * 146097;
  const std::int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const std::int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const std::int64_t mp = (5 * doy + 2) / 153;
  const int d = static_cast<int>(doy - (153 * mp + 2) / 5 + 1);
  const int m = static_cast<int>(mp < 10 ? mp + 3 : mp - 9);
  const int y = static_cast<int>(yoe + era * 400 + (m <= 2));
  const int secs = static_cast<int>(rem / 1000);
  return {y, m, d, secs / 3600, secs / 60 % 60, secs % 60, static_cast<int>(rem % 1000)};
}

constexpr std::int64_t kSecond = 1000, kMinute = 60 * kSecond, kHour = 60 * kMinute,
                       kDay = 24 * kHour;

// A date as written, and the period [start, end] (inclusive ms) it names.
struct DateText {
  std::string text;
  std::int64_t start = 0, end = 0;
};

}  // namespace

// ---- Rendering ---------------------------------------------------------------

namespace {

enum class Ctx { kOrExpr, kOrOperand, kClause };

std::string Render(const RefNode& n, Ctx ctx, bool in_group, bool skip_wrappers = false);

std::string Unary(const RefNode& n, bool in_group) {
  return Render(n, Ctx::kClause, in_group);
}

std::string OrSeparator(int style) {
  static const std::array<const char*, 3> kSep = {" OR ", " || ", " or "};
  return kSep[static_cast<std::size_t>(style) % kSep.size()];
}

std::string Leaf(const RefNode& n, bool in_group) {
  if (n.kind == RefKind::kExists || n.kind == RefKind::kAll) return n.value_text;
  const bool message = n.field.empty() || n.field == "message";
  if (in_group || (message && !n.explicit_field)) return n.value_text;
  return (n.field.empty() ? "message" : n.field) + ":" + n.value_text;
}

std::string Render(const RefNode& n, Ctx ctx, bool in_group, bool skip_wrappers) {
  if (!skip_wrappers && !n.group_field.empty() && !in_group) {
    return n.group_field + ":(" + Render(n, Ctx::kOrExpr, true, true) + ")" + n.boost;
  }
  if (!skip_wrappers && n.parens) {
    return "(" + Render(n, Ctx::kOrExpr, in_group, true) + ")" + n.boost;
  }
  auto wrap = [&](std::string s, bool needed) { return needed ? "(" + s + ")" : s; };
  switch (n.kind) {
    case RefKind::kNot: {
      static const std::array<const char*, 3> kNot = {"NOT ", "!", "not "};
      return kNot[static_cast<std::size_t>(n.op_style) % kNot.size()] +
             Unary(n.children[0], in_group);
    }
    case RefKind::kAnd: {
      static const std::array<const char*, 4> kSep = {" AND ", " && ", " and ", " "};
      std::string s;
      for (const RefNode& c : n.children) {
        if (!s.empty()) s += kSep[static_cast<std::size_t>(n.op_style) % kSep.size()];
        if (c.mark == '-' && c.kind == RefKind::kNot) {
          s += "-" + Unary(c.children[0], in_group);
        } else if (c.mark == '+') {
          s += "+" + Unary(c, in_group);
        } else {
          s += Render(c, Ctx::kClause, in_group);
        }
      }
      return wrap(s, ctx == Ctx::kClause);
    }
    case RefKind::kOr: {
      std::string s;
      for (const RefNode& c : n.children) {
        if (!s.empty()) s += OrSeparator(n.op_style);
        s += Render(c, Ctx::kOrOperand, in_group);
      }
      return wrap(s, ctx != Ctx::kOrExpr);
    }
    case RefKind::kLuceneOr: {
      std::string s;
      for (std::size_t i = 0; i < n.children.size(); ++i) {
        if (!s.empty()) s += OrSeparator(n.op_style);
        if (n.marks[i] != ' ') s += n.marks[i];
        s += Unary(n.children[i], in_group);
      }
      return wrap(s, ctx != Ctx::kOrExpr);
    }
    default:
      return Leaf(n, in_group) + n.boost;
  }
}

}  // namespace

std::string RenderQuery(const RefNode& root) {
  return Render(root, Ctx::kOrExpr, false);
}

// ---- Generation ----------------------------------------------------------------

struct QueryGenerator::Impl {
  Impl(const std::vector<RefEvent>& e, std::uint64_t seed, QueryFeatures f, std::int64_t now)
      : events(e), rng(seed), features(f), now_ms(now) {
    for (const RefEvent& ev : events) {
      timestamps.push_back(ev.ts_ms);
      for (const auto& [name, value] : ev.fields) values[name].push_back(&value);
    }
    std::sort(timestamps.begin(), timestamps.end());
    for (const auto& [name, list] : values) {
      field_names.push_back(name);
      for (const RefValue* v : list) {
        if (v->type == RefValue::Type::kNumber) {
          numeric_fields.push_back(name);
          break;
        }
      }
      for (const RefValue* v : list) {
        if (v->type == RefValue::Type::kString) {
          string_fields.push_back(name);
          break;
        }
      }
    }
  }

  // ---- Words and escapes ----

  // A bare word for `text` (no whitespace): every character the grammar
  // could read as syntax is escaped; `.` `_` `@` `-` inside a word are
  // sometimes escaped and sometimes not (both must mean the same).
  std::string EscapeWord(std::string_view text, std::string_view keep = "") {
    std::string out;
    for (std::size_t i = 0; i < text.size(); ++i) {
      const char c = text[i];
      const bool inner_ok = i > 0 && std::string_view("._@-").find(c) != std::string_view::npos;
      if (static_cast<unsigned char>(c) >= 0x80 || IsAsciiAlnum(c) ||
          keep.find(c) != std::string_view::npos || (inner_ok && !rng.Chance(20))) {
        out.push_back(c);
      } else {
        out.push_back('\\');
        out.push_back(c);
      }
    }
    if (IsOperatorWord(text)) out.insert(out.begin(), '\\');
    return out;
  }

  static std::string Quote(std::string_view text) {
    std::string out = "\"";
    for (char c : text) {
      if (c == '"' || c == '\\') out.push_back('\\');
      out.push_back(c);
    }
    return out + "\"";
  }

  std::string MangleCase(std::string s) {
    switch (rng.Below(4)) {
      case 0:
        for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
        break;
      case 1:
        for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        break;
      case 2:
        for (char& c : s) {
          if (rng.Chance(30)) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
        }
        break;
      default:
        break;
    }
    return s;
  }

  // ---- Pieces of real text ----

  // A run of 1..max_words words of `text` (whole ASCII words; CJK runs cut
  // to a piece of 2+ characters where they are at an end of the run).
  struct Piece {
    std::string original;            // the text between the piece's ends
    std::vector<std::string> parts;  // the words
    bool last_ascii = false;
  };

  std::optional<Piece> PickPiece(const std::string& text, int max_words) {
    const std::vector<RefWordSpan> spans = RefWordSpans(text);
    if (spans.empty()) return std::nullopt;
    const std::size_t k = rng.Index(spans.size());
    std::size_t n = 1 + rng.Index(static_cast<std::size_t>(max_words));
    n = std::min(n, spans.size() - k);
    Piece p;
    std::size_t begin = 0, end = 0;
    for (std::size_t j = k; j < k + n; ++j) {
      std::size_t b = spans[j].begin, e = spans[j].end;
      if (spans[j].cjk) {
        const std::string_view run(text.data() + b, e - b);
        const std::vector<std::size_t> cp = CodePointOffsets(run);
        const std::size_t chars = cp.size() - 1;
        if (chars > 2) {
          // First word: a suffix; last: a prefix; alone: any piece; each of
          // at least 2 characters.
          std::size_t from = 0, to = chars;
          if (n == 1) {
            from = rng.Index(chars - 1);
            to = from + 2 + rng.Index(chars - from - 1);
          } else if (j == k) {
            from = rng.Index(chars - 1);
          } else if (j == k + n - 1) {
            to = 2 + rng.Index(chars - 1);
          }
          e = b + cp[to];
          b = b + cp[from];
        }
      }
      if (j == k) begin = b;
      end = e;
      p.parts.emplace_back(text.substr(b, e - b));
      p.last_ascii = !spans[j].cjk;
    }
    p.original = text.substr(begin, end - begin);
    return p;
  }

  const RefEvent& RandomEvent() { return events[rng.Index(events.size())]; }

  // ---- Leaves ----

  RefNode MakeLeaf(RefKind kind, std::string field) {
    RefNode n;
    n.kind = kind;
    n.field = std::move(field);
    return n;
  }

  // A term or phrase from `text`, on `field`, maybe a prefix.
  std::optional<RefNode> TermFrom(const std::string& field, const std::string& text,
                                  bool allow_prefix) {
    auto piece = PickPiece(text, rng.Chance(50) ? 1 : 4);
    if (!piece) return std::nullopt;
    RefNode n = MakeLeaf(RefKind::kTerm, field);
    const bool has_space = piece->original.find_first_of(" \t\n") != std::string::npos;
    const bool phrase = rng.Chance(40) || (has_space && rng.Chance(50));
    std::string text_out;
    if (phrase) {
      text_out = rng.Chance(60) ? piece->original : "";
      if (text_out.empty()) {
        for (const std::string& w : piece->parts) text_out += (text_out.empty() ? "" : " ") + w;
      }
    } else if (!has_space && rng.Chance(50)) {
      text_out = piece->original;
    } else {
      static const std::vector<std::string> kSeps = {"-", ".", "_", ":", "/", ",", "=", "(", "'"};
      const std::string& sep = rng.Pick(kSeps);
      for (const std::string& w : piece->parts) text_out += (text_out.empty() ? "" : sep) + w;
    }
    text_out = MangleCase(text_out);
    if (allow_prefix && piece->last_ascii && rng.Chance(20)) {
      // Cut the last word to a prefix of it (maybe all of it).
      std::size_t alnum_end = text_out.size();
      std::size_t start = alnum_end;
      while (start > 0 && IsAsciiAlnum(text_out[start - 1])) --start;
      const std::size_t len = alnum_end - start;
      if (len > 0) {
        text_out.resize(start + 1 + rng.Index(len));
        n.prefix = true;
      }
    }
    n.text = text_out;
    if (phrase) {
      n.value_text = Quote(text_out) + (n.prefix ? "*" : "");
    } else {
      n.value_text = EscapeWord(text_out) + (n.prefix ? "*" : "");
    }
    if (!n.prefix && features.boosts && rng.Chance(8)) n.boost = rng.Chance(50) ? "^2" : "^0.5";
    return n;
  }

  std::optional<RefNode> MessageTerm() {
    const RefEvent& e = RandomEvent();
    if (!e.message) return std::nullopt;
    const bool explicit_field = rng.Chance(15);
    auto n = TermFrom(explicit_field ? "message" : "", *e.message, true);
    if (n) n->explicit_field = explicit_field;
    return n;
  }

  std::optional<RefNode> FieldTerm(const std::string& field) {
    const std::vector<const RefValue*>& list = values[field];
    if (list.empty()) return std::nullopt;
    const RefValue& v = *list[rng.Index(list.size())];
    if (v.type == RefValue::Type::kString) return TermFrom(field, v.text, true);
    RefNode n = MakeLeaf(RefKind::kTerm, field);
    n.text = v.text;
    if (v.type == RefValue::Type::kBool) {
      n.text = MangleCase(n.text);
    } else if (rng.Chance(30)) {
      // Another spelling of the same number: 3 -> 3.0, 0.4312 -> 0.43120.
      n.text += n.text.find('.') == std::string::npos ? ".0" : "0";
    }
    n.value_text = rng.Chance(20) ? Quote(n.text) : EscapeWord(n.text);
    return n;
  }

  RefNode AbsentTerm() {
    static const std::vector<std::pair<std::string, std::string>> kAbsent = {
        {"", "segfault"},
        {"", "tensorflow"},
        {"", "gpu-node-99"},
        {"", "显卡"},
        {"", "out of disk"},
        {"", "memory out of"},
        {"level", "ERROR"},
        {"user", "mallory"},
        {"host.name", "gpu-node-42"},
        {"no_such.field", "alice"},
        {"run_id", "gpt4-pt-001"},
        {"tags", "tpu"},
        {"gpu_id", "9"},
        {"log.level", "FATAL"}};
    const auto& [field, text] = kAbsent[rng.Index(kAbsent.size())];
    RefNode n = MakeLeaf(RefKind::kTerm, field);
    n.text = text;
    n.value_text = text.find(' ') != std::string::npos ? Quote(text) : EscapeWord(text);
    return n;
  }

  // A CJK piece, bare, as a phrase, or inside a field.
  std::optional<RefNode> CjkTerm() {
    for (int tries = 0; tries < 50; ++tries) {
      const RefEvent& e = RandomEvent();
      if (!e.message || RefWordSpans(*e.message).empty()) continue;
      bool has_cjk = false;
      for (const RefWordSpan& s : RefWordSpans(*e.message)) has_cjk |= s.cjk;
      if (!has_cjk) continue;
      for (int inner = 0; inner < 20; ++inner) {
        auto n = TermFrom("", *e.message, false);
        if (n && HasNonAscii(n->text)) {
          return n;
        }
      }
    }
    return std::nullopt;
  }

  // ---- Wildcards ----

  // A wildcard pattern made from one ASCII word.
  std::string WildWord(std::string w) {
    w = MangleCase(w);
    const std::size_t len = w.size();
    switch (rng.Below(5)) {
      case 0:
        w[rng.Index(len)] = '?';
        return w;
      case 1:
        return "*" + w.substr(1 + rng.Index(len - 1));
      case 2: {
        const std::size_t a = 1 + rng.Index(len - 1);
        return w.substr(0, a) + "*" + w.substr(a + rng.Index(len - a + 1));
      }
      case 3:
        return w.substr(0, 1 + rng.Index(len - 1)) + "?*";
      default:
        w[0] = '?';
        w[len - 1] = '?';
        return w;
    }
  }

  std::optional<RefNode> Wildcard() {
    if (rng.Chance(12)) {
      static const std::vector<std::pair<std::string, std::string>> kFixed = {
          {"host.name", "gpu-node-*"},
          {"host.name", "gpu-node-?7"},
          {"host.name", "gpu*07"},
          {"host.name", "*node*"},
          {"", "*memory"},
          {"", "cud?"},
          {"", "显*"},
          {"", "*存"},
          {"", "?存"},
          {"user", "zhang*n"},
          {"run_id", "*-ft-*"},
          {"", "c*a"}};
      const auto& [field, pattern] = kFixed[rng.Index(kFixed.size())];
      RefNode n = MakeLeaf(RefKind::kWildcard, field);
      n.text = pattern;
      n.value_text = EscapeWord(pattern, "*?");
      return n;
    }
    const bool on_message = rng.Chance(50);
    std::string field;
    const std::string* source = nullptr;
    if (on_message) {
      const RefEvent& e = RandomEvent();
      if (!e.message) return std::nullopt;
      source = &*e.message;
    } else {
      field = rng.Pick(string_fields);
      const auto& list = values[field];
      const RefValue* v = list[rng.Index(list.size())];
      if (v->type != RefValue::Type::kString) return std::nullopt;
      source = &v->text;
    }
    auto piece = PickPiece(*source, 3);
    if (!piece) return std::nullopt;
    // Turn one ASCII word of 3+ characters into a pattern; join the rest
    // with separators that are not whitespace.
    std::vector<std::size_t> candidates;
    for (std::size_t i = 0; i < piece->parts.size(); ++i) {
      const std::string& w = piece->parts[i];
      if (w.size() >= 3 && IsAsciiAlnum(w[0])) candidates.push_back(i);
    }
    if (candidates.empty()) return std::nullopt;
    const std::size_t which = rng.Pick(candidates);
    static const std::vector<std::string> kSeps = {"-", ".", ":", "/"};
    const std::string& sep = rng.Pick(kSeps);
    std::string pattern;
    for (std::size_t i = 0; i < piece->parts.size(); ++i) {
      if (i > 0) pattern += sep;
      pattern += i == which ? WildWord(piece->parts[i]) : MangleCase(piece->parts[i]);
    }
    RefNode n = MakeLeaf(RefKind::kWildcard, field);
    n.text = pattern;
    n.value_text = EscapeWord(pattern, "*?");
    PrefixIfTrailingStar(n);
    return n;
  }

  // The parser reads a word whose only wildcard is a trailing `*` right
  // after a letter or digit as a prefix term (an FTS5 prefix query, which is
  // not expanded against the vocabulary); the node says so too, so that
  // the reference's expansion count describes the query that runs.
  static void PrefixIfTrailingStar(RefNode& n) {
    const std::string& t = n.text;
    if (t.size() < 2 || t.back() != '*' || !IsAsciiAlnum(t[t.size() - 2])) return;
    if (t.find_first_of("*?") != t.size() - 1) return;
    n.kind = RefKind::kTerm;
    n.text.pop_back();
    n.prefix = true;
  }

  // ---- Regular expressions ----

  std::optional<RefNode> Regex() {
    static const std::vector<std::pair<std::string, std::string>> kFixed = {
        {"", "CUDA (out of memory|driver version)"},
        {"", "^epoch [0-2] step"},
        {"", "Xid \\(PCI:0000:[0-9a-f]{2}:00\\): 79"},
        {"", "(?i)nccl warn"},
        {"", "显存(不足|溢出)"},
        {"", "token=[0-9a-f]{48}$"},
        {"", "rank [0-3] and rank [4-7]"},
        {"", "loss=0\\.[0-4][0-9]{3} "},
        {"", "^\\[I [0-9]{2}:"},
        {"user", "^(alice|bob)$"},
        {"user", "zh.*"},
        {"host.name", "node-0[1-4]$"},
        {"run_id", "^qwen"},
        {"gpu_id", "3"},
        {"tags", "^fp"},
        {"log.file.path", "/home/[a-z]+/runs/llama"},
        {"_index", "^filebeat"},
        {"exit_code", "^1[0-9]+"},
        {"log.level", "ERROR|WARN"},
        {"", "Tried to allocate [1-3]\\.[0-9]+ GiB"}};
    RefNode n;
    if (rng.Chance(45)) {
      const auto& [field, pattern] = kFixed[rng.Index(kFixed.size())];
      n = MakeLeaf(RefKind::kRegex, field);
      n.text = pattern;
      if (field == "_index" && !features.index_field) return std::nullopt;
    } else {
      // A literal piece of a real message, quoted, with digit runs widened.
      const RefEvent& e = RandomEvent();
      if (!e.message || e.message->size() < 8) return std::nullopt;
      const std::vector<std::size_t> cp = CodePointOffsets(*e.message);
      const std::size_t chars = cp.size() - 1;
      const std::size_t from = rng.Index(chars - 4);
      const std::size_t to = std::min(chars, from + 4 + rng.Index(12));
      const std::string literal = e.message->substr(cp[from], cp[to] - cp[from]);
      std::string quoted = RE2::QuoteMeta(literal);
      // QuoteMeta writes `\/`; a plain `/` is the same to RE2 and keeps the
      // query's own `\/` escape unambiguous.
      std::string pattern;
      for (std::size_t i = 0; i < quoted.size(); ++i) {
        if (quoted[i] == '\\' && i + 1 < quoted.size() && quoted[i + 1] == '/') continue;
        pattern.push_back(quoted[i]);
      }
      if (rng.Chance(40)) RE2::GlobalReplace(&pattern, "[0-9]+", "[0-9]+");
      if (rng.Chance(20)) pattern = "(?i)" + MangleCase(pattern);
      if (rng.Chance(15)) pattern = "^" + pattern;
      n = MakeLeaf(RefKind::kRegex, rng.Chance(20) ? "message" : "");
      n.explicit_field = !n.field.empty();
      n.text = pattern;
    }
    n.value_text = RegexLiteral(n.text);
    return n;
  }

  // `/pattern/` with each `/` escaped.
  static std::string RegexLiteral(std::string_view pattern) {
    std::string body;
    for (char c : pattern) {
      if (c == '/') body.push_back('\\');
      body.push_back(c);
    }
    return "/" + body + "/";
  }

  // ---- Ranges ----

  std::string NumberBound(const RefValue& v) {
    if (rng.Chance(60)) return v.text;
    // A rounder number near the value.
    if (v.text.find('.') != std::string::npos) return fmt::format("{:.1f}", v.number);
    const long long whole = static_cast<long long>(v.number);
    return std::to_string(whole - whole % 100);
  }

  std::string StringBound(const RefValue& v) {
    // The value, or a prefix of it cut between two characters.
    const std::vector<std::size_t> cp = CodePointOffsets(v.text);
    const std::size_t chars = cp.size() - 1;
    if (rng.Chance(30) && chars > 2) return v.text.substr(0, cp[1 + rng.Index(chars - 1)]);
    return v.text;
  }

  std::optional<RefNode> Range() {
    const bool numeric = rng.Chance(65);
    const std::string& field = rng.Pick(numeric ? numeric_fields : string_fields);
    const auto& list = values[field];
    std::vector<const RefValue*> usable;
    for (int i = 0; i < 40 && usable.size() < 2; ++i) {
      const RefValue* v = list[rng.Index(list.size())];
      const bool is_number = v->type == RefValue::Type::kNumber;
      if (is_number == numeric) usable.push_back(v);
    }
    if (usable.size() < 2) return std::nullopt;
    std::string a = numeric ? NumberBound(*usable[0]) : StringBound(*usable[0]);
    std::string b = numeric ? NumberBound(*usable[1]) : StringBound(*usable[1]);
    const bool swap = numeric ? std::stod(a) > std::stod(b) : a > b;
    if (swap) std::swap(a, b);
    RefNode n = MakeLeaf(RefKind::kRange, field);
    if (b.find(' ') != std::string::npos || a.find(' ') != std::string::npos) return std::nullopt;
    auto bound = [&](const std::string& s) {
      return !numeric && rng.Chance(25) ? Quote(s) : EscapeWord(s);
    };
    if (rng.Chance(35)) {
      // field:>x  >=x  <x  <=x
      static const std::vector<std::string> kOps = {">", ">=", "<", "<="};
      const std::string& op = rng.Pick(kOps);
      const std::string& x = op[0] == '>' ? a : b;
      (op[0] == '>' ? n.lower : n.upper) = x;
      (op[0] == '>' ? n.include_lower : n.include_upper) = op.size() == 2;
      n.value_text = op + bound(x);
      return n;
    }
    n.include_lower = rng.Chance(50);
    n.include_upper = rng.Chance(50);
    const int open = rng.Below(6);  // 0: lower open, 1: upper open
    if (open != 0) n.lower = a;
    if (open != 1) n.upper = b;
    n.value_text = std::string(n.include_lower ? "[" : "{") +
                   (n.lower.empty() ? "*" : bound(n.lower)) + " TO " +
                   (n.upper.empty() ? "*" : bound(n.upper)) + (n.include_upper ? "]" : "}");
    return n;
  }

  // ---- Dates ----

  static std::string Two(int v) { return fmt::format("{:02d}", v); }

  // A date naming a period around `t`, in one of the written forms.
  DateText DateAround(std::int64_t t) {
    const Civil c = ToCivil(t);
    const std::string day = fmt::format("{:04d}-{}-{}", c.y, Two(c.m), Two(c.d));
    const std::int64_t day_start = DaysFromCivil(c.y, c.m, c.d) * kDay;
    const std::int64_t minute_start = t - t % kMinute;
    switch (rng.Below(9)) {
      case 0: {  // a year
        const std::int64_t s = DaysFromCivil(c.y, 1, 1) * kDay;
        return {fmt::format("{:04d}", c.y), s, DaysFromCivil(c.y + 1, 1, 1) * kDay - 1};
      }
      case 1: {  // a month
        const std::int64_t s = DaysFromCivil(c.y, c.m, 1) * kDay;
        const std::int64_t e =
            c.m == 12 ? DaysFromCivil(c.y + 1, 1, 1) : DaysFromCivil(c.y, c.m + 1, 1);
        return {fmt::format("{:04d}-{}", c.y, Two(c.m)), s, e * kDay - 1};
      }
      case 2:
        return {day, day_start, day_start + kDay - 1};
      case 3: {  // a minute, maybe with Z or an offset
        std::string text = day + "T" + Two(c.hh) + ":" + Two(c.mm);
        const int r = rng.Below(3);
        if (r == 1) text += "Z";
        if (r == 2) {
          // The same minute written in UTC+01:00 or UTC-05:30.
          const bool east = rng.Chance(50);
          const std::int64_t shift = east ? kHour : -(5 * kHour + 30 * kMinute);
          const Civil l = ToCivil(minute_start + shift);
          text = fmt::format("{:04d}-{}-{}T{}:{}{}", l.y, Two(l.m), Two(l.d), Two(l.hh), Two(l.mm),
                             east ? "+01:00" : "-05:30");
        }
        return {text, minute_start, minute_start + kMinute - 1};
      }
      case 4: {  // a second
        const std::int64_t s = t - t % kSecond;
        return {
            day + "T" + Two(c.hh) + ":" + Two(c.mm) + ":" + Two(c.ss) + (rng.Chance(50) ? "Z" : ""),
            s, s + kSecond - 1};
      }
      case 5:  // a millisecond
        return {fmt::format("{}T{}:{}:{}.{:03d}Z", day, Two(c.hh), Two(c.mm), Two(c.ss), c.ms), t,
                t};
      case 6:  // epoch milliseconds
        return {std::to_string(t), t, t};
      case 7: {  // rounded to the hour: 2026-11-29T10:17||/h
        const std::int64_t s = t - t % kHour;
        return {day + "T" + Two(c.hh) + ":" + Two(c.mm) + "||/h", s, s + kHour - 1};
      }
      default: {  // date math on a millisecond: ...||-30m
        const int minutes = 1 + rng.Below(90);
        const std::int64_t anchor = t + minutes * kMinute;
        const Civil a = ToCivil(anchor);
        return {fmt::format("{:04d}-{}-{}T{}:{}:{}.{:03d}Z||-{}m", a.y, Two(a.m), Two(a.d),
                            Two(a.hh), Two(a.mm), Two(a.ss), a.ms, minutes),
                t, t};
      }
    }
  }

  // `now`-relative dates, only where the answer cannot depend on the
  // seconds between this clock and the server's.
  std::optional<DateText> NowDate() {
    const int n = 1 + rng.Below(3);
    if (rng.Chance(50)) {
      const std::int64_t unit = rng.Chance(50) ? kDay : kHour;
      const std::int64_t t = now_ms - n * unit;
      if (IsNearEvent(t)) return std::nullopt;
      return DateText{fmt::format("now-{}{}", n, unit == kDay ? "d" : "h"), t, t};
    }
    // now-1d/d: a whole day; safe unless midnight is within minutes.
    if ((now_ms + 15 * kMinute) / kDay != now_ms / kDay) return std::nullopt;
    const std::int64_t s = (now_ms - n * kDay) / kDay * kDay;
    return DateText{fmt::format("now-{}d/d", n), s, s + kDay - 1};
  }

  bool IsNearEvent(std::int64_t t) const {
    auto it = std::lower_bound(timestamps.begin(), timestamps.end(), t - 15 * kMinute);
    return it != timestamps.end() && *it <= t + 15 * kMinute;
  }

  std::optional<RefNode> TimeRange() {
    auto date = [&]() -> std::optional<DateText> {
      if (rng.Chance(10)) return NowDate();
      return DateAround(rng.Pick(timestamps));
    };
    RefNode n = MakeLeaf(RefKind::kTimeRange, "@timestamp");
    const int form = rng.Below(3);
    if (form == 0) {  // a date alone: the whole period
      auto d = date();
      if (!d || d->text.starts_with("now")) return std::nullopt;
      n.from_ms = d->start;
      n.to_ms = d->end;
      n.value_text = d->text;
    } else if (form == 1) {  // >x  >=x  <x  <=x
      auto d = date();
      if (!d) return std::nullopt;
      static const std::vector<std::string> kOps = {">", ">=", "<", "<="};
      const std::string& op = rng.Pick(kOps);
      if (op == ">") n.from_ms = d->end + 1;
      if (op == ">=") n.from_ms = d->start;
      if (op == "<") n.to_ms = d->start - 1;
      if (op == "<=") n.to_ms = d->end;
      n.value_text = op + d->text;
    } else {  // [a TO b}
      auto a = date(), b = date();
      if (!a || !b) return std::nullopt;
      if (a->start > b->start) std::swap(a, b);
      const bool incl_lo = rng.Chance(50), incl_hi = rng.Chance(50);
      const int open = rng.Below(6);
      std::string lo = "*", hi = "*";
      if (open != 0) {
        n.from_ms = incl_lo ? a->start : a->end + 1;
        lo = a->text;
      }
      if (open != 1) {
        n.to_ms = incl_hi ? b->end : b->start - 1;
        hi = b->text;
      }
      n.value_text = std::string(incl_lo ? "[" : "{") + lo + " TO " + hi + (incl_hi ? "]" : "}");
    }
    return n;
  }

  // ---- Other leaves ----

  RefNode Exists() {
    static const std::vector<std::string> kFields = {
        "gpu_id",        "step",  "loss",   "gpu_mem_mb", "tags",    "labels",    "labels.team",
        "exit_code",     "note",  "log",    "log.file",   "message", "preempted", "attempts",
        "no_such_field", "level", "_index", "@timestamp", "_id",     "host"};
    RefNode n = MakeLeaf(RefKind::kExists, rng.Pick(kFields));
    const bool meta = n.field.starts_with("_") || n.field.starts_with("@");
    n.value_text = (meta || rng.Chance(50)) ? "_exists_:" + n.field : n.field + ":*";
    return n;
  }

  std::optional<RefNode> Fuzzy() {
    const bool on_message = rng.Chance(60);
    const std::string field = on_message ? "" : rng.Pick(string_fields);
    const std::string* source = nullptr;
    if (on_message) {
      const RefEvent& e = RandomEvent();
      if (!e.message) return std::nullopt;
      source = &*e.message;
    } else {
      const auto& list = values[field];
      const RefValue* v = list[rng.Index(list.size())];
      if (v->type != RefValue::Type::kString) return std::nullopt;
      source = &v->text;
    }
    std::vector<std::string> words;
    for (const RefWordSpan& s : RefWordSpans(*source)) {
      if (!s.cjk && s.end - s.begin >= 4) words.push_back(source->substr(s.begin, s.end - s.begin));
    }
    if (words.empty()) return std::nullopt;
    std::string w = MangleCase(rng.Pick(words));
    const int edits = rng.Below(3);
    static const char kAlnum[] = "abcdefghijklmnopqrstuvwxyz0123456789";
    for (int i = 0; i < edits; ++i) {
      const std::size_t at = rng.Index(w.size());
      switch (rng.Below(4)) {
        case 0:
          w[at] = kAlnum[rng.Below(36)];
          break;
        case 1:
          if (w.size() > 3) w.erase(at, 1);
          break;
        case 2:
          w.insert(w.begin() + static_cast<std::ptrdiff_t>(at), kAlnum[rng.Below(36)]);
          break;
        default:
          if (at + 1 < w.size()) std::swap(w[at], w[at + 1]);
      }
    }
    RefNode n = MakeLeaf(RefKind::kFuzzy, field);
    n.text = w;
    const int written = rng.Below(4);  // 3: "~" alone, which means 2
    n.distance = written == 3 ? 2 : written;
    n.value_text = EscapeWord(w) + "~" + (written == 3 ? "" : std::to_string(written));
    return n;
  }

  std::optional<RefNode> Near() {
    const RefEvent& e = RandomEvent();
    if (!e.message) return std::nullopt;
    std::vector<std::string> words;
    for (const RefWordSpan& s : RefWordSpans(*e.message)) {
      if (!s.cjk) words.push_back(e.message->substr(s.begin, s.end - s.begin));
    }
    if (words.size() < 2) return std::nullopt;
    const std::size_t k = rng.Index(words.size() - 1);
    std::vector<std::string> chosen = {words[k]};
    for (std::size_t j = k + 1; j < words.size() && j < k + 6 && chosen.size() < 3; ++j) {
      if (rng.Chance(50)) chosen.push_back(words[j]);
    }
    if (chosen.size() < 2) chosen.push_back(words[k + 1]);
    if (rng.Chance(40)) std::reverse(chosen.begin(), chosen.end());
    std::string text;
    for (const std::string& w : chosen) text += (text.empty() ? "" : " ") + MangleCase(w);
    RefNode n = MakeLeaf(RefKind::kNear, "");
    n.text = text;
    n.distance = rng.Below(5);
    n.value_text = Quote(text) + "~" + std::to_string(n.distance);
    return n;
  }

  RefNode IndexLeaf() {
    static const std::vector<std::pair<RefKind, std::string>> kForms = {
        {RefKind::kTerm, "filebeat"},
        {RefKind::kTerm, "training-logs"},
        {RefKind::kTerm, "filebeat-7.17.0"},
        {RefKind::kWildcard, "filebeat-*"},
        {RefKind::kTerm, "logs"},
        {RefKind::kWildcard, "train*-logs"},
        {RefKind::kTerm, "jupyter-notebooks"},
        {RefKind::kTerm, "no-such-index"}};
    const auto& [kind, text] = kForms[rng.Index(kForms.size())];
    RefNode n = MakeLeaf(kind, "_index");
    n.text = text;
    n.value_text = kind == RefKind::kTerm && rng.Chance(30) ? Quote(text) : EscapeWord(text, "*?");
    if (kind == RefKind::kWildcard) PrefixIfTrailingStar(n);
    return n;
  }

  // A leaf on a keyword field (run.id or log.file.path; _index has
  // IndexLeaf), from one of its values: the whole value (maybe in another
  // case), a prefix, a wildcard pattern, a fuzzy form or an anchored regex.
  std::optional<RefNode> KeywordLeaf() {
    const char* field =
        rng.Chance(50) || values["log.file.path"].empty() ? "run.id" : "log.file.path";
    const auto& list = values[field];
    const RefValue& v = *list[rng.Index(list.size())];
    if (v.type != RefValue::Type::kString || v.text.empty()) return FieldTerm(field);
    const std::vector<std::size_t> cp = CodePointOffsets(v.text);
    const std::size_t chars = cp.size() - 1;
    const std::size_t cut = cp[1 + rng.Index(chars)];  // 1..all code points
    RefNode n = MakeLeaf(RefKind::kTerm, field);
    switch (rng.Below(5)) {
      case 0:  // the value, sometimes in another case
        n.text = rng.Chance(25) ? MangleCase(v.text) : v.text;
        n.value_text = rng.Chance(50) ? Quote(n.text) : EscapeWord(n.text);
        break;
      case 1:  // a prefix
        n.text = v.text.substr(0, cut);
        n.prefix = true;
        n.value_text = Quote(n.text) + "*";
        break;
      case 2: {  // one code point replaced by `?`; the rest, or the start, by `*`
        n.kind = RefKind::kWildcard;
        const std::size_t at = rng.Index(chars);
        const int form = rng.Below(3);
        n.text = form == 0   ? v.text.substr(0, cp[at]) + "?" + v.text.substr(cp[at + 1])
                 : form == 1 ? v.text.substr(0, cut) + "*"
                             : "*" + v.text.substr(cp[at]);
        n.value_text = EscapeWord(n.text, "*?");
        PrefixIfTrailingStar(n);
        break;
      }
      case 3: {  // one ASCII edit away
        n.kind = RefKind::kFuzzy;
        n.text = v.text;
        const std::size_t at = rng.Index(n.text.size());
        if (static_cast<unsigned char>(n.text[at]) < 0x80) n.text[at] = "xyz4"[rng.Below(4)];
        n.distance = 1 + rng.Below(2);
        n.value_text = EscapeWord(n.text) + "~" + std::to_string(n.distance);
        break;
      }
      default: {
        n.kind = RefKind::kRegex;
        // QuoteMeta's `\/` as a plain `/`, as in Regex().
        std::string quoted = RE2::QuoteMeta(v.text.substr(0, cut));
        RE2::GlobalReplace(&quoted, R"(\\/)", "/");
        n.text = "^" + quoted + (rng.Chance(50) ? "$" : "");
        n.value_text = RegexLiteral(n.text);
      }
    }
    return n;
  }

  RefNode IdLeaf() {
    RefNode n = MakeLeaf(RefKind::kTerm, "_id");
    n.text = rng.Chance(90) ? RandomEvent().id : "no-such-id";
    n.value_text = rng.Chance(30) ? Quote(n.text) : EscapeWord(n.text);
    return n;
  }

  // ---- Choosing leaves ----

  std::optional<RefNode> TryLeaf() {
    struct Choice {
      int weight;
      bool enabled;
      int id;
    };
    const std::vector<Choice> choices = {
        {14, true, 0},  // message term/phrase/prefix
        {12, true, 1},  // field term
        {3, true, 2},   // CJK
        {2, true, 3},   // absent
        {6, features.wildcards, 4},
        {3, features.regexes && document_leaves, 5},
        {6, features.ranges && document_leaves, 6},
        {4, features.timestamp_ranges, 7},
        {3, features.exists && document_leaves, 8},
        {2, features.fuzzy, 9},
        {2, features.near, 10},
        {2, features.index_field, 11},
        {1, features.id_field, 12},
        {5, features.keyword_fields && !values["run.id"].empty(), 13},
    };
    int total = 0;
    for (const Choice& c : choices) total += c.enabled ? c.weight : 0;
    int r = rng.Below(total);
    int id = 0;
    for (const Choice& c : choices) {
      if (!c.enabled) continue;
      if (r < c.weight) {
        id = c.id;
        break;
      }
      r -= c.weight;
    }
    switch (id) {
      case 0:
        return MessageTerm();
      case 1:
        return FieldTerm(rng.Pick(field_names));
      case 2:
        return CjkTerm();
      case 3:
        return AbsentTerm();
      case 4:
        return Wildcard();
      case 5:
        return Regex();
      case 6:
        return Range();
      case 7:
        return TimeRange();
      case 8:
        return Exists();
      case 9:
        return Fuzzy();
      case 10:
        return Near();
      case 11:
        return IndexLeaf();
      case 12:
        return IdLeaf();
      default:
        return KeywordLeaf();
    }
  }

  RefNode AnyLeaf() {
    for (;;) {
      if (auto n = TryLeaf()) return *std::move(n);
    }
  }

  // A leaf on `field` for a field group: a term, phrase, prefix or wildcard.
  RefNode GroupLeaf(const std::string& field) {
    for (;;) {
      std::optional<RefNode> n;
      if (features.wildcards && rng.Chance(20)) {
        const auto& list = values[field];
        const RefValue* v = list[rng.Index(list.size())];
        if (v->type != RefValue::Type::kString) continue;
        for (const RefWordSpan& s : RefWordSpans(v->text)) {
          if (!s.cjk && s.end - s.begin >= 3) {
            n = MakeLeaf(RefKind::kWildcard, field);
            n->text = WildWord(v->text.substr(s.begin, s.end - s.begin));
            n->value_text = EscapeWord(n->text, "*?");
            PrefixIfTrailingStar(*n);
            break;
          }
        }
      } else {
        n = FieldTerm(field);
      }
      if (n) return *std::move(n);
    }
  }

  // ---- Inner nodes ----

  int OpStyle(bool is_and) {
    std::vector<int> styles = {0};
    if (features.symbol_operators) styles.push_back(1);
    if (features.lowercase_operators) styles.push_back(2);
    if (is_and) {
      styles.push_back(3);  // juxtaposition
      styles.push_back(3);
    }
    return rng.Pick(styles);
  }

  RefNode Boolean(int depth, const std::function<RefNode()>& leaf) {
    static const std::array<int, 5> kLeafChance = {15, 45, 65, 85, 100};
    if (rng.Below(100) < kLeafChance[static_cast<std::size_t>(std::min(depth, 4))]) return leaf();
    RefNode n;
    const int r = rng.Below(100);
    if (r < 40) {
      n.kind = RefKind::kAnd;
      const int k = 2 + rng.Below(3);
      for (int i = 0; i < k; ++i) n.children.push_back(Boolean(depth + 1, leaf));
      n.op_style = OpStyle(true);
      if (features.marks) {
        for (RefNode& c : n.children) {
          if (c.kind == RefKind::kNot && rng.Chance(50))
            c.mark = '-';
          else if (c.kind != RefKind::kNot && rng.Chance(10))
            c.mark = '+';
        }
      }
    } else if (r < 72) {
      n.kind = RefKind::kOr;
      const int k = 2 + rng.Below(2);
      for (int i = 0; i < k; ++i) n.children.push_back(Boolean(depth + 1, leaf));
      n.op_style = OpStyle(false);
    } else if (r < 90 || !features.marks) {
      n.kind = RefKind::kNot;
      n.children.push_back(Boolean(depth + 1, leaf));
      n.op_style = OpStyle(false);
    } else {
      n.kind = RefKind::kLuceneOr;
      const int k = 1 + rng.Below(3);
      bool any_mark = false;
      for (int i = 0; i < k; ++i) {
        n.children.push_back(Boolean(depth + 1, leaf));
        const int m = rng.Below(3);
        n.marks.push_back(m == 0 ? '+' : m == 1 ? '-' : ' ');
        any_mark |= n.marks.back() != ' ';
      }
      if (!any_mark) n.marks[0] = '-';
      n.op_style = OpStyle(false);
    }
    if (rng.Chance(8)) n.parens = true;
    if (n.parens && features.boosts && rng.Chance(20)) n.boost = "^2";
    return n;
  }

  RefNode Next() {
    document_leaves = rng.Chance(features.document_leaf_percent);
    if (rng.Chance(2)) {
      RefNode all;
      static const std::vector<std::string> kAll = {"*", "*:*", "", "  "};
      all.value_text = rng.Pick(kAll);
      return all;
    }
    auto leaf = [this]() -> RefNode {
      if (features.field_groups && rng.Chance(10)) {
        static const std::vector<std::string> kGroupFields = {
            "user", "host.name", "log.level", "tags", "run_id", "gpu_id", "labels.team"};
        const std::string field = rng.Pick(kGroupFields);
        RefNode g;
        do {
          g = Boolean(2, [&] { return GroupLeaf(field); });
        } while (g.children.empty());
        g.group_field = field;
        g.parens = false;
        if (features.boosts && rng.Chance(20)) g.boost = "^3";
        return g;
      }
      return AnyLeaf();
    };
    return Boolean(0, leaf);
  }

  RefNode Combine(RefNode tree, RefKind kind) {
    RefNode n;
    n.kind = kind;
    n.op_style = OpStyle(kind == RefKind::kAnd);
    n.children.push_back(std::move(tree));
    n.children.push_back(AnyLeaf());
    if (rng.Chance(50)) std::swap(n.children[0], n.children[1]);
    return n;
  }

  const std::vector<RefEvent>& events;
  Rng rng;
  QueryFeatures features;
  bool document_leaves = true;  // for the query being generated
  std::int64_t now_ms;
  std::vector<std::int64_t> timestamps;
  std::map<std::string, std::vector<const RefValue*>> values;
  std::vector<std::string> field_names, numeric_fields, string_fields;
};

QueryGenerator::QueryGenerator(const std::vector<RefEvent>& events, std::uint64_t seed,
                               QueryFeatures features, std::int64_t now_ms)
    : impl_(std::make_unique<Impl>(events, seed, features, now_ms)) {}
QueryGenerator::~QueryGenerator() = default;

RefNode QueryGenerator::Next() {
  return impl_->Next();
}

RefNode QueryGenerator::Narrow(RefNode tree) {
  return impl_->Combine(std::move(tree), RefKind::kAnd);
}

RefNode QueryGenerator::Widen(RefNode tree) {
  return impl_->Combine(std::move(tree), RefKind::kOr);
}

}  // namespace dashcam::testing
