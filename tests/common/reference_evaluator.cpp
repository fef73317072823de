// ReferenceEvaluator: see the header. Every rule below cites the sentence of
// storage/query_ast.h it implements; where the code is longer than the
// sentence, it is only because the sentence says "some value" or "some
// occurrence" and the code has to look at each one.
#include "tests/common/reference_evaluator.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <unordered_map>

#include <fmt/format.h>
#include <re2/re2.h>
#include <boost/json.hpp>

namespace dashcam::testing {
namespace {

namespace json = boost::json;

// ---- Characters ----------------------------------------------------------

enum class CharClass { kSeparator, kWord, kCjk, kUnknown };

// Decodes one code point at `i`; invalid UTF-8 gives nullopt (the data and
// the generated queries are valid UTF-8, so the oracle need not guess).
std::optional<char32_t> Decode(std::string_view s, std::size_t& i) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  int len = b0 < 0x80 ? 1 : (b0 >> 5) == 0x6 ? 2 : (b0 >> 4) == 0xE ? 3 : (b0 >> 3) == 0x1E ? 4 : 0;
  if (len == 0 || i + len > s.size()) return std::nullopt;
  char32_t cp = len == 1 ? b0 : (b0 & (0x7F >> len));
  for (int k = 1; k < len; ++k) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    if ((b & 0xC0) != 0x80) return std::nullopt;
    cp = (cp << 6) | (b & 0x3F);
  }
  i += static_cast<std::size_t>(len);
  return cp;
}

std::vector<char32_t> CodePoints(std::string_view s) {
  std::vector<char32_t> out;
  for (std::size_t i = 0; i < s.size();) {
    auto cp = Decode(s, i);
    if (!cp) {
      out.push_back(0xFFFD);
      ++i;
    } else {
      out.push_back(*cp);
    }
  }
  return out;
}

void AppendUtf8(std::string& out, char32_t c) {
  if (c < 0x80) {
    out.push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (c >> 6)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else if (c < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (c >> 12)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (c >> 18)));
    out.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  }
}

CharClass Classify(char32_t c) {
  if (c < 0x80) {
    const bool alnum = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    return alnum ? CharClass::kWord : CharClass::kSeparator;
  }
  const bool cjk = (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
                   (c >= 0x3040 && c <= 0x30FF) || (c >= 0xAC00 && c <= 0xD7A3);
  if (cjk) return CharClass::kCjk;
  // CJK symbols and punctuation (、。「」), fullwidth punctuation (，！％).
  const bool punct =
      (c >= 0x3000 && c <= 0x303F) || (c >= 0xFF00 && c <= 0xFF0F) || (c >= 0xFF1A && c <= 0xFF20);
  return punct ? CharClass::kSeparator : CharClass::kUnknown;
}

char32_t Lower(char32_t c) {
  return c >= 'A' && c <= 'Z' ? c + 32 : c;
}

std::string FoldAscii(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(Lower(static_cast<unsigned char>(c)));
  return out;
}

bool IsAscii(std::string_view s) {
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return static_cast<unsigned char>(c) < 0x80; });
}

// ---- Numbers ---------------------------------------------------------------

// "parses whole as a number (std::from_chars, double)".
std::optional<double> WholeNumber(std::string_view text) {
  double d = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), d);
  if (text.empty() || ec != std::errc() || p != text.data() + text.size()) return std::nullopt;
  return d;
}

// "a decimal number (CanonicalNumberText accepts it)": an integer, or a
// finite double in plain or exponent notation.
std::optional<double> DecimalNumber(std::string_view text) {
  auto d = WholeNumber(text);
  if (!d || !std::isfinite(*d)) return std::nullopt;
  return d;
}

// "Keyword fields: run.id, _index, log.file.path, host.name" (storage/query_ast.h).
bool IsKeywordField(std::string_view field) {
  return field == "run.id" || field == "_index" || field == "log.file.path" || field == "host.name";
}

// ---- Matching single tokens -------------------------------------------------

// `*` any run of code points, `?` exactly one; the whole token must match.
// Sequences of code points, or of bytes when both are ASCII.
template <class Seq>
bool GlobMatch(const Seq& pat, const Seq& tok) {
  // match[i][j]: pat[0..i) matches tok[0..j).
  std::vector<std::vector<char>> match(pat.size() + 1, std::vector<char>(tok.size() + 1, 0));
  match[0][0] = 1;
  for (std::size_t i = 1; i <= pat.size(); ++i) {
    for (std::size_t j = 0; j <= tok.size(); ++j) {
      if (pat[i - 1] == '*') {
        match[i][j] = match[i - 1][j] || (j > 0 && match[i][j - 1]);
      } else if (j > 0 && (pat[i - 1] == '?' || pat[i - 1] == tok[j - 1])) {
        match[i][j] = match[i - 1][j - 1];
      }
    }
  }
  return match[pat.size()][tok.size()] != 0;
}

