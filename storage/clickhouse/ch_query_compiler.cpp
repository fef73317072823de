#include "storage/clickhouse/ch_query_compiler.h"

#include <charconv>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <re2/re2.h>

#include "storage/attrs_codec.h"
#include "storage/clickhouse/ch_literal.h"
#include "storage/clickhouse/ch_row.h"
#include "storage/text_tokenizer.h"
#include "storage/time_format.h"
#include "storage/token_pattern.h"

namespace dashcam::storage::clickhouse {
namespace {

using query::Node;
using query::NodeKind;

constexpr const char* kNothing = "0";

std::string QuoteMeta(std::string_view s) {
  return RE2::QuoteMeta(re2::StringPiece(s.data(), s.size()));
}

bool ParseDouble(const std::string& text, double& out) {
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size();
}

// Where a text leaf looks: the message's token column, or a field's
// segments of `ftokens` with each token prefixed by the field's name.
struct TokenColumn {
  std::string column;  // "tokens" or "ftokens"
  std::string prefix;  // "" or ChTokenName(field) + 0x1F
};

TokenColumn TokensOf(const std::string& field) {
  if (query::IsMessageField(field)) return {"tokens", ""};
  return {"ftokens", ChTokenName(field) + kChNameMark};
}

// "arrayExists((n, v) -> n = 'F' AND <cond>, names, values)": some value of
// field F in that pair of arrays meets `cond` (written over `v`).
std::string AnyValue(const std::string& field, const std::string& cond, const char* names,
                     const char* values) {
  return fmt::format("arrayExists((n, v) -> n = {} AND ({}), {}, {})", ChString(field), cond, names,
                     values);
}

std::string AnyString(const std::string& field, const std::string& cond) {
  return AnyValue(field, cond, "str_names", "str_values");
}

// True when `pattern` ends inside a \Q...\E quote (RE2 lets \Q run to the
// end), where a `)` appended would be quoted too.
bool EndsInQuote(std::string_view pattern) {
  bool quoted = false;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '\\' || i + 1 == pattern.size()) continue;
    const char next = pattern[i + 1];
    if (!quoted && next == 'Q') quoted = true;
    if (quoted && next == 'E') quoted = false;
    ++i;  // an escape: the next character is not special
  }
  return quoted;
}

// A user's RE2 pattern as matched by match(): wrapped so that `.` keeps
// RE2's default of not matching a newline (ClickHouse turns that on), which
// also makes a leading (?i) work on 18.16.
std::string RegexLiteral(const std::string& pattern) {
  return ChString("(?-s:" + pattern + (EndsInQuote(pattern) ? "\\E)" : ")"));
}

// A wildcard pattern as regex source: `*` and `?` become `star` and `one`,
// every other character itself.
std::string PatternRegex(std::string_view pattern, const char* star, const char* one) {
  std::string re, literal;
  auto flush = [&] {
    re += QuoteMeta(literal);
    literal.clear();
  };
  for (char c : pattern) {
    if (c == '*' || c == '?') {
      flush();
      re += c == '*' ? star : one;
    } else {
      literal += c;
    }
  }
  flush();
  return re;
}

// A token pattern over one token of a token column: never past a space.
std::string TokenPatternRegex(std::string_view pattern) {
  return PatternRegex(pattern, "[^ ]*", "[^ ]");
}

// A keyword wildcard over a whole value: `*` any run of code points
// (newlines included), `?` one; no case folding.
std::string WholeValuePatternRegex(std::string_view pattern) {
  return "^" + PatternRegex(pattern, "(?s:.)*", "(?s:.)") + "$";
}

// The number a term's text stands for (it also matches numeric values),
// or nullopt for text that is not a number.
std::optional<double> NumberOf(const std::string& text) {
  double number = 0;
  const auto canonical = CanonicalNumberText(text);
  if (!canonical || !ParseDouble(*canonical, number)) return std::nullopt;
  return number;
}

// A term that matches exactly where one token of a token column is
// `token` (Compiler::Term's position() of " token "): a one-token, not
// prefix term on text whose field is the message or whose text is not a
// number (a number also matches numeric values). Nullopt for any other node.
std::optional<std::pair<std::string, std::string>> ColumnToken(const Node& n) {
  const query::Term& t = n.term;
  if (n.kind != NodeKind::kTerm || t.prefix || t.field == query::kIdField ||
      IsKeywordField(t.field)) {
    return std::nullopt;
  }
  std::vector<std::string> tokens = TextTokenizer::TokenizeToVector(t.text);
  if (tokens.size() != 1 || (!query::IsMessageField(t.field) && NumberOf(t.text))) {
    return std::nullopt;
  }
  TokenColumn col = TokensOf(t.field);
  return std::make_pair(std::move(col.column), col.prefix + tokens.front());
}

