// The compiler works with three views of a node, each computed once:
//   Exact       an FTS5 expression matching exactly the node's events;
//   Candidates  an FTS5 expression matching at least the node's events
//               (Exact when there is one);
//   Condition   an SQL condition on `e` that is exactly the node.
// The root's driver is its Exact form, else its Candidates (for an AND root,
// per conjunct), and `where` holds the Conditions the driver does not imply.
#include "storage/fts_query_compiler.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <unordered_map>
#include <utility>

#include <fmt/format.h>
#include <re2/re2.h>

#include "storage/attrs_codec.h"
#include "storage/number_ranges.h"
#include "storage/partition.h"
#include "storage/record.h"
#include "storage/regex_prefilter.h"
#include "storage/sqlite_db.h"
#include "storage/text_tokenizer.h"
#include "storage/token_pattern.h"

namespace dashcam::storage {
namespace {

using query::Node;
using query::NodeKind;
using Fts = std::optional<std::string>;

// Wildcard patterns of several positions are compiled exactly as an OR of
// phrases when the expansions multiply to at most this many.
constexpr std::size_t kMaxPhraseProduct = 64;

// A prefix of a message token could also be the start of a field term
// (`lo*` and `log.level` 0x1F ...) in a two-column index: message prefixes
// name their column. (In one column, field terms are spelled apart:
// attrs_codec.h; the filter names the only column.) An index without
// positions (always one column) takes no column filter: `positions` false.
std::string MessagePrefix(std::string phrase, bool positions) {
  return (positions ? "message : " : "") + phrase + " *";
}

// `e` (a field term's string form), or also the number the term's text
// spells, when it spells one.
std::string OrNumber(const query::Term& t, std::string e) {
  if (t.prefix) return e;
  auto number = CanonicalNumberText(t.text);
  if (!number) return e;
  return "(" + e + " OR " + QuoteFtsString(EncodeFieldNumber(t.field, *number)) + ")";
}

// `positions`: the index has them (rowid_layout.h); without, `t` must be
// a single token (NeedsPositions).
std::string TermExpression(const query::Term& t, bool positions) {
  if (query::IsMessageField(t.field)) {
    std::string e = QuoteFtsString(EncodeMessagePhrase(t.text));
    return t.prefix ? MessagePrefix(e, positions) : e;
  }
  std::string e = QuoteFtsString(EncodeFieldPhrase(t.field, t.text));
  if (t.prefix) return e + " *";
  if (!TextTokenizer::HasTokens(t.text)) {
    if (auto number = CanonicalNumberText(t.text))
      return QuoteFtsString(EncodeFieldNumber(t.field, *number));
    return e;
  }
  return OrNumber(t, std::move(e));
}

// Words of a proximity phrase, each a message phrase (query_ast.h, kNear).
std::string NearExpression(const query::Term& t) {
  std::vector<std::string> phrases;
  for (std::string_view word : query::NearWords(t.text)) {
    if (TextTokenizer::HasTokens(word))
      phrases.push_back(QuoteFtsString(EncodeMessagePhrase(word)));
  }
  if (phrases.empty()) return NeverMatchingFts();
  if (phrases.size() == 1) return phrases.front();
  std::string e = "NEAR(";
  for (std::size_t i = 0; i < phrases.size(); ++i) e += (i ? " " : "") + phrases[i];
  return e + ", " + std::to_string(t.distance) + ")";
}

// A phrase of index terms given as they are: "t1" + "t2" [*]; in an index
// without positions, where FTS5 takes no phrase, what holds them all:
// "t1" AND "t2" [*] (candidates, never exact).
std::string RawPhrase(const std::vector<std::string>& terms, bool last_is_prefix, bool positions) {
  std::string e;
  for (const std::string& t : terms) {
    if (!e.empty()) e += positions ? " + " : " AND ";
    e += QuoteFtsString(EncodeRawTerm(t));
  }
  return last_is_prefix ? e + " *" : e;
}

std::string AnyOf(const std::vector<std::string>& terms) {
  if (terms.empty()) return NeverMatchingFts();
  if (terms.size() == 1) return QuoteFtsString(EncodeRawTerm(terms.front()));
  std::string e = "(";
  for (std::size_t i = 0; i < terms.size(); ++i) {
    e += (i ? " OR " : "") + QuoteFtsString(EncodeRawTerm(terms[i]));
  }
  return e + ")";
}

// "(p1) AND (p2) NOT (n1)": FTS5 needs a positive part to subtract from.
std::string AllOf(const std::vector<std::string>& positive,
                  const std::vector<std::string>& negative) {
  if (positive.size() == 1 && negative.empty()) return positive.front();
  std::string pos;
  for (const std::string& p : positive) pos += (pos.empty() ? "(" : " AND (") + p + ")";
  if (negative.empty()) return pos;
  std::string e = "(" + pos + ")";
  for (const std::string& n : negative) e += " NOT (" + n + ")";
  return e;
}

// Event-key bounds of a range on @timestamp: keys in [lo, hi].
Status TimestampKeyBounds(const query::Range& r, std::int64_t& lo, std::int64_t& hi) {
  auto parse = [](const std::string& text, std::int64_t& out) {
    auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
    return ec == std::errc() && p == text.data() + text.size();
  };
  lo = std::numeric_limits<std::int64_t>::min();
  hi = std::numeric_limits<std::int64_t>::max();
  std::int64_t t = 0;
  if (!r.lower.empty()) {
    if (!parse(r.lower, t)) return Status::InvalidArgument("bad @timestamp range bound " + r.lower);
    t = std::clamp<std::int64_t>(t, kMinEventTime - 1, kMaxEventTime);
    t = std::clamp<std::int64_t>(t + (r.include_lower ? 0 : 1), kMinEventTime, kMaxEventTime);
    lo = FirstKeyAt(t);
  }
  if (!r.upper.empty()) {
    if (!parse(r.upper, t)) return Status::InvalidArgument("bad @timestamp range bound " + r.upper);
    t = std::clamp<std::int64_t>(t, kMinEventTime - 1, kMaxEventTime);
    t = std::clamp<std::int64_t>(t + (r.include_upper ? 1 : 0), kMinEventTime, kMaxEventTime);
    hi = FirstKeyAt(t) - 1;
  }
  return Status::Ok();
}

// How a wildcard, fuzzy or regex leaf runs in one partition.
struct LeafPlan {
  Fts exact;
  Fts candidates;  // when there is no exact form
};

class Compiler {
 public:
  Compiler(TermSource* terms, const CompileOptions& options, CompiledQuery& out)
      : terms_(terms), options_(options), out_(out) {}