// Optimal string alignment distance over code points (or bytes, for ASCII).
template <class Seq>
int OsaDistance(const Seq& a, const Seq& b) {
  std::vector<std::vector<int>> d(a.size() + 1, std::vector<int>(b.size() + 1, 0));
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = static_cast<int>(i);
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = static_cast<int>(j);
  for (std::size_t i = 1; i <= a.size(); ++i) {
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const int cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.size()][b.size()];
}

// "A keyword field's string value matches whole, byte for byte: kTerm when
// equal to `text` (prefix: when it starts with it), kWildcard when the
// whole value matches the pattern, kFuzzy when the whole value is within N
// edits of `text`; no case folding." Numbers as on any field. `v` is null
// for `_index`, a string `s`.
bool KeywordValueMatches(const RefNode& n, const RefValue* v, const std::string& s) {
  if (v && v->type == RefValue::Type::kNumber) {
    if (n.kind != RefKind::kTerm || n.prefix) return false;
    const std::optional<double> number = DecimalNumber(n.text);
    return number && v->number == *number;
  }
  switch (n.kind) {
    case RefKind::kTerm:
      return n.prefix ? s.starts_with(n.text) : s == n.text;
    case RefKind::kWildcard:
      return GlobMatch(CodePoints(n.text), CodePoints(s));
    default:
      return OsaDistance(CodePoints(n.text), CodePoints(s)) <= std::min(n.distance, 2);
  }
}

// KeywordValueMatches over many values, each distinct string once: a
// keyword field's values repeat (one log path per event of a run), and the
// fuzzy and wildcard matching above is the slowest code of the reference
// (under the sanitizers it had made the differential test take 270 s).
class KeywordMatcher {
 public:
  explicit KeywordMatcher(const RefNode& n) : n_(n) {}
  // `s` must outlive the matcher.
  bool operator()(const RefValue* v, const std::string& s) {
    if (v && v->type == RefValue::Type::kNumber) return KeywordValueMatches(n_, v, s);
    auto [it, fresh] = strings_.try_emplace(s, false);
    if (fresh) it->second = KeywordValueMatches(n_, v, s);
    return it->second;
  }

 private:
  const RefNode& n_;
  std::unordered_map<std::string_view, bool> strings_;
};

// Integers as integers, other numbers in shortest round-trip form.
std::string NumberText(const json::value& v) {
  if (v.is_int64()) return std::to_string(v.get_int64());
  if (v.is_uint64()) return std::to_string(v.get_uint64());
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v.get_double());
  return ec == std::errc() ? std::string(buf, end) : json::serialize(v);
}

void FlattenValue(const json::value& v, std::string& path, RefEvent& out) {
  switch (v.kind()) {
    case json::kind::object:
      for (const auto& [key, child] : v.get_object()) {
        const std::size_t mark = path.size();
        if (!path.empty()) path.push_back('.');
        path.append(key);
        FlattenValue(child, path, out);
        path.resize(mark);
      }
      return;
    case json::kind::array:
      for (const auto& element : v.get_array()) FlattenValue(element, path, out);
      return;
    case json::kind::string:
      out.fields.push_back({path, {RefValue::Type::kString, std::string(v.get_string()), 0}});
      return;
    case json::kind::bool_:
      out.fields.push_back({path, {RefValue::Type::kBool, v.get_bool() ? "true" : "false", 0}});
      return;
    case json::kind::int64:
    case json::kind::uint64:
    case json::kind::double_:
      out.fields.push_back({path, {RefValue::Type::kNumber, NumberText(v), v.to_number<double>()}});
      return;
    case json::kind::null:
      return;
  }
}

}  // namespace

// ---- Public helpers ----------------------------------------------------------

std::vector<std::string> RefTokens(std::string_view text) {
  std::vector<std::string> tokens;
  std::string word;
  std::vector<char32_t> run;  // current CJK run
  auto flush = [&] {
    if (!word.empty()) tokens.push_back(std::move(word));
    word.clear();
    if (run.size() == 1) {
      tokens.emplace_back();
      AppendUtf8(tokens.back(), run[0]);
    }
    for (std::size_t i = 0; i + 1 < run.size(); ++i) {
      tokens.emplace_back();
      AppendUtf8(tokens.back(), run[i]);
      AppendUtf8(tokens.back(), run[i + 1]);
    }
    run.clear();
  };
  for (char32_t c : CodePoints(text)) {
    switch (Classify(c)) {
      case CharClass::kWord:
        if (!run.empty()) flush();
        AppendUtf8(word, Lower(c));
        break;
      case CharClass::kCjk:
        if (!word.empty()) flush();
        run.push_back(c);
        break;
      default:
        flush();
    }
  }
  flush();
  return tokens;
}