// A keyword term that matches exactly the values equal to its text (not a
// prefix, not a number): Compiler::KeywordTerm's `v = text`.
bool IsPlainKeywordTerm(const Node& n) {
  return n.kind == NodeKind::kTerm && IsKeywordField(n.term.field) && !n.term.prefix &&
         !NumberOf(n.term.text);
}

// The values as string literals, comma-separated: for IN (...) and [...].
std::string ChStringList(const std::vector<std::string>& values) {
  std::string list;
  for (const std::string& v : values) list += (list.empty() ? "" : ", ") + ChString(v);
  return list;
}

class Compiler {
 public:
  explicit Compiler(const FuzzyExpander& fuzzy) : fuzzy_(fuzzy) {}
  Result<std::string> Compile(const Node& n);

 private:
  Result<std::string> Bool(const Node& n, const char* op);
  Result<std::string> Or(const Node& n);
  std::string Term(const Node& n);
  std::string KeywordTerm(const Node& n);
  std::string Wildcard(const Node& n);
  std::string Regex(const Node& n);
  Result<std::string> Range(const Node& n);
  std::string Exists(const Node& n);
  Result<std::string> Fuzzy(const Node& n);
  std::string Near(const Node& n);

  const FuzzyExpander& fuzzy_;
};

Result<std::string> Compiler::Compile(const Node& n) {
  switch (n.kind) {
    case NodeKind::kMatchAll:
      return std::string("1");
    case NodeKind::kAnd:
      return Bool(n, " AND ");
    case NodeKind::kOr:
      return Or(n);
    case NodeKind::kNot: {
      auto child = Compile(n.children.at(0));
      if (!child.ok()) return child.status();
      return "NOT (" + *child + ")";
    }
    case NodeKind::kTerm:
      return IsKeywordField(n.term.field) ? KeywordTerm(n) : Term(n);
    case NodeKind::kWildcard:
      return Wildcard(n);
    case NodeKind::kRegex:
      return Regex(n);
    case NodeKind::kRange:
      return Range(n);
    case NodeKind::kExists:
      return Exists(n);
    case NodeKind::kNear:
      if (!query::IsMessageField(n.term.field)) {  // as the SQLite compiler
        return Status::InvalidArgument("proximity (\"a b\"~N) is supported on the message only");
      }
      return Near(n);
    case NodeKind::kFuzzy:
      return Fuzzy(n);
  }
  return Status::Internal("unknown query node");
}

Result<std::string> Compiler::Bool(const Node& n, const char* op) {
  std::string e = "(";
  for (std::size_t i = 0; i < n.children.size(); ++i) {
    auto child = Compile(n.children[i]);
    if (!child.ok()) return child.status();
    e += (i ? op : "") + ("(" + *child + ")");
  }
  return e + ")";
}

// The OR's one-token terms on one token column are one set lookup per row,
// and so are its plain terms on one keyword field: ClickHouse 18.16 takes
// time quadratic in a long OR of position() calls (1 024 terms over 10
// events: 23 s), against ~50 ms for a set of 4 096 over 100 000 rows.
Result<std::string> Compiler::Or(const Node& n) {
  std::map<std::string, std::vector<std::string>> column_tokens, keyword_values;
  std::vector<std::string> clauses;
  for (const Node& c : n.children) {
    if (auto token = ColumnToken(c)) {
      column_tokens[token->first].push_back(std::move(token->second));
    } else if (IsPlainKeywordTerm(c)) {
      keyword_values[c.term.field].push_back(c.term.text);
    } else {
      auto child = Compile(c);
      if (!child.ok()) return child.status();
      clauses.push_back(std::move(*child));
    }
  }
  for (const auto& [column, tokens] : column_tokens) {
    clauses.push_back(fmt::format("arrayExists(x -> x IN ({}), splitByChar(' ', {}))",
                                  ChStringList(tokens), column));
  }
  for (const auto& [field, values] : keyword_values) {
    clauses.push_back(AnyString(field, "v IN (" + ChStringList(values) + ")"));
  }
  std::string e = "(";
  for (std::size_t i = 0; i < clauses.size(); ++i) e += (i ? " OR (" : "(") + clauses[i] + ")";
  return e + ")";
}