  Status Run(const Node& root);

 private:
  Result<Fts> Exact(const Node& n);
  Result<Fts> ExactUncached(const Node& n);
  Result<Fts> Candidates(const Node& n);
  Result<Fts> KeywordExact(const Node& n) {
    auto plan = Plan(n);
    if (!plan.ok()) return plan.status();
    return (*plan)->exact;
  }
  Result<std::string> Condition(const Node& n, bool candidates_driven);
  Result<std::string> LeafCondition(const Node& n, bool candidates_driven);
  Result<const LeafPlan*> Plan(const Node& n);
  Result<LeafPlan> PlanWildcard(const Node& n);
  Result<LeafPlan> PlanFuzzy(const Node& n);
  Result<LeafPlan> PlanKeyword(const Node& n);
  Result<LeafPlan> PlanKeywordTerm(const Node& n);
  Result<std::optional<std::vector<std::string>>> ExpandKeywordPrefix(const query::Term& t);
  Result<std::optional<std::vector<std::string>>> ListTerms(TermRange range);
  Result<LeafPlan> PlanRegex(const Node& n);
  // A keyword field whose older values this partition may hold as text.
  bool Legacy(const std::string& field) const {
    return !ListsField(options_.indexed_keywords, field);
  }
  Result<LeafPlan> PlanRange(const Node& n);
  Result<Fts> RegexLiteralsFts(std::string_view pattern, const std::string& prefix);
  Status ListInnerWords(const LiteralTree& tree, const std::string& prefix);
  Result<Fts> LiteralsFts(const LiteralTree& tree, const std::string& prefix);
  Result<Fts> InnerWordFts(std::string_view literal, const std::string& prefix);
  Result<std::vector<std::string>> Expand(const Node& n, TermRange range);
  Result<std::string> RangeCondition(const query::Range& r);
  Fts HoldsTermOf(const std::string& field) const;
  // Whether HoldsTermOf(field) is every event where the field exists.
  bool TermsTellExistence(const std::string& field) const;
  Result<Fts> ExistsExact(const Node& n);
  std::string IdCondition(const std::string& id);
  std::string RowCheck(const Node& n) {
    return fmt::format("dc_match(dc_source(e.source), dc_name(e.idx), ?{})", Param(&n));
  }
  // The row check of `n`, behind its candidates unless they drive already.
  std::string CheckedLeaf(const Node& n, const Fts& candidates, bool candidates_driven) {
    if (candidates_driven || !candidates) return RowCheck(n);
    std::string in = InFts(*candidates);
    return "(" + in + " AND " + RowCheck(n) + ")";
  }
  // Whether the index holds positions (rowid_layout.h).
  bool has_positions() const { return options_.rowids.positions; }
  // A phrase (a text leaf of several tokens) or proximity leaf on an index
  // without positions: FTS5 finds the events holding every token
  // (TokensAllOf), the row check the rest.
  bool NeedsPositions(const Node& n) const;
  Fts TokensAllOf(const Node& n) const;
  // A field's text value as a phrase of its field terms, or all of them
  // without positions; `prefix`: the last is a prefix.
  std::string FieldText(const std::string& field, std::string_view text, bool prefix) const;
  // Whether the event is among the index's matches of `fts` (rowid_layout.h
  // for their keys), walked in step with the scan (fts_membership.h), where
  // `e.key IN (SELECT ...)` would read every match of the day first.
  std::string InFts(std::string fts);
  int Param(std::variant<std::string, std::int64_t, const query::Node*> v) {
    out_.params.push_back(std::move(v));
    return kFirstWhereParam + static_cast<int>(out_.params.size()) - 1;
  }