std::vector<RefWordSpan> RefWordSpans(std::string_view text) {
  std::vector<RefWordSpan> spans;
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t at = i;
    auto cp = Decode(text, i);
    if (!cp) {
      ++i;
      continue;
    }
    const CharClass cls = Classify(*cp);
    if (cls != CharClass::kWord && cls != CharClass::kCjk) continue;
    const bool cjk = cls == CharClass::kCjk;
    if (!spans.empty() && spans.back().end == at && spans.back().cjk == cjk) {
      spans.back().end = i;
    } else {
      spans.push_back({at, i, cjk});
    }
  }
  return spans;
}

std::string Unsupported(std::string_view text) {
  for (char32_t c : CodePoints(text)) {
    if (c == 0xFFFD || Classify(c) == CharClass::kUnknown) {
      return fmt::format("U+{:04X}", static_cast<std::uint32_t>(c));
    }
  }
  return {};
}

bool FlattenDocument(std::string_view text, RefEvent& out, std::string& error) {
  boost::system::error_code ec;
  json::value doc = json::parse(text, ec);
  if (ec || !doc.is_object()) {
    error = ec ? ec.message() : "not an object";
    return false;
  }
  const json::object& obj = doc.get_object();
  for (const char* key : {"message", "msg", "log"}) {
    const json::value* v = obj.if_contains(key);
    if (v && v->is_string()) {
      out.message = std::string(v->get_string());
      break;
    }
  }
  for (const auto& [key, value] : obj) {
    if (key == "@timestamp" || (key == "message" && value.is_string())) continue;
    std::string path(key);
    FlattenValue(value, path, out);
  }
  return true;
}

std::string DebugString(const RefNode& n) {
  auto field = [&] { return n.field.empty() ? std::string("message") : n.field; };
  switch (n.kind) {
    case RefKind::kAll:
      return "ALL";
    case RefKind::kAnd:
    case RefKind::kOr:
    case RefKind::kNot:
    case RefKind::kLuceneOr: {
      std::string s = n.kind == RefKind::kAnd   ? "(AND"
                      : n.kind == RefKind::kOr  ? "(OR"
                      : n.kind == RefKind::kNot ? "(NOT"
                                                : "(LUCENE-OR";
      for (std::size_t i = 0; i < n.children.size(); ++i) {
        s += " ";
        if (n.kind == RefKind::kLuceneOr && n.marks[i] != ' ') s += n.marks[i];
        s += DebugString(n.children[i]);
      }
      return s + ")";
    }
    case RefKind::kTerm:
      return fmt::format("{}:\"{}\"{}", field(), n.text, n.prefix ? "*" : "");
    case RefKind::kWildcard:
      return fmt::format("WILDCARD {}:{}", field(), n.text);
    case RefKind::kRegex:
      return fmt::format("REGEX {}:/{}/", field(), n.text);
    case RefKind::kNear:
      return fmt::format("NEAR {}:\"{}\"~{}", field(), n.text, n.distance);
    case RefKind::kFuzzy:
      return fmt::format("FUZZY {}:{}~{}", field(), n.text, n.distance);
    case RefKind::kRange:
      return fmt::format("RANGE {}:{}{} TO {}{}", field(), n.include_lower ? '[' : '{',
                         n.lower.empty() ? "*" : n.lower, n.upper.empty() ? "*" : n.upper,
                         n.include_upper ? ']' : '}');
    case RefKind::kTimeRange:
      return fmt::format("TIME [{} TO {}]", n.from_ms, n.to_ms);
    case RefKind::kExists:
      return fmt::format("EXISTS {}", field());
  }
  return "?";
}

// ---- The evaluator -------------------------------------------------------------

namespace {

// One position of a token pattern: a token id, or a predicate on the token's
// text whose answers are memoized per token id.
class Position {
 public:
  explicit Position(std::int32_t id) : id_(id) {}
  explicit Position(std::function<bool(const std::string&)> pred) : pred_(std::move(pred)) {}

  bool exact() const { return !pred_; }
  std::int32_t id() const { return id_; }

  bool Matches(std::int32_t id, const std::vector<std::string>& words) {
    if (!pred_) return id == id_;
    if (memo_.size() < words.size()) memo_.resize(words.size(), -1);
    auto& m = memo_[static_cast<std::size_t>(id)];
    if (m < 0) m = pred_(words[static_cast<std::size_t>(id)]) ? 1 : 0;
    return m == 1;
  }

 private:
  std::int32_t id_ = -1;
  std::function<bool(const std::string&)> pred_;
  std::vector<signed char> memo_;
};

}  // namespace