std::string Compiler::Term(const Node& n) {
  const query::Term& t = n.term;
  if (t.field == query::kIdField) return "id = " + ChString(t.text);
  const TokenColumn col = TokensOf(t.field);
  std::string needle = " ";
  const std::vector<std::string> tokens = TextTokenizer::TokenizeToVector(t.text);
  for (const std::string& token : tokens) needle += col.prefix + token + " ";
  std::string e = kNothing;
  if (!tokens.empty()) {
    if (t.prefix) needle.pop_back();
    e = fmt::format("position({}, {}) > 0", col.column, ChString(needle));
  }
  if (query::IsMessageField(t.field) || t.prefix) return e;
  if (const auto number = NumberOf(t.text)) {
    e = fmt::format("({}) OR {}", e,
                    AnyValue(t.field, "v = " + ChNumber(*number), "num_names", "num_values"));
  }
  return e;
}

std::string Compiler::KeywordTerm(const Node& n) {
  const query::Term& t = n.term;
  std::string e = t.prefix ? AnyString(t.field, fmt::format("substring(v, 1, {}) = {}",
                                                            t.text.size(), ChString(t.text)))
                           : AnyString(t.field, "v = " + ChString(t.text));
  if (t.prefix) return e;
  if (const auto number = NumberOf(t.text)) {
    e += " OR " + AnyValue(t.field, "v = " + ChNumber(*number), "num_names", "num_values");
  }
  return e;
}

std::string Compiler::Wildcard(const Node& n) {
  const query::Term& t = n.term;
  if (IsKeywordField(t.field)) {
    return AnyString(t.field, "match(v, " + RegexLiteral(WholeValuePatternRegex(t.text)) + ")");
  }
  const std::vector<PatternPosition> positions = SplitWildcardPattern(t.text);
  if (positions.empty()) return kNothing;
  const TokenColumn col = TokensOf(t.field);
  std::string re = " ";
  for (const PatternPosition& p : positions) {
    re +=
        QuoteMeta(col.prefix) + (p.wildcard ? TokenPatternRegex(p.text) : QuoteMeta(p.text)) + " ";
  }
  return fmt::format("match({}, {})", col.column, RegexLiteral(re));
}

std::string Compiler::Regex(const Node& n) {
  const query::Term& t = n.term;
  const std::string re = RegexLiteral(t.text);
  if (query::IsMessageField(t.field)) return fmt::format("(has_msg AND match(message, {}))", re);
  if (t.field == query::kIndexField) return fmt::format("(idx != '' AND match(idx, {}))", re);
  return AnyString(t.field, "match(v, " + re + ")");
}

Result<std::string> Compiler::Range(const Node& n) {
  const query::Range& r = n.range;
  if (r.field == query::kTimestampField) {
    std::string e = "1";
    std::int64_t bound = 0;
    auto parse = [&](const std::string& text) {
      const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), bound);
      return ec == std::errc() && end == text.data() + text.size();
    };
    if (!r.lower.empty()) {
      if (!parse(r.lower)) return Status::InvalidArgument("bad @timestamp range bound " + r.lower);
      e += fmt::format(" AND {} {} {}", kChTimeMs, r.include_lower ? ">=" : ">", bound);
    }
    if (!r.upper.empty()) {
      if (!parse(r.upper)) return Status::InvalidArgument("bad @timestamp range bound " + r.upper);
      e += fmt::format(" AND {} {} {}", kChTimeMs, r.include_upper ? "<=" : "<", bound);
    }
    // ClickHouse compares the unsigned time with a negative bound exactly.
    return "(" + e + ")";
  }
  // The message's values are in the arrays under a name of their own.
  const std::string field = query::IsMessageField(r.field) ? kChMessageName : r.field;
  double lo = 0, hi = 0;
  const bool numeric = (r.lower.empty() || ParseDouble(r.lower, lo)) &&
                       (r.upper.empty() || ParseDouble(r.upper, hi));
  std::string cond = "1";
  if (!r.lower.empty()) {
    cond += fmt::format(" AND v {} {}", r.include_lower ? ">=" : ">",
                        numeric ? ChNumber(lo) : ChString(r.lower));
  }
  if (!r.upper.empty()) {
    cond += fmt::format(" AND v {} {}", r.include_upper ? "<=" : "<",
                        numeric ? ChNumber(hi) : ChString(r.upper));
  }
  if (!numeric) return AnyString(field, cond);
  return fmt::format("({} OR {})", AnyValue(field, cond, "num_names", "num_values"),
                     AnyValue(field, cond, "snum_names", "snum_values"));
}

std::string Compiler::Exists(const Node& n) {
  const std::string& f = n.term.field;
  if (query::IsMessageField(f)) return "has_msg = 1";
  if (f == query::kIndexField) return "idx != ''";
  if (f == query::kTimestampField || f == query::kIdField) return "1";
  const std::string object = ChString(f + ".");
  return fmt::format(
      "(has(str_names, {0}) OR has(num_names, {0}) OR "
      "arrayExists(n -> substring(n, 1, {1}) = {2}, str_names) OR "
      "arrayExists(n -> substring(n, 1, {1}) = {2}, num_names))",
      ChString(f), f.size() + 1, object);
}