  TermSource* terms_;
  const CompileOptions& options_;
  CompiledQuery& out_;
  bool driven_ = false;  // FTS5 picks the rows that the conditions filter
  std::unordered_map<const Node*, Fts> exact_;
  std::unordered_map<const Node*, LeafPlan> plans_;
  // InnerWordFts by (field prefix, word), read ahead by ListInnerWords.
  std::map<std::pair<std::string, std::string>, Fts> inner_words_;
};

// Whether the values of `field` leave index terms of its own (field terms,
// FieldTermPrefix): not the message, the meta fields _id and @timestamp, nor
// a field the index leaves out.
bool HasFieldTerms(const std::string& field) {
  return !query::IsMessageField(field) && field != query::kIdField &&
         field != query::kTimestampField && IsIndexedField(field);
}

// A leaf on a field the index leaves out (IsIndexedField): only reading the
// rows answers it.
bool Unindexed(const query::Term& t) {
  return !query::IsMessageField(t.field) && t.field != query::kIdField && !IsIndexedField(t.field);
}

std::size_t CodePoints(std::string_view s) {
  return static_cast<std::size_t>(std::count_if(
      s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

bool Keyword(const query::Term& t) {
  return IsKeywordField(t.field);
}

// The index-term prefix of a leaf's field ("" for the message).
std::string TermPrefix(const query::Term& t) {
  return query::IsMessageField(t.field) ? std::string() : FieldTermPrefix(t.field);
}

// Accepts a term of the leaf's field and tests its token part.
std::function<bool(std::string_view)> ForField(std::string prefix,
                                               std::function<bool(std::string_view)> token_test) {
  return [prefix = std::move(prefix), test = std::move(token_test)](std::string_view term) {
    if (prefix.empty()) return term.find(kNameSeparator) == std::string_view::npos && test(term);
    return term.starts_with(prefix) && test(term.substr(prefix.size()));
  };
}

// The terms of a leaf's field (`prefix`: ForField's) whose token starts
// with `start` and passes `test`.
TermRange FieldTerms(const std::string& prefix, std::string_view start,
                     std::function<bool(std::string_view)> test) {
  TermRange range;
  range.first = prefix + std::string(start);
  range.limit = PrefixLimit(range.first);
  range.accept = ForField(prefix, std::move(test));
  return range;
}

bool Compiler::NeedsPositions(const Node& n) const {
  if (has_positions()) return false;
  if (n.kind == NodeKind::kNear) return true;
  if (n.kind != NodeKind::kTerm || n.term.field == query::kIdField || Unindexed(n.term) ||
      Keyword(n.term)) {
    return false;
  }
  return TextTokenizer::TokenizeToVector(n.term.text).size() > 1;
}

// Appends the tokens of `text` as single-term expressions, each `encode`d,
// the last a prefix when `prefix`: what an index without positions ANDs for
// a phrase. (No column filter: such an index has one column, and a message
// token never starts like a field term, attrs_codec.h.)
void AppendTokenTerms(std::string_view text, bool prefix,
                      const std::function<std::string(std::string_view)>& encode,
                      std::vector<std::string>& out) {
  const std::vector<std::string> tokens = TextTokenizer::TokenizeToVector(text);
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    out.push_back(QuoteFtsString(encode(tokens[i])) +
                  (prefix && i + 1 == tokens.size() ? " *" : ""));
  }
}

Fts Compiler::TokensAllOf(const Node& n) const {
  std::vector<std::string> parts;
  if (n.kind == NodeKind::kNear) {
    for (std::string_view word : query::NearWords(n.term.text)) {
      AppendTokenTerms(word, false, EncodeMessagePhrase, parts);
    }
  } else if (!query::IsMessageField(n.term.field)) {
    // A number's text is several tokens ("0.6298"), its value one term.
    return OrNumber(n.term, FieldText(n.term.field, n.term.text, n.term.prefix));
  } else {
    AppendTokenTerms(n.term.text, n.term.prefix, EncodeMessagePhrase, parts);
  }
  if (parts.empty()) return NeverMatchingFts();
  return AllOf(parts, {});
}

std::string Compiler::FieldText(const std::string& field, std::string_view text,
                                bool prefix) const {
  if (has_positions()) return QuoteFtsString(EncodeFieldPhrase(field, text)) + (prefix ? " *" : "");
  std::vector<std::string> parts;
  AppendTokenTerms(
      text, prefix, [&field](std::string_view token) { return EncodeFieldPhrase(field, token); },
      parts);
  if (parts.empty()) return NeverMatchingFts();
  return parts.size() == 1 ? parts.front() : "(" + AllOf(parts, {}) + ")";
}

Result<Fts> Compiler::Exact(const Node& n) {
  if (auto it = exact_.find(&n); it != exact_.end()) return it->second;
  auto e = ExactUncached(n);
  if (e.ok()) exact_.emplace(&n, *e);
  return e;
}

Result<Fts> Compiler::ExactUncached(const Node& n) {
  switch (n.kind) {
    case NodeKind::kTerm:
      if (n.term.field == query::kIdField || Unindexed(n.term)) return Fts();
      if (NeedsPositions(n)) return Fts();
      if (!Keyword(n.term)) return Fts(TermExpression(n.term, has_positions()));
      return KeywordExact(n);
    case NodeKind::kNear:
      if (!query::IsMessageField(n.term.field)) {
        return Status::InvalidArgument("proximity (\"a b\"~N) is supported on the message only");
      }
      if (NeedsPositions(n)) return Fts();
      return Fts(NearExpression(n.term));
    case NodeKind::kRegex:
      if (!Keyword(n.term)) return Fts();  // the row check, with candidates
      return KeywordExact(n);
    case NodeKind::kWildcard:
    case NodeKind::kFuzzy:
    case NodeKind::kRange: {
      if (n.kind != NodeKind::kRange && Unindexed(n.term)) return Fts();
      auto plan = Plan(n);
      if (!plan.ok()) return plan.status();
      return (*plan)->exact;
    }
    case NodeKind::kExists:
      return ExistsExact(n);
    case NodeKind::kAnd:
    case NodeKind::kOr: {
      std::vector<std::string> positive, negative;
      for (const Node& c : n.children) {
        const bool negated = n.kind == NodeKind::kAnd && c.kind == NodeKind::kNot;
        auto e = Exact(negated ? c.children[0] : c);
        if (!e.ok()) return e.status();
        if (!*e) return Fts();
        (negated ? negative : positive).push_back(std::move(**e));
      }
      if (positive.empty()) return Fts();
      if (n.kind == NodeKind::kAnd) return Fts(AllOf(positive, negative));
      std::string any;
      for (const std::string& p : positive) any += (any.empty() ? "(" : " OR (") + p + ")";
      return Fts(any);
    }
    default:
      return Fts();
  }
}

Result<Fts> Compiler::Candidates(const Node& n) {
  auto exact = Exact(n);
  if (!exact.ok() || *exact) return exact;
  switch (n.kind) {
    case NodeKind::kNear:
      return TokensAllOf(n);
    case NodeKind::kTerm:
      if (NeedsPositions(n)) return TokensAllOf(n);
      [[fallthrough]];
    case NodeKind::kFuzzy:
      if (!Keyword(n.term)) return Fts();
      [[fallthrough]];
    case NodeKind::kWildcard:
    case NodeKind::kRegex:
    case NodeKind::kRange: {
      if (n.kind != NodeKind::kRange && Unindexed(n.term)) return Fts();
      auto plan = Plan(n);
      if (!plan.ok()) return plan.status();
      return (*plan)->candidates;
    }
    case NodeKind::kAnd: {
      std::vector<std::string> positive, negative;
      for (const Node& c : n.children) {
        if (c.kind == NodeKind::kNot) {
          auto e = Exact(c.children[0]);
          if (!e.ok()) return e.status();
          if (*e) negative.push_back(std::move(**e));
          continue;
        }
        auto e = Candidates(c);
        if (!e.ok()) return e.status();
        if (*e) positive.push_back(std::move(**e));
      }
      if (positive.empty()) return Fts();
      return Fts(AllOf(positive, negative));
    }
    case NodeKind::kOr: {
      std::string any;
      for (const Node& c : n.children) {
        auto e = Candidates(c);
        if (!e.ok() || !*e) return e;
        any += (any.empty() ? "(" : " OR (") + **e + ")";
      }
      return Fts(any);
    }
    default:
      return Fts();
  }
}

// `candidates_driven`: the node's own Candidates already drive the query,
// so a leaf need not repeat them.
Result<std::string> Compiler::Condition(const Node& n, bool candidates_driven) {
  auto exact = Exact(n);
  if (!exact.ok()) return exact.status();
  if (*exact) return InFts(std::move(**exact));
  switch (n.kind) {
    case NodeKind::kMatchAll:
      return std::string("1");
    case NodeKind::kNot: {
      const Node& child = n.children[0];
      if (child.kind == NodeKind::kExists && !driven_) {
        if (auto held = HoldsTermOf(child.term.field)) {
          // An event with an index term of the field has the field: only
          // the others are read, if any can have it. (This pays when every
          // event in the range is scanned, not when FTS5 already picked a
          // few.)
          std::string lacking = "NOT " + InFts(std::move(*held));
          if (TermsTellExistence(child.term.field)) return lacking;
          return lacking + " AND NOT (" + RowCheck(child) + ")";
        }
      }
      auto c = Condition(child, false);
      if (!c.ok()) return c;
      return "NOT (" + *c + ")";
    }
    case NodeKind::kAnd:
    case NodeKind::kOr: {
      std::string s;
      for (const Node& c : n.children) {
        auto sub = Condition(c, false);
        if (!sub.ok()) return sub;
        if (!s.empty()) s += n.kind == NodeKind::kAnd ? " AND " : " OR ";
        s += "(" + *sub + ")";
      }
      return s;
    }
    default:
      return LeafCondition(n, candidates_driven);
  }
}

Result<std::string> Compiler::LeafCondition(const Node& n, bool candidates_driven) {
  switch (n.kind) {
    case NodeKind::kNear:  // without positions
      return CheckedLeaf(n, TokensAllOf(n), candidates_driven);
    case NodeKind::kTerm:  // _id, unindexed fields, phrases without positions
                           // and inexact keyword terms
      if (NeedsPositions(n)) return CheckedLeaf(n, TokensAllOf(n), candidates_driven);
      if (!Keyword(n.term)) return Unindexed(n.term) ? RowCheck(n) : IdCondition(n.term.text);
      [[fallthrough]];
    case NodeKind::kFuzzy:  // inexact only on keyword fields
    case NodeKind::kWildcard:
    case NodeKind::kRegex: {
      if (Unindexed(n.term)) return RowCheck(n);
      auto plan = Plan(n);
      if (!plan.ok()) return plan.status();
      return CheckedLeaf(n, (*plan)->candidates, candidates_driven);
    }
    case NodeKind::kRange: {
      if (n.range.field == query::kTimestampField) return RangeCondition(n.range);
      auto plan = Plan(n);
      if (!plan.ok()) return plan.status();
      return CheckedLeaf(n, (*plan)->candidates, candidates_driven);
    }
    default:
      return RowCheck(n);
  }
}

// Events holding some index term of `field` or of a field under it (every
// term of a field's values starts with FieldTermPrefix; no message token
// holds a '.'): events where the field exists (query_ast.h's kExists).
// Raw field terms, as the object's prefix (`gpu.`) holds no 0x1F to tell
// the tokenizer it is a field's (attrs_codec.h).
// All of them when TermsTellExistence, else some (a string without tokens
// had no term, and unindexed fields none). Nullopt for fields whose values
// have no such terms.
Fts Compiler::HoldsTermOf(const std::string& field) const {
  if (!HasFieldTerms(field)) return std::nullopt;
  std::string object = FieldTermPrefix(field);
  object.back() = '.';
  return "(" + QuoteFtsString(EncodeRawFieldTerm(FieldTermPrefix(field))) + " * OR " +
         QuoteFtsString(EncodeRawFieldTerm(object)) + " *)";
}

bool Compiler::TermsTellExistence(const std::string& field) const {
  // _index exists when the event was sent to one, whatever its fields hold.
  return options_.field_terms && field != query::kIndexField && HasFieldTerms(field) &&
         IndexesEverythingUnder(field);
}

// Exists from the index where the terms tell it and cost less than rows
// for how the caller reads (ExistsIndexShare): a rare field's few events,
// or every event of a field a histogram counts over the day. A common
// field is found sooner by reading rows when the caller stops early (a
// search at its first page and count cap), while FTS5 would merge every
// doclist of the field.
Result<Fts> Compiler::ExistsExact(const Node& n) {
  if (terms_ == nullptr || !TermsTellExistence(n.term.field)) return Fts();
  auto events = terms_->Events(options_.from, options_.to);
  if (!events.ok()) return events.status();
  if (!*events) return Fts();
  const double below =
      ExistsIndexShare(static_cast<double>((*events)->all),
                       static_cast<double>((*events)->in_range), options_.stops_after);
  if (below <= 0) return Fts();
  if (below < 1) {
    auto rare = terms_->ShareBelow(n, below);
    if (!rare.ok()) return rare.status();
    if (!*rare || !**rare) return Fts();
  }
  return HoldsTermOf(n.term.field);
}

std::string Compiler::InFts(std::string fts) {
  const RowidLayout& rowids = options_.rowids;
  std::string key = "fts.rowid", join, below = "?2", above = "?2";
  if (rowids.dense()) {
    const DocnoKeySql docno = KeyOfDocno(rowids, rowids.late);
    key = docno.key;
    join = docno.join;
    below = DocnoBoundSql(rowids, "?2", true) + " - 1";
    above = DocnoBoundSql(rowids, "?2", false);
  }
  const std::string all =
      fmt::format("SELECT {} FROM fts{}{} WHERE fts MATCH ?1", key, join.empty() ? "" : " ", join);
  std::string desc, asc;
  // Walked in step only where rowid order is key order.
  if (!rowids.late) {
    desc = fmt::format("{} AND fts.rowid <= {} ORDER BY fts.rowid DESC", all, below);
    asc = fmt::format("{} AND fts.rowid >= {} ORDER BY fts.rowid", all, above);
  }
  if (HasPrefixTerm(fts)) out_.merges_prefix = true;
  const int param = Param(std::move(fts));
  return fmt::format("dc_fts_has(e.key, ?{}, {}, {}, {})", param, SqlStringLiteral(desc),
                     SqlStringLiteral(asc), SqlStringLiteral(all));
}

Result<std::string> Compiler::RangeCondition(const query::Range& r) {
  std::int64_t lo = 0, hi = 0;
  if (auto s = TimestampKeyBounds(r, lo, hi); !s.ok()) return s;
  // True of every event the query runs on (CompileOptions::from, to).
  if (lo <= FirstKeyAt(options_.from) && hi >= FirstKeyAt(options_.to) - 1) return std::string("1");
  return fmt::format("e.key BETWEEN ?{} AND ?{}", Param(lo), Param(hi));
}

// An event's id is its doc_id, else its key in FormatEventKey form. (The
// sub-select uses the doc_id index, and unlike `e.doc_id = ?` is never NULL,
// which NOT would keep NULL.)
std::string Compiler::IdCondition(const std::string& id) {
  std::string sql = fmt::format("e.key IN (SELECT key FROM events WHERE doc_id = ?{})", Param(id));
  if (const auto key = ParseEventKey(id)) {
    sql = fmt::format("({} OR (e.key = ?{} AND e.doc_id IS NULL))", sql,
                      Param(static_cast<std::int64_t>(*key)));
  }
  return sql;
}

Result<const LeafPlan*> Compiler::Plan(const Node& n) {
  if (auto it = plans_.find(&n); it != plans_.end()) return &it->second;
  Result<LeafPlan> plan = n.kind == NodeKind::kRange      ? PlanRange(n)
                          : Keyword(n.term)               ? PlanKeyword(n)
                          : n.kind == NodeKind::kWildcard ? PlanWildcard(n)
                          : n.kind == NodeKind::kFuzzy    ? PlanFuzzy(n)
                                                          : PlanRegex(n);
  if (!plan.ok()) return plan.status();
  return &plans_.emplace(&n, std::move(*plan)).first->second;
}

Result<std::vector<std::string>> Compiler::Expand(const Node& n, TermRange range) {
  if (terms_ == nullptr) return std::vector<std::string>();
  auto terms = ListTerms(std::move(range));
  if (!terms.ok()) return terms.status();
  if (!*terms) {
    return Status::InvalidArgument(fmt::format(
        "`{}` at byte {} matches more than {} distinct terms in one day's events; make it more "
        "specific",
        query::DebugString(n), n.position, options_.max_expansions));
  }
  return std::move(**terms);
}

// A range on a field whose numbers the partition records: its candidates
// are the numbers whose text starts with a prefix of the plan
// (number_ranges.h), exactly its matches when the plan says so, or no event
// at all; else every event is read.
Result<LeafPlan> Compiler::PlanRange(const Node& n) {
  const query::Range& r = n.range;
  LeafPlan plan;
  const bool by_value = query::IsMessageField(r.field) || r.field == query::kIdField ||
                        r.field == query::kIndexField || r.field == query::kTimestampField ||
                        !IsIndexedField(r.field);
  if (terms_ == nullptr || by_value) return plan;
  auto lookup = terms_->Numbers(r.field);
  if (!lookup.ok()) return lookup.status();
  if (!lookup->recorded) return plan;
  const NumberRangePlan numbers = PlanNumberRange(r, lookup->numbers);
  if (numbers.kind == NumberRangePlan::Kind::kNone) {
    plan.exact = NeverMatchingFts();
  } else if (numbers.kind == NumberRangePlan::Kind::kPrefixes) {
    const std::string field = FieldTermPrefix(r.field) + kNumberMark;
    std::string any;
    for (const std::string& p : numbers.prefixes) {
      any += (any.empty() ? "(" : " OR ") + QuoteFtsString(EncodeRawTerm(field + p)) + " *";
    }
    (numbers.exact ? plan.exact : plan.candidates) = any + ")";
  }
  return plan;
}

Result<LeafPlan> Compiler::PlanWildcard(const Node& n) {
  const std::vector<PatternPosition> positions = SplitWildcardPattern(n.term.text);
  const std::string prefix = TermPrefix(n.term);
  // Per position: the index terms it may be (literal: one; `*` alone: unknown).
  std::vector<std::optional<std::vector<std::string>>> choices;
  for (const PatternPosition& p : positions) {
    if (!p.wildcard) {
      choices.push_back(std::vector<std::string>{prefix + p.text});
      continue;
    }
    if (p.any()) {
      // Any token: known when the field has few (host.name), else left to
      // the row check (the message's vocabulary is large).
      auto terms = ListTerms(FieldTerms(prefix, "", [](std::string_view) { return true; }));
      if (!terms.ok()) return terms.status();
      choices.push_back(std::move(*terms));
      continue;
    }
    auto terms = Expand(n, FieldTerms(prefix, p.literal_prefix(), [&p](std::string_view token) {
                          return MatchTokenPattern(p.text, token);
                        }));
    if (!terms.ok()) return terms.status();
    choices.push_back(std::move(*terms));
  }
  LeafPlan plan;
  std::size_t product = 1;
  bool known = !choices.empty();
  for (const auto& c : choices) {
    if (!c) known = false;
    if (c) product = std::min(product * c->size(), kMaxPhraseProduct + 1);
  }
  if (known && product == 0) {
    plan.exact = NeverMatchingFts();
  } else if (known && choices.size() == 1) {
    plan.exact = AnyOf(*choices.front());
  } else if (known && product <= kMaxPhraseProduct && has_positions()) {
    // Every combination as a phrase.
    std::vector<std::vector<std::string>> combos{{}};
    for (const auto& c : choices) {
      std::vector<std::vector<std::string>> next;
      for (const auto& combo : combos) {
        for (const std::string& t : *c) {
          next.push_back(combo);
          next.back().push_back(t);
        }
      }
      combos = std::move(next);
    }
    std::string any;
    for (const auto& combo : combos)
      any += (any.empty() ? "(" : " OR (") + RawPhrase(combo, false, true) + ")";
    plan.exact = any;
  } else {
    // Candidates: every run of single-term positions as a phrase, every
    // other expanded position as an OR; the row check does the rest.
    std::vector<std::string> parts, run;
    auto flush = [&] {
      if (!run.empty()) parts.push_back(RawPhrase(run, false, has_positions()));
      run.clear();
    };
    for (const auto& c : choices) {
      if (c && c->size() == 1) {
        run.push_back(c->front());
        continue;
      }
      flush();
      if (c) parts.push_back(AnyOf(*c));
    }
    flush();
    if (!parts.empty()) plan.candidates = AllOf(parts, {});
  }
  return plan;
}

Result<LeafPlan> Compiler::PlanFuzzy(const Node& n) {
  const std::vector<std::string> tokens = TextTokenizer::TokenizeToVector(n.term.text);
  if (tokens.size() != 1) {
    return Status::InvalidArgument(fmt::format("fuzzy `{}` at byte {} is not a single word",
                                               query::DebugString(n), n.position));
  }
  const std::string prefix = TermPrefix(n.term);
  const unsigned max = std::min(n.term.distance, 2u);
  auto terms =
      Expand(n, FieldTerms(prefix, "", [word = tokens.front(), max](std::string_view token) {
               return BoundedEditDistance(token, word, max) <= max;
             }));
  if (!terms.ok()) return terms.status();
  return LeafPlan{AnyOf(*terms), std::nullopt};
}

// A keyword index term holds the value exactly unless the value was cut, or
// holds spaces (which may stand for 0x1E/0x1F, attrs_codec.h): then only
// reading the event decides.
bool KeywordTermIsExact(std::string_view value) {
  return value.size() < kWholeKeywordBytes && value.find(' ') == std::string_view::npos;
}

Result<LeafPlan> Compiler::PlanKeywordTerm(const Node& n) {
  const query::Term& t = n.term;
  const bool fits = t.text.size() < kWholeKeywordBytes;
  // A value too long to be indexed whole: the terms that start like it.
  std::string e = QuoteFtsString(EncodeRawTerm(
      KeywordTerm(t.field, fits ? std::string_view(t.text) : CutUtf8(t.text, kWholeKeywordBytes))));
  if (t.prefix || !fits) e += " *";
  e = OrNumber(t, std::move(e));
  const bool exact = fits && t.text.find_first_of(" \x1e\x1f") == std::string::npos;
  LeafPlan plan;
  if (Legacy(t.field)) {
    // Older events hold the value as text tokens, which equal values share.
    if (TextTokenizer::HasTokens(t.text)) {
      plan.candidates = "(" + e + " OR " + FieldText(t.field, t.text, t.prefix) + ")";
    }
  } else if (exact && t.prefix) {
    auto listed = ExpandKeywordPrefix(t);
    if (!listed.ok()) return listed.status();
    plan.exact = *listed ? AnyOf(**listed) : std::move(e);
  } else if (exact) {
    plan.exact = std::move(e);
  } else {
    plan.candidates = std::move(e);
  }
  return plan;
}

// The keyword terms starting with a prefix Term's text, from the
// vocabulary; nullopt past max_expansions (or without a vocabulary). FTS5
// answers a prefix query by merging the doclists of every matching term
// into one buffer grown a little at a time, where a list of exact terms
// streams: `_index:training*` over 100k events took 9.5 s under
// AddressSanitizer (whose realloc copies), 40 ms as the term it expands to.
Result<std::optional<std::vector<std::string>>> Compiler::ExpandKeywordPrefix(
    const query::Term& t) {
  TermRange range;
  range.first = KeywordTerm(t.field, t.text);
  range.limit = PrefixLimit(range.first);
  range.accept = [](std::string_view) { return true; };
  return ListTerms(std::move(range));
}

// The vocabulary's terms in `range`; nullopt when they are not known: no
// vocabulary, or more than max_expansions of them.
Result<std::optional<std::vector<std::string>>> Compiler::ListTerms(TermRange range) {
  if (terms_ == nullptr) return std::optional<std::vector<std::string>>();
  auto listed = terms_->Terms(range, options_.max_expansions);
  if (!listed.ok()) return listed.status();
  if (listed->size() > options_.max_expansions) return std::optional<std::vector<std::string>>();
  return std::optional<std::vector<std::string>>(std::move(*listed));
}

// Wildcard, fuzzy and regex leaves on a keyword field: the values in the
// vocabulary that match whole, exactly, unless one of them is not held
// exactly (KeywordTermIsExact), or more than max_expansions match: then
// candidates and the row check (never an error: a fleet may have that many
// runs in a day). In an older partition, also the candidates its text
// tokens give.
Result<LeafPlan> Compiler::PlanKeyword(const Node& n) {
  if (n.kind == NodeKind::kTerm) return PlanKeywordTerm(n);
  const query::Term& t = n.term;
  const std::string prefix = KeywordTermPrefix(t.field);
  std::string_view literal;  // what every matching value starts with
  std::function<bool(std::string_view)> test;
  std::function<bool(std::string_view)> may_match_cut = [](std::string_view) { return true; };
  std::unique_ptr<RE2> re;
  TermRange range;
  range.first = prefix;
  if (n.kind == NodeKind::kWildcard) {
    literal =
        std::string_view(t.text).substr(0, std::min(t.text.find_first_of("*?"), t.text.size()));
    range.first = KeywordTerm(t.field, CutUtf8(literal, kWholeKeywordBytes));
    test = [&t](std::string_view v) { return MatchTokenPattern(t.text, v); };
  } else if (n.kind == NodeKind::kFuzzy) {
    const unsigned max = std::min(t.distance, 2u);
    test = [&t, max](std::string_view v) { return BoundedEditDistance(v, t.text, max) <= max; };
    // A cut value has at least this many code points: too many to be near.
    may_match_cut = [&t, max](std::string_view v) {
      return CodePoints(v) <= CodePoints(t.text) + max;
    };
  } else {
    RE2::Options options;
    options.set_log_errors(false);
    re = std::make_unique<RE2>(t.text, options);
    if (!re->ok()) return LeafPlan{NeverMatchingFts(), std::nullopt};  // as the row check
    test = [&re](std::string_view v) { return RE2::PartialMatch(v, *re); };
  }
  range.limit = PrefixLimit(range.first);
  bool exact = true;
  range.accept = [&](std::string_view term) {
    if (!term.starts_with(prefix)) return false;
    const std::string_view value = term.substr(prefix.size());
    if (KeywordTermIsExact(value)) return test(value);
    if (value.size() >= kWholeKeywordBytes && !may_match_cut(value)) return false;
    exact = false;
    return true;
  };
  std::optional<std::vector<std::string>> listed(std::in_place);  // no vocabulary: none
  if (terms_ != nullptr) {
    auto l = ListTerms(std::move(range));
    if (!l.ok()) return l.status();
    listed = std::move(*l);
  }
  Fts keyword;  // the events indexed with keyword terms
  if (listed) {
    keyword = AnyOf(*listed);
  } else {
    exact = false;
    if (!literal.empty()) {
      keyword = QuoteFtsString(
                    EncodeRawTerm(KeywordTerm(t.field, CutUtf8(literal, kWholeKeywordBytes)))) +
                " *";
    }
  }
  if (Legacy(t.field)) {
    // Events written before keyword fields: what their text tokens give.
    Fts text;
    if (n.kind == NodeKind::kRegex) {
      auto literals = RegexLiteralsFts(t.text, FieldTermPrefix(t.field));
      if (!literals.ok()) return literals.status();
      text = std::move(*literals);
    } else if (n.kind == NodeKind::kWildcard && TextTokenizer::HasTokens(literal)) {
      text = FieldText(t.field, literal, true);
    }
    if (!keyword || !text) return LeafPlan{};  // the row check alone
    return LeafPlan{std::nullopt, "((" + *keyword + ") OR (" + *text + "))"};
  }
  if (!exact) return LeafPlan{std::nullopt, keyword};
  return LeafPlan{keyword, std::nullopt};
}

Result<LeafPlan> Compiler::PlanRegex(const Node& n) {
  auto literals = RegexLiteralsFts(n.term.text, TermPrefix(n.term));
  if (!literals.ok()) return literals.status();
  return LeafPlan{std::nullopt, std::move(*literals)};
}

// The FTS5 form of a literal tree: nullopt where nothing is known.
Result<Fts> Compiler::LiteralsFts(const LiteralTree& tree, const std::string& prefix) {
  switch (tree.kind) {
    case LiteralTree::Kind::kAll:
      return Fts();
    case LiteralTree::Kind::kLiteral: {
      GuaranteedPhrase phrase = GuaranteedTokens(tree.literal);
      if (phrase.tokens.empty()) return InnerWordFts(tree.literal, prefix);
      for (std::string& t : phrase.tokens) t = prefix + t;
      if (phrase.last_is_prefix && prefix.empty())
        return Fts(
            MessagePrefix(RawPhrase(phrase.tokens, false, has_positions()), has_positions()));
      return Fts(RawPhrase(phrase.tokens, phrase.last_is_prefix, has_positions()));
    }
    case LiteralTree::Kind::kAnd: {
      std::vector<std::string> parts;
      for (const LiteralTree& c : tree.children) {
        auto f = LiteralsFts(c, prefix);
        if (!f.ok()) return f.status();
        if (*f) parts.push_back(std::move(**f));
      }
      if (parts.empty()) return Fts();
      return Fts(AllOf(parts, {}));
    }
    case LiteralTree::Kind::kOr: {
      std::string any;
      for (const LiteralTree& c : tree.children) {
        auto f = LiteralsFts(c, prefix);
        if (!f.ok()) return f.status();
        if (!*f) return Fts();
        any += (any.empty() ? "(" : " OR (") + **f + ")";
      }
      return Fts(std::move(any));
    }
  }
  return Fts();
}

// Whether a token may hold `word` (InnerWordFts): it does, or it is long
// enough to have been cut in the index, and the word may have been past the
// cut.
bool MayHoldWord(std::string_view token, std::string_view word) {
  return token.find(word) != std::string_view::npos ||
         token.size() + 3 >= TextTokenizer::kMaxTokenBytes;
}

// The one-word literals of `tree` (InnerWord), whose tokens GuaranteedTokens
// cannot tell.
void CollectInnerWords(const LiteralTree& tree, std::vector<std::string>& out) {
  if (tree.kind == LiteralTree::Kind::kLiteral) {
    if (!GuaranteedTokens(tree.literal).tokens.empty()) return;
    if (std::string word = InnerWord(tree.literal); !word.empty()) out.push_back(std::move(word));
    return;
  }
  for (const LiteralTree& c : tree.children) CollectInnerWords(c, out);
}

// What a regex's required literals give FTS5 (LiteralsFts).
Result<Fts> Compiler::RegexLiteralsFts(std::string_view pattern, const std::string& prefix) {
  const LiteralTree tree = RequiredLiterals(pattern);
  if (Status s = ListInnerWords(tree, prefix); !s.ok()) return s;
  return LiteralsFts(tree, prefix);
}

// Lists the terms of all of `tree`'s one-word literals in one pass over the
// vocabulary (~4.5 ms at 1M events a day), where InnerWordFts would read it
// once per word: `/(NCCL|Traceback|OOM)/` is three. A listing past
// max_expansions for each word leaves the words to InnerWordFts.
Status Compiler::ListInnerWords(const LiteralTree& tree, const std::string& prefix) {
  if (terms_ == nullptr) return Status::Ok();
  std::vector<std::string> words;
  CollectInnerWords(tree, words);
  std::sort(words.begin(), words.end());
  words.erase(std::unique(words.begin(), words.end()), words.end());
  std::erase_if(words, [&](const std::string& w) { return inner_words_.count({prefix, w}) > 0; });
  if (words.size() < 2) return Status::Ok();
  const std::size_t max_terms = options_.max_expansions * words.size();
  auto listed = terms_->Terms(FieldTerms(prefix, "",
                                         [&words](std::string_view token) {
                                           return std::any_of(words.begin(), words.end(),
                                                              [token](const std::string& w) {
                                                                return MayHoldWord(token, w);
                                                              });
                                         }),
                              max_terms);
  if (!listed.ok()) return listed.status();
  if (listed->size() > max_terms) return Status::Ok();
  for (const std::string& word : words) {
    std::vector<std::string> own;
    for (const std::string& term : *listed) {
      if (MayHoldWord(std::string_view(term).substr(prefix.size()), word)) own.push_back(term);
    }
    inner_words_[{prefix, word}] = own.size() > options_.max_expansions ? Fts() : Fts(AnyOf(own));
  }
  return Status::Ok();
}

// A literal of one word whose edges may sit inside longer tokens
// (InnerWord): the terms of the day's vocabulary that may hold the word
// (MayHoldWord). Nullopt without a vocabulary or past max_expansions: the
// rows are read.
Result<Fts> Compiler::InnerWordFts(std::string_view literal, const std::string& prefix) {
  const std::string word = InnerWord(literal);
  if (word.empty() || terms_ == nullptr) return Fts();
  if (auto it = inner_words_.find({prefix, word}); it != inner_words_.end()) return it->second;
  auto terms = ListTerms(
      FieldTerms(prefix, "", [&word](std::string_view token) { return MayHoldWord(token, word); }));
  if (!terms.ok()) return terms.status();
  if (!*terms) return Fts();
  return Fts(AnyOf(**terms));
}

// The conjuncts of `n`: its children, and theirs for a child AND.
void AddConjuncts(const Node& n, std::vector<const Node*>& out) {
  for (const Node& c : n.children) {
    if (c.kind == NodeKind::kAnd) {
      AddConjuncts(c, out);
    } else {
      out.push_back(&c);
    }
  }
}

Status Compiler::Run(const Node& root) {
  auto exact = Exact(root);
  if (!exact.ok()) return exact.status();
  if (*exact) {
    out_.fts = std::move(*exact);
    return Status::Ok();
  }
  if (root.kind != NodeKind::kAnd) {
    auto candidates = Candidates(root);
    if (!candidates.ok()) return candidates.status();
    out_.fts = std::move(*candidates);
    driven_ = out_.fts.has_value();
    auto where = Condition(root, driven_);
    if (!where.ok()) return where.status();
    out_.where = std::move(*where);
    return Status::Ok();
  }
  // Drive by what FTS5 can find of the conjuncts; filter by the rest. A
  // negated conjunct joins the driver only when something positive does.
  // Nested ANDs are conjuncts of the root's (a scope filter around a query,
  // an Elasticsearch bool around a query_string).
  std::vector<const Node*> conjuncts;
  AddConjuncts(root, conjuncts);
  std::vector<Fts> driving(conjuncts.size());
  bool any_positive = false;
  for (std::size_t i = 0; i < conjuncts.size(); ++i) {
    const Node& c = *conjuncts[i];
    if (c.kind == NodeKind::kNot) continue;
    auto candidates = Candidates(c);
    if (!candidates.ok()) return candidates.status();
    driving[i] = std::move(*candidates);
    any_positive |= driving[i].has_value();
  }
  driven_ = any_positive;
  std::vector<std::string> positive, negative, rest;
  for (std::size_t i = 0; i < conjuncts.size(); ++i) {
    const Node& c = *conjuncts[i];
    if (c.kind == NodeKind::kNot && any_positive) {
      auto e = Exact(c.children[0]);
      if (!e.ok()) return e.status();
      if (*e) {
        negative.push_back(std::move(**e));
        continue;
      }
    }
    if (driving[i]) positive.push_back(*driving[i]);
    auto e = Exact(c);
    if (!e.ok()) return e.status();
    if (*e) continue;  // the driver says it all
    auto cond = Condition(c, driving[i].has_value());
    if (!cond.ok()) return cond.status();
    if (*cond != "1") rest.push_back("(" + *cond + ")");
  }
  if (!positive.empty()) out_.fts = AllOf(positive, negative);
  std::string where;
  for (const std::string& r : rest) where += (where.empty() ? "" : " AND ") + r;
  out_.where = where.empty() ? "1" : where;
  return Status::Ok();
}

}  // namespace

std::string QuoteFtsString(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out.push_back('"');
    out.push_back(c);
  }
  out.push_back('"');
  return out;
}

void NarrowToTimestampRanges(const Node& root, TimeMs& from, TimeMs& to) {
  const auto narrow = [&](const Node& n) {
    if (n.kind != NodeKind::kRange || n.range.field != query::kTimestampField) return;
    std::int64_t lo = 0, hi = 0;
    if (!TimestampKeyBounds(n.range, lo, hi).ok()) return;
    if (!n.range.lower.empty()) from = std::max(from, KeyTime(lo));
    if (!n.range.upper.empty()) to = std::min(to, KeyTime(hi + 1));
  };
  if (root.kind != NodeKind::kAnd) return narrow(root);
  std::vector<const Node*> conjuncts;
  AddConjuncts(root, conjuncts);
  for (const Node* c : conjuncts) narrow(*c);
}

double ExistsIndexShare(double events, double in_range, std::size_t stops_after) {
  if (events <= 0) return 0;
  // Index: share * events. Rows: in_range, or stops_after / share.
  double below = kRowToTermCost * in_range / events;
  if (stops_after > 0) {
    below = std::min(below, std::sqrt(kRowToTermCost * static_cast<double>(stops_after) / events));
  }
  return below;
}

// Every string in an expression is quoted (QuoteFtsString), so a `*` outside
// quotes marks a prefix term.
bool HasPrefixTerm(std::string_view fts) {
  bool quoted = false;
  for (char c : fts) {
    if (c == '"') quoted = !quoted;
    if (c == '*' && !quoted) return true;
  }
  return false;
}

std::string NeverMatchingFts() {
  // Index terms never are a lone 0x1F: message tokens hold none, field terms
  // have a name before it and a token after.
  return QuoteFtsString(EncodeRawTerm(std::string(1, kNameSeparator)));
}

Result<CompiledQuery> CompileFtsQuery(const Node& root, TermSource* terms,
                                      const CompileOptions& options) {
  CompiledQuery out;
  Compiler compiler(terms, options, out);
  if (auto s = compiler.Run(root); !s.ok()) return s;
  out.fts_prefix = out.fts && HasPrefixTerm(*out.fts);
  out.merges_prefix = out.merges_prefix || out.fts_prefix;
  out.rowids = options.rowids;
  return out;
}

}  // namespace dashcam::storage