struct ReferenceEvaluator::Data {
  // A value with its tokens interned (ids into `words`).
  struct Value {
    std::size_t event = 0;
    int name = 0;
    const RefValue* value = nullptr;  // null: the message (a string)
    const std::string* text = nullptr;
    std::vector<std::int32_t> tokens;
  };
  struct Event {
    const RefEvent* source = nullptr;
    std::vector<Value> values;  // the message first (name "message"), then `_index`, then fields
  };

  std::vector<Event> events;
  // by_name[name id]: every value of that name.
  std::vector<std::vector<const Value*>> by_name;
  // postings[{name id, token id}]: every value of that name whose tokens
  // include that token (once each).
  std::unordered_map<std::uint64_t, std::vector<const Value*>> postings;
  static std::uint64_t PostingKey(int name, std::int32_t token) {
    return (static_cast<std::uint64_t>(name) << 32) | static_cast<std::uint32_t>(token);
  }
  std::unordered_map<std::string, std::int32_t> word_ids;
  std::vector<std::string> words;
  std::unordered_map<std::string, int> name_ids;
  std::unordered_map<std::string, std::vector<char>> leaf_cache;
  // Wildcard and fuzzy patterns by leaf, so their per-token memos serve
  // both MaxExpansion and Evaluate; bounded, as each memo is vocabulary-sized.
  struct CachedPattern {
    std::vector<Position> positions;
    std::vector<bool> expanded;  // TokenPattern's flags
  };
  std::unordered_map<std::string, CachedPattern> patterns;
  CachedPattern& PatternOf(const RefNode& n);
  // day_tokens[name id][UTC day]: the distinct tokens of that field's values
  // in events of that day, sorted; filled on first use.
  std::map<int, std::map<std::int64_t, std::vector<std::int32_t>>> day_tokens;
  std::map<int, std::vector<std::int32_t>> vocabularies;  // Vocabulary()
  std::vector<std::string> owned_index;  // the `_index` values, as strings to point at

  int NameId(const std::string& name) {
    auto [it, inserted] = name_ids.try_emplace(name, static_cast<int>(name_ids.size()));
    return it->second;
  }
  std::vector<std::int32_t> Intern(std::string_view text) {
    std::vector<std::int32_t> ids;
    for (std::string& t : RefTokens(text)) {
      auto [it, inserted] = word_ids.try_emplace(t, static_cast<std::int32_t>(words.size()));
      if (inserted) words.push_back(std::move(t));
      ids.push_back(it->second);
    }
    return ids;
  }
  const std::map<std::int64_t, std::vector<std::int32_t>>& DayTokens(int name) {
    auto [it, inserted] = day_tokens.try_emplace(name);
    if (!inserted) return it->second;
    for (const Value* v : by_name[static_cast<std::size_t>(name)]) {
      const std::int64_t ts = events[v->event].source->ts_ms;
      const std::int64_t day = (ts >= 0 ? ts : ts - 86399999) / 86400000;
      auto& ids = it->second[day];
      ids.insert(ids.end(), v->tokens.begin(), v->tokens.end());
    }
    for (auto& [day, ids] : it->second) {
      std::sort(ids.begin(), ids.end());
      ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    }
    return it->second;
  }
  // The values of field `name` having `token` (none for token -1).
  const std::vector<const Value*>& Postings(int name, std::int32_t token) const {
    static const std::vector<const Value*> kNone;
    auto it = postings.find(PostingKey(name, token));
    return it == postings.end() ? kNone : it->second;
  }
  // The distinct tokens of field `name`'s values, sorted.
  const std::vector<std::int32_t>& Vocabulary(int name) {
    auto [it, inserted] = vocabularies.try_emplace(name);
    if (inserted) {
      for (const auto& [day, ids] : DayTokens(name)) {
        it->second.insert(it->second.end(), ids.begin(), ids.end());
      }
      std::sort(it->second.begin(), it->second.end());
      it->second.erase(std::unique(it->second.begin(), it->second.end()), it->second.end());
    }
    return it->second;
  }
  // -1 when no event has the token (then nothing can equal it).
  std::int32_t Lookup(const std::string& token) const {
    auto it = word_ids.find(token);
    return it == word_ids.end() ? -1 : it->second;
  }
};