// The tokens (or keyword values) the expander finds, matched exactly: one
// regex alternation over the token column, or has() over the values.
Result<std::string> Compiler::Fuzzy(const Node& n) {
  const query::Term& t = n.term;
  std::string word = t.text;
  if (!IsKeywordField(t.field)) {
    const std::vector<std::string> tokens = TextTokenizer::TokenizeToVector(t.text);
    if (tokens.size() != 1) {
      return Status::InvalidArgument(fmt::format("fuzzy `{}` at byte {} is not a single word",
                                                 query::DebugString(n), n.position));
    }
    word = tokens.front();
  }
  if (!fuzzy_) {
    return Status::InvalidArgument(
        fmt::format("fuzzy `{}` at byte {} cannot be compiled here", t.text, n.position));
  }
  auto matches = fuzzy_(n, word);
  if (!matches.ok()) return matches.status();
  if (matches->empty()) return std::string(kNothing);
  if (IsKeywordField(t.field))
    return AnyString(t.field, "has([" + ChStringList(*matches) + "], v)");
  std::string list;
  const TokenColumn col = TokensOf(t.field);
  for (const std::string& token : *matches) list += (list.empty() ? "" : "|") + QuoteMeta(token);
  return fmt::format("match({}, {})", col.column,
                     RegexLiteral(" " + QuoteMeta(col.prefix) + "(?:" + list + ") "));
}

// The message's tokens as an array: "", t1, t2, ..., "" (positions offset
// by one, which differences do not see). ClickHouse computes the repeated
// expression once per block.
constexpr const char* kTokenArray = "splitByChar(' ', tokens)";

// The positions in kTokenArray where `phrase` starts (1-based). Token k
// of the phrase is compared with the array shifted by k, all passed as
// arrays of the lambda: a lambda that captured the array instead would
// copy it once per element (quadratic per row; 9x slower on 40-token rows).
std::string PhraseStarts(const std::vector<std::string>& phrase) {
  std::string params = "j", arrays = fmt::format("arrayEnumerate({})", kTokenArray), cond;
  for (std::size_t k = 0; k < phrase.size(); ++k) {
    params += fmt::format(", a{}", k);
    arrays += k == 0 ? fmt::format(", {}", kTokenArray)
                     : fmt::format(", arrayResize(arraySlice({0}, {1}), length({0}), '')",
                                   kTokenArray, k + 1);
    cond += fmt::format("{}a{} = {}", k ? " AND " : "", k, ChString(phrase[k]));
  }
  return fmt::format("arrayFilter(({}) -> {}, {})", params, cond, arrays);
}

// query_ast.h's rule, max_j(s_j) - (s_i + n_i) <= N for all i, read as:
// some phrase m has a start s_m such that every other phrase i starts at
// some s_i with s_i <= s_m and s_i + n_i + N >= s_m (s_m is then the
// latest start). Each phrase is also asked with position(), which makes
// it a condition ClickHouse may move to PREWHERE; 18.16's AND does not
// short-circuit otherwise, so the arrays are built for every row read.
std::string Compiler::Near(const Node& n) {
  std::vector<std::vector<std::string>> phrases;
  for (std::string_view word : query::NearWords(n.term.text)) {
    auto tokens = TextTokenizer::TokenizeToVector(word);
    if (!tokens.empty()) phrases.push_back(std::move(tokens));
  }
  if (phrases.empty()) return kNothing;
  std::string present;
  for (const auto& phrase : phrases) {
    std::string needle = " ";
    for (const std::string& token : phrase) needle += token + " ";
    present +=
        fmt::format("{}position(tokens, {}) > 0", present.empty() ? "" : " AND ", ChString(needle));
  }
  if (phrases.size() == 1) return "(" + present + ")";
  std::string near;
  for (std::size_t m = 0; m < phrases.size(); ++m) {
    std::string others;
    for (std::size_t i = 0; i < phrases.size(); ++i) {
      if (i == m) continue;
      others += fmt::format("{}arrayExists(y -> y <= x AND y + {} >= x, {})",
                            others.empty() ? "" : " AND ", phrases[i].size() + n.term.distance,
                            PhraseStarts(phrases[i]));
    }
    near += fmt::format("{}arrayExists(x -> {}, {})", m ? " OR " : "", others,
                        PhraseStarts(phrases[m]));
  }
  return fmt::format("({} AND ({}))", present, near);
}

}  // namespace

Result<std::string> CompileChQuery(const query::Node& root, const FuzzyExpander& fuzzy) {
  return Compiler(fuzzy).Compile(root);
}

}  // namespace dashcam::storage::clickhouse