namespace {

// "the value's token sequence contains the positions contiguously".
bool ContainsContiguous(const std::vector<std::int32_t>& tokens, std::vector<Position>& pattern,
                        const std::vector<std::string>& words) {
  if (pattern.empty() || pattern.size() > tokens.size()) return false;
  for (std::size_t start = 0; start + pattern.size() <= tokens.size(); ++start) {
    bool all = true;
    for (std::size_t j = 0; j < pattern.size() && all; ++j) {
      all = pattern[j].Matches(tokens[start + j], words);
    }
    if (all) return true;
  }
  return false;
}

// Start positions of `phrase` (token ids) in `tokens`.
std::vector<int> Occurrences(const std::vector<std::int32_t>& tokens,
                             const std::vector<std::int32_t>& phrase) {
  std::vector<int> out;
  if (phrase.empty() || phrase.size() > tokens.size()) return out;
  for (std::size_t s = 0; s + phrase.size() <= tokens.size(); ++s) {
    if (std::equal(phrase.begin(), phrase.end(), tokens.begin() + static_cast<std::ptrdiff_t>(s))) {
      out.push_back(static_cast<int>(s));
    }
  }
  return out;
}

// NEAR: a choice of occurrence s_i for every phrase such that for every i,
// max_j(s_j) - (s_i + n_i) <= distance. Tries every choice.
bool NearMatches(const std::vector<std::vector<int>>& occ, const std::vector<int>& lengths,
                 int distance, std::vector<int>& chosen) {
  if (chosen.size() == occ.size()) {
    const int last = *std::max_element(chosen.begin(), chosen.end());
    for (std::size_t i = 0; i < chosen.size(); ++i) {
      if (last - (chosen[i] + lengths[i]) > distance) return false;
    }
    return true;
  }
  for (int s : occ[chosen.size()]) {
    chosen.push_back(s);
    const bool ok = NearMatches(occ, lengths, distance, chosen);
    chosen.pop_back();
    if (ok) return true;
  }
  return false;
}

// The positions of a kWildcard or kFuzzy leaf. `expanded`, when given,
// flags the positions an index must expand to a list of terms: a wildcard
// token pattern other than `*` alone, and the fuzzy word.
std::vector<Position> TokenPattern(const RefNode& n,
                                   const std::function<std::int32_t(const std::string&)>& lookup,
                                   std::vector<bool>* expanded) {
  std::vector<Position> pattern;
  auto add = [&](Position p, bool is_expanded) {
    pattern.push_back(std::move(p));
    if (expanded) expanded->push_back(is_expanded);
  };
  if (n.kind == RefKind::kFuzzy) {
    // "some string value has a token t whose optimal string alignment
    // distance to the case-folded `text` is at most N".
    const std::string folded = FoldAscii(n.text);
    const std::vector<char32_t> word = CodePoints(folded);
    const int max = n.distance;
    add(Position([folded, word, max](const std::string& t) {
          // More characters apart than `max` edits cannot bridge: skip the DP.
          const auto chars = std::count_if(t.begin(), t.end(), [](char c) {
            return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
          });
          if (std::abs(static_cast<int>(chars) - static_cast<int>(word.size())) > max) return false;
          if (IsAscii(t) && IsAscii(folded)) {
            return OsaDistance(std::string_view(folded), std::string_view(t)) <= max;
          }
          return OsaDistance(word, CodePoints(t)) <= max;
        }),
        true);
    return pattern;
  }
  // "cut into segments at every character that is not a letter, digit, CJK
  // character, `*` or `?`"; a plain segment gives its tokens, a segment with
  // a wildcard is one case-folded token pattern.
  std::vector<std::string> segments(1);
  for (char32_t c : CodePoints(n.text)) {
    if (c == '*' || c == '?' || Classify(c) == CharClass::kWord || Classify(c) == CharClass::kCjk) {
      AppendUtf8(segments.back(), c);
    } else if (!segments.back().empty()) {
      segments.emplace_back();
    }
  }
  for (const std::string& seg : segments) {
    if (seg.find_first_of("*?") == std::string::npos) {
      for (const std::string& t : RefTokens(seg)) add(Position(lookup(t)), false);
    } else {
      const std::string folded = FoldAscii(seg);
      const std::vector<char32_t> glob = CodePoints(folded);
      // The literal text before the first and after the last wildcard: a
      // token without them cannot match, which spares most of the DP.
      const std::string head = folded.substr(0, folded.find_first_of("*?"));
      const std::string tail = folded.substr(folded.find_last_of("*?") + 1);
      add(Position([folded, glob, head, tail](const std::string& t) {
            if (!t.starts_with(head) || !t.ends_with(tail)) return false;
            if (IsAscii(t) && IsAscii(folded)) {
              return GlobMatch(std::string_view(folded), std::string_view(t));
            }
            return GlobMatch(glob, CodePoints(t));
          }),
          seg.find_first_not_of('*') != std::string::npos);
    }
  }
  return pattern;
}

}  // namespace

ReferenceEvaluator::Data::CachedPattern& ReferenceEvaluator::Data::PatternOf(const RefNode& n) {
  const std::string key = DebugString(n);
  if (auto it = patterns.find(key); it != patterns.end()) return it->second;
  if (patterns.size() >= 32) patterns.clear();
  CachedPattern c;
  c.positions = TokenPattern(
      n, [this](const std::string& t) { return Lookup(t); }, &c.expanded);
  return patterns.emplace(key, std::move(c)).first->second;
}

namespace {

bool InRange(const RefNode& n, double v, double lo, double hi) {
  const bool above = n.lower.empty() || (n.include_lower ? v >= lo : v > lo);
  const bool below = n.upper.empty() || (n.include_upper ? v <= hi : v < hi);
  return above && below;
}

bool InRange(const RefNode& n, const std::string& v) {
  const bool above = n.lower.empty() || (n.include_lower ? v >= n.lower : v > n.lower);
  const bool below = n.upper.empty() || (n.include_upper ? v <= n.upper : v < n.upper);
  return above && below;
}

}  // namespace

ReferenceEvaluator::ReferenceEvaluator(const std::vector<RefEvent>& events)
    : d_(std::make_unique<Data>()) {
  Data& d = *d_;
  d.owned_index.reserve(events.size());
  d.events.reserve(events.size());
  const int message = d.NameId("message"), index = d.NameId("_index");
  for (const RefEvent& e : events) {
    Data::Event ev;
    ev.source = &e;
    const std::size_t i = d.events.size();
    if (e.message) ev.values.push_back({i, message, nullptr, &*e.message, d.Intern(*e.message)});
    if (!e.index.empty()) ev.values.push_back({i, index, nullptr, &e.index, d.Intern(e.index)});
    for (const auto& [name, value] : e.fields) {
      Data::Value v{i, d.NameId(name), &value, &value.text, {}};
      if (value.type != RefValue::Type::kNumber) v.tokens = d.Intern(value.text);
      ev.values.push_back(std::move(v));
    }
    d.events.push_back(std::move(ev));
  }
  d.by_name.resize(d.name_ids.size());
  for (const Data::Event& ev : d.events) {
    for (const Data::Value& v : ev.values) {
      d.by_name[static_cast<std::size_t>(v.name)].push_back(&v);
      for (std::int32_t t : v.tokens) {
        auto& list = d.postings[Data::PostingKey(v.name, t)];
        if (list.empty() || list.back() != &v) list.push_back(&v);
      }
    }
  }
}

ReferenceEvaluator::~ReferenceEvaluator() = default;

std::vector<char> ReferenceEvaluator::Evaluate(const RefNode& n) {
  Data& d = *d_;
  const std::size_t count = d.events.size();
  switch (n.kind) {
    case RefKind::kAll:
      return std::vector<char>(count, 1);
    case RefKind::kAnd:
    case RefKind::kOr: {
      std::vector<char> out(count, n.kind == RefKind::kAnd ? 1 : 0);
      for (const RefNode& c : n.children) {
        const std::vector<char> sub = Evaluate(c);
        for (std::size_t i = 0; i < count; ++i) {
          out[i] = n.kind == RefKind::kAnd ? (out[i] && sub[i]) : (out[i] || sub[i]);
        }
      }
      return out;
    }
    case RefKind::kNot: {
      std::vector<char> out = Evaluate(n.children.at(0));
      for (char& c : out) c = !c;
      return out;
    }
    case RefKind::kLuceneOr: {
      // AND(+children, NOT -children, OR(unmarked) when there is no +child).
      std::vector<char> out(count, 1);
      std::vector<char> plain(count, 0);
      bool any_plus = false, any_plain = false;
      for (std::size_t k = 0; k < n.children.size(); ++k) {
        const std::vector<char> sub = Evaluate(n.children[k]);
        const char mark = n.marks.at(k);
        any_plus |= mark == '+';
        any_plain |= mark == ' ';
        for (std::size_t i = 0; i < count; ++i) {
          if (mark == '+') out[i] = out[i] && sub[i];
          if (mark == '-') out[i] = out[i] && !sub[i];
          if (mark == ' ') plain[i] = plain[i] || sub[i];
        }
      }
      if (!any_plus && any_plain) {
        for (std::size_t i = 0; i < count; ++i) out[i] = out[i] && plain[i];
      }
      return out;
    }
    default:
      break;
  }
  // A leaf: its answer depends only on its meaning, so it is cached by it.
  const std::string key = DebugString(n);
  if (auto it = d.leaf_cache.find(key); it != d.leaf_cache.end()) return it->second;

  std::vector<char> out(count, 0);
  const std::string field = n.field.empty() ? "message" : n.field;
  const bool is_message = field == "message";

  if (n.kind == RefKind::kTimeRange) {
    for (std::size_t i = 0; i < count; ++i) {
      const std::int64_t t = d.events[i].source->ts_ms;
      out[i] = t >= n.from_ms && t <= n.to_ms;
    }
  } else if (n.kind == RefKind::kTerm && field == "_id") {
    // "matches the event whose id equals `text` byte for byte".
    for (std::size_t i = 0; i < count; ++i) out[i] = d.events[i].source->id == n.text;
  } else if (IsKeywordField(field) && (n.kind == RefKind::kTerm || n.kind == RefKind::kWildcard ||
                                       n.kind == RefKind::kFuzzy)) {
    auto name_it = d.name_ids.find(field);
    if (name_it != d.name_ids.end()) {
      KeywordMatcher matches(n);
      for (const Data::Value* v : d.by_name[static_cast<std::size_t>(name_it->second)]) {
        if (matches(v->value, *v->text)) out[v->event] = 1;
      }
    }
  } else if (n.kind == RefKind::kExists && (field == "@timestamp" || field == "_id")) {
    out.assign(count, 1);
  } else if (n.kind == RefKind::kExists) {
    // "the field has at least one value, or ... any value whose name starts with F."
    std::vector<char> names(d.name_ids.size(), 0);
    for (const auto& [name, id] : d.name_ids) {
      names[static_cast<std::size_t>(id)] =
          name == field ||
          (name.size() > field.size() && name.starts_with(field) && name[field.size()] == '.');
    }
    for (std::size_t i = 0; i < count; ++i) {
      for (const Data::Value& v : d.events[i].values) {
        if (names[static_cast<std::size_t>(v.name)]) out[i] = 1;
      }
    }
  } else {
    auto name_it = d.name_ids.find(field);
    const int name = name_it == d.name_ids.end() ? -1 : name_it->second;
    // One predicate over one value, per leaf kind.
    std::function<bool(const Data::Value&)> pred;
    std::vector<Position> pattern;
    std::vector<Position>* positions = &pattern;  // the leaf's token pattern
    std::optional<double> numeric_term;
    std::vector<std::int32_t> required;  // tokens every matching value has
    std::unique_ptr<RE2> re;
    switch (n.kind) {
      case RefKind::kTerm: {
        // "some string value's token sequence contains the tokens of `text`
        // as a contiguous subsequence"; with `prefix`, the last one is a
        // prefix of the value's token.
        const std::vector<std::string> tokens = RefTokens(n.text);
        for (std::size_t j = 0; j < tokens.size(); ++j) {
          if (n.prefix && j + 1 == tokens.size()) {
            const std::string p = tokens[j];
            pattern.emplace_back([p](const std::string& t) { return t.starts_with(p); });
          } else {
            pattern.emplace_back(d.Lookup(tokens[j]));
          }
        }
        // "on a field other than the message, when `text` is a decimal
        // number and not `prefix`, a number value equal to it also matches".
        numeric_term = !is_message && !n.prefix ? DecimalNumber(n.text) : std::nullopt;
        const std::optional<double> number = numeric_term;
        pred = [&, number](const Data::Value& v) {
          if (v.value && v.value->type == RefValue::Type::kNumber) {
            return number.has_value() && v.value->number == *number;
          }
          return ContainsContiguous(v.tokens, pattern, d.words);
        };
        break;
      }
      case RefKind::kWildcard:
      case RefKind::kFuzzy:
        positions = &d.PatternOf(n).positions;
        pred = [&](const Data::Value& v) {
          if (v.value && v.value->type == RefValue::Type::kNumber) return false;
          return ContainsContiguous(v.tokens, *positions, d.words);
        };
        break;
      case RefKind::kRegex: {
        // "RE2::PartialMatch(value, pattern) holds for some string value".
        re = std::make_unique<RE2>(n.text);
        if (!re->ok()) throw std::runtime_error("reference: bad regex " + n.text);
        pred = [&](const Data::Value& v) {
          if (v.value && v.value->type == RefValue::Type::kNumber) return false;
          return RE2::PartialMatch(*v.text, *re);
        };
        break;
      }
      case RefKind::kNear: {
        // Words at whitespace, each a phrase; FTS5's NEAR rule over them.
        std::vector<std::vector<std::int32_t>> phrases;
        std::string word;
        auto flush = [&] {
          std::vector<std::int32_t> ids;
          for (const std::string& t : RefTokens(word)) ids.push_back(d.Lookup(t));
          if (!ids.empty()) phrases.push_back(std::move(ids));
          word.clear();
        };
        for (char c : n.text) {
          if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v')
            flush();
          else
            word.push_back(c);
        }
        flush();
        std::vector<int> lengths;
        for (const auto& p : phrases) {
          lengths.push_back(static_cast<int>(p.size()));
          required.insert(required.end(), p.begin(), p.end());
        }
        pred = [&, phrases, lengths](const Data::Value& v) {
          if (v.value || phrases.empty()) return false;  // the message only
          std::vector<std::vector<int>> occ;
          for (const auto& p : phrases) {
            occ.push_back(Occurrences(v.tokens, p));
            if (occ.back().empty()) return false;
          }
          std::vector<int> chosen;
          return NearMatches(occ, lengths, n.distance, chosen);
        };
        break;
      }
      case RefKind::kRange: {
        // "numerically when every non-empty bound parses whole as a number
        // ...; otherwise by byte order of string values (booleans included,
        // numbers excluded)".
        const auto lo = WholeNumber(n.lower), hi = WholeNumber(n.upper);
        const bool numeric = (n.lower.empty() || lo) && (n.upper.empty() || hi);
        pred = [&, lo, hi, numeric](const Data::Value& v) {
          const bool is_number = v.value && v.value->type == RefValue::Type::kNumber;
          if (numeric) {
            const std::optional<double> x =
                is_number ? std::optional<double>(v.value->number)
                          : (v.value && v.value->type == RefValue::Type::kString
                                 ? WholeNumber(*v.text)
                                 : (v.value ? std::nullopt : WholeNumber(*v.text)));
            return x.has_value() && InRange(n, *x, lo.value_or(0), hi.value_or(0));
          }
          return !is_number && InRange(n, *v.text);
        };
        break;
      }
      default:
        throw std::runtime_error("reference: unhandled leaf " + key);
    }
    // The values to try: all of the field's, except that a value can only
    // match a token pattern if it has a token each position matches, so
    // the values having a token the most selective position matches do.
    const std::vector<const Data::Value*>* candidates =
        name >= 0 ? &d.by_name[static_cast<std::size_t>(name)] : nullptr;
    const bool tokens_only = n.kind == RefKind::kWildcard || n.kind == RefKind::kFuzzy ||
                             n.kind == RefKind::kNear ||
                             (n.kind == RefKind::kTerm && !numeric_term.has_value());
    std::vector<const Data::Value*> gathered;
    if (tokens_only && name >= 0) {
      for (Position& p : *positions) {
        if (p.exact()) required.push_back(p.id());
      }
      for (std::int32_t token : required) {
        const auto& list = d.Postings(name, token);
        if (list.size() < candidates->size()) candidates = &list;
      }
      for (Position& p : *positions) {
        if (p.exact()) continue;
        std::vector<std::int32_t> tokens;
        std::size_t total = 0;
        for (std::int32_t t : d.Vocabulary(name)) {
          if (p.Matches(t, d.words)) {
            tokens.push_back(t);
            total += d.Postings(name, t).size();
          }
        }
        if (total >= candidates->size()) continue;
        gathered.clear();
        for (std::int32_t t : tokens) {
          const auto& list = d.Postings(name, t);
          gathered.insert(gathered.end(), list.begin(), list.end());
        }
        candidates = &gathered;
      }
    }
    if (candidates != nullptr) {
      for (const Data::Value* v : *candidates) {
        if (v->name == name && !out[v->event] && pred(*v)) out[v->event] = 1;
      }
    }
  }
  d.leaf_cache.emplace(key, out);
  return out;
}

std::size_t ReferenceEvaluator::MaxExpansion(const RefNode& n) {
  std::size_t most = 0;
  for (const RefNode& c : n.children) most = std::max(most, MaxExpansion(c));
  if (n.kind != RefKind::kWildcard && n.kind != RefKind::kFuzzy) return most;
  Data& d = *d_;
  auto name = d.name_ids.find(n.field.empty() ? "message" : n.field);
  if (name == d.name_ids.end()) return most;
  if (IsKeywordField(n.field)) {
    // Distinct whole values per day that the leaf matches.
    std::map<std::int64_t, std::set<std::string>> by_day;
    KeywordMatcher matches(n);
    for (const Data::Value* v : d.by_name[static_cast<std::size_t>(name->second)]) {
      if ((v->value && v->value->type == RefValue::Type::kNumber) || !matches(v->value, *v->text)) {
        continue;
      }
      by_day[d.events[v->event].source->ts_ms / 86'400'000].insert(*v->text);
    }
    for (const auto& [day, texts] : by_day) most = std::max(most, texts.size());
    return most;
  }
  std::vector<bool> expanded;
  std::vector<Position> pattern = TokenPattern(
      n, [&d](const std::string& t) { return d.Lookup(t); }, &expanded);
  for (std::size_t j = 0; j < pattern.size(); ++j) {
    if (!expanded[j]) continue;
    for (const auto& [day, ids] : d.DayTokens(name->second)) {
      const auto matching = std::count_if(
          ids.begin(), ids.end(), [&](std::int32_t id) { return pattern[j].Matches(id, d.words); });
      most = std::max(most, static_cast<std::size_t>(matching));
    }
  }
  return most;
}

}  // namespace dashcam::testing
