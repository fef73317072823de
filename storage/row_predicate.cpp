#include "storage/row_predicate.h"

#include <algorithm>
#include <charconv>
#include <optional>
#include <string_view>
#include <vector>

#include <re2/re2.h>

#include "storage/attrs_codec.h"
#include "storage/number_ranges.h"
#include "storage/sqlite_db.h"
#include "storage/text_tokenizer.h"
#include "storage/token_pattern.h"

namespace dashcam::storage {
namespace {

using query::Node;
using query::NodeKind;

constexpr std::size_t kMaxCachedRegexes = 64;

// The values of a field (query_ast.h): strings (booleans as their text)
// and numbers.
struct Values {
  std::vector<std::string_view> strings;
  std::vector<const Field*> numbers;
};

Values ValuesOf(const std::string& field, const EventView& ev) {
  Values out;
  if (query::IsMessageField(field)) {
    if (ev.doc->message) out.strings.push_back(*ev.doc->message);
    return out;
  }
  if (field == query::kIndexField) {
    if (!ev.index.empty()) out.strings.push_back(ev.index);
    return out;
  }
  for (const Field& f : ev.doc->fields) {
    if (f.name != field) continue;
    if (f.type == Field::Type::kNumber) {
      out.numbers.push_back(&f);
    } else {
      out.strings.push_back(f.text);
    }
  }
  return out;
}

bool Between(const query::Range& r, double v, double lo, double hi) {
  const bool above_lo = r.lower.empty() || (r.include_lower ? v >= lo : v > lo);
  const bool below_hi = r.upper.empty() || (r.include_upper ? v <= hi : v < hi);
  return above_lo && below_hi;
}

bool InStringRange(const query::Range& r, std::string_view v) {
  const bool above_lo = r.lower.empty() || (r.include_lower ? v >= r.lower : v > r.lower);
  const bool below_hi = r.upper.empty() || (r.include_upper ? v <= r.upper : v < r.upper);
  return above_lo && below_hi;
}

// Numbers are read with number_ranges.h's ReadNumber, so that its plans
// and this check agree.
bool RangeMatches(const query::Range& r, const EventView& ev) {
  if (r.field == query::kTimestampField) {
    const auto lo = ReadNumber(r.lower), hi = ReadNumber(r.upper);
    return Between(r, static_cast<double>(ev.ts_ms), lo.value_or(0), hi.value_or(0));
  }
  const auto lo = ReadNumber(r.lower), hi = ReadNumber(r.upper);
  const bool numeric = (r.lower.empty() || lo) && (r.upper.empty() || hi);
  const Values values = ValuesOf(r.field, ev);
  for (std::string_view s : values.strings) {
    if (numeric) {
      const auto v = ReadNumber(s);
      if (v && Between(r, *v, lo.value_or(0), hi.value_or(0))) return true;
    } else if (InStringRange(r, s)) {
      return true;
    }
  }
  if (!numeric) return false;
  for (const Field* f : values.numbers) {
    if (Between(r, f->number, lo.value_or(0), hi.value_or(0))) return true;
  }
  return false;
}

bool Exists(const std::string& field, const EventView& ev) {
  if (query::IsMessageField(field)) return ev.doc->message.has_value();
  if (field == query::kTimestampField || field == query::kIdField) return true;
  if (field == query::kIndexField) return !ev.index.empty();
  for (const Field& f : ev.doc->fields) {
    if (IsAtOrUnder(f.name, field)) return true;
  }
  return false;
}

// True when the tokens of `text` hold `want` contiguously, the last of
// `want` as a prefix when `prefix`.
bool ContainsTokens(std::string_view text, const std::vector<std::string>& want, bool prefix) {
  return ContainsTokenRun(text, want.size(), [&](std::string_view token, std::size_t k) {
    return prefix && k + 1 == want.size() ? token.starts_with(want[k]) : token == want[k];
  });
}

// `want`: the tokens of t.text (RowMatcher::Tokens).
bool TermMatches(const query::Term& t, const std::vector<std::string>& want, const EventView& ev) {
  if (t.field == query::kIdField) return ev.id == t.text;
  const Values values = ValuesOf(t.field, ev);
  if (IsKeywordField(t.field)) {
    for (std::string_view s : values.strings) {
      if (t.prefix ? s.starts_with(t.text) : s == t.text) return true;
    }
  } else {
    for (std::string_view s : values.strings) {
      if (ContainsTokens(s, want, t.prefix)) return true;
    }
  }
  if (t.prefix || query::IsMessageField(t.field)) return false;
  const auto canonical = CanonicalNumberText(t.text);
  if (!canonical) return false;
  for (const Field* f : values.numbers) {
    if (f->text == *canonical) return true;
  }
  return false;
}

// query_ast.h, kNear: some occurrence of every word's phrase such that each
// ends at most N tokens before the last one starts.
bool NearMatches(const query::Term& t, const EventView& ev) {
  if (!query::IsMessageField(t.field) || !ev.doc->message) return false;
  const std::vector<std::string> tokens = TextTokenizer::TokenizeToVector(*ev.doc->message);
  std::vector<std::vector<std::string>> phrases;
  for (std::string_view word : query::NearWords(t.text)) {
    auto phrase = TextTokenizer::TokenizeToVector(word);
    if (!phrase.empty()) phrases.push_back(std::move(phrase));
  }
  if (phrases.empty()) return false;
  // Starts of every phrase's occurrences.
  std::vector<std::vector<long>> starts(phrases.size());
  for (std::size_t i = 0; i < phrases.size(); ++i) {
    for (std::size_t s = 0; s + phrases[i].size() <= tokens.size(); ++s) {
      if (std::equal(phrases[i].begin(), phrases[i].end(), tokens.begin() + s)) {
        starts[i].push_back(static_cast<long>(s));
      }
    }
    if (starts[i].empty()) return false;
  }
  // Try each occurrence as the latest start M.
  for (const auto& candidates : starts) {
    for (long m : candidates) {
      bool all = true;
      for (std::size_t i = 0; i < phrases.size() && all; ++i) {
        const long n = static_cast<long>(phrases[i].size());
        all = std::any_of(starts[i].begin(), starts[i].end(), [&](long s) {
          return s <= m && m - (s + n) <= static_cast<long>(t.distance);
        });
      }
      if (all) return true;
    }
  }
  return false;
}

// `word`: the tokens of t.text (RowMatcher::Tokens).
bool FuzzyMatches(const query::Term& t, const std::vector<std::string>& word, const EventView& ev) {
  const unsigned max = std::min(t.distance, 2u);
  if (IsKeywordField(t.field)) {
    for (std::string_view s : ValuesOf(t.field, ev).strings) {
      if (BoundedEditDistance(s, t.text, max) <= max) return true;
    }
    return false;
  }
  if (word.size() != 1) return false;
  for (std::string_view s : ValuesOf(t.field, ev).strings) {
    for (const std::string& token : TextTokenizer::TokenizeToVector(s)) {
      if (BoundedEditDistance(token, word.front(), max) <= max) return true;
    }
  }
  return false;
}

bool WildcardMatches(const query::Term& t, const std::vector<PatternPosition>& positions,
                     const EventView& ev) {
  const bool keyword = IsKeywordField(t.field);
  for (std::string_view s : ValuesOf(t.field, ev).strings) {
    if (keyword ? MatchTokenPattern(t.text, s) : ContainsPattern(s, positions)) {
      return true;
    }
  }
  return false;
}

// Appends the document fields `node`'s leaves look at (not the message,
// the index name, the id or the time, which are not document fields).
void AppendFields(const query::Node& node, std::vector<std::string_view>& out) {
  for (const query::Node& child : node.children) AppendFields(child, out);
  if (node.kind == NodeKind::kMatchAll || !node.children.empty()) return;
  const std::string& field = node.kind == NodeKind::kRange ? node.range.field : node.term.field;
  if (query::IsMessageField(field) || field == query::kIndexField || field == query::kIdField ||
      field == query::kTimestampField) {
    return;
  }
  out.push_back(field);
}

struct FunctionState {
  DocumentReader reader;
  DocumentView view;
  RowMatcher matcher;
  std::vector<std::string> fields;        // what the reader keeps
  std::vector<std::string_view> scratch;  // the fields of the node asked about now
  bool focused = false;

  // Reads only the fields `node` looks at: a document's other members are
  // skipped unread (most of a row check's time went to building them).
  // Called for every row, so it allocates only when the fields change.
  void Focus(const query::Node& node) {
    scratch.clear();
    AppendFields(node, scratch);
    if (focused && std::equal(scratch.begin(), scratch.end(), fields.begin(), fields.end())) return;
    fields.assign(scratch.begin(), scratch.end());
    focused = true;
    reader.KeepOnlyFields(fields);
  }
};

// dc_match(source BLOB, idx TEXT, node POINTER)
void DcMatch(sqlite3_context* ctx, int, sqlite3_value** argv) {
  auto* state = static_cast<FunctionState*>(sqlite3_user_data(ctx));
  const auto* node = static_cast<const Node*>(sqlite3_value_pointer(argv[2], kNodePointerType));
  if (node == nullptr) {
    sqlite3_result_error(ctx, "dc_match: no query node bound", -1);
    return;
  }
  state->Focus(*node);
  const auto* bytes = static_cast<const char*>(sqlite3_value_blob(argv[0]));
  const auto size = static_cast<std::size_t>(sqlite3_value_bytes(argv[0]));
  if (bytes == nullptr || !state->reader.ReadUnpadded({bytes, size}, state->view).ok()) {
    sqlite3_result_int(ctx, 0);
    return;
  }
  EventView ev;
  ev.doc = &state->view;
  ev.index = ValueText(argv[1]);
  sqlite3_result_int(ctx, state->matcher.Matches(*node, ev) ? 1 : 0);
}

}  // namespace

RowMatcher::RowMatcher() = default;
RowMatcher::~RowMatcher() = default;

namespace {

// What `cache` holds for `text`, made by `make(text)` the first time; the
// whole cache is dropped once it holds kMaxCachedRegexes.
template <class Value, class Make>
const Value& Cached(std::unordered_map<std::string, Value>& cache, const std::string& text,
                    Make&& make) {
  auto it = cache.find(text);
  if (it != cache.end()) return it->second;
  if (cache.size() >= kMaxCachedRegexes) cache.clear();
  return cache.emplace(text, make(text)).first->second;
}

}  // namespace

const re2::RE2& RowMatcher::Regex(const std::string& pattern) {
  return *Cached(regexes_, pattern, [](const std::string& p) {
    RE2::Options options;
    options.set_log_errors(false);
    return std::make_unique<RE2>(p, options);
  });
}

const std::vector<PatternPosition>& RowMatcher::Wildcard(const std::string& pattern) {
  return Cached(wildcards_, pattern, SplitWildcardPattern);
}

const std::vector<std::string>& RowMatcher::Tokens(const std::string& text) {
  return Cached(tokens_, text, TextTokenizer::TokenizeToVector);
}

bool RowMatcher::Matches(const Node& node, const EventView& event) {
  switch (node.kind) {
    case NodeKind::kMatchAll:
      return true;
    case NodeKind::kNot:
      return !Matches(node.children[0], event);
    case NodeKind::kAnd:
      for (const Node& c : node.children) {
        if (!Matches(c, event)) return false;
      }
      return true;
    case NodeKind::kOr:
      for (const Node& c : node.children) {
        if (Matches(c, event)) return true;
      }
      return false;
    default:
      return MatchesLeaf(node, event);
  }
}

bool RowMatcher::MatchesLeaf(const Node& node, const EventView& event) {
  switch (node.kind) {
    case NodeKind::kTerm:
      return TermMatches(node.term, Tokens(node.term.text), event);
    case NodeKind::kRange:
      return RangeMatches(node.range, event);
    case NodeKind::kExists:
      return Exists(node.term.field, event);
    case NodeKind::kWildcard:
      return WildcardMatches(node.term, Wildcard(node.term.text), event);
    case NodeKind::kNear:
      return NearMatches(node.term, event);
    case NodeKind::kFuzzy:
      return FuzzyMatches(node.term, Tokens(node.term.text), event);
    case NodeKind::kRegex: {
      const RE2& re = Regex(node.term.text);
      if (!re.ok()) return false;
      for (std::string_view s : ValuesOf(node.term.field, event).strings) {
        if (RE2::PartialMatch(s, re)) return true;
      }
      return false;
    }
    default:
      return false;
  }
}

Status RegisterRowPredicate(sqlite3* db) {
  auto* state = new FunctionState();
  const int rc = sqlite3_create_function_v2(db, "dc_match", 3, SQLITE_UTF8 | SQLITE_DETERMINISTIC,
                                            state, &DcMatch, nullptr, nullptr,
                                            [](void* p) { delete static_cast<FunctionState*>(p); });
  return SqliteStatus(rc, db, "register dc_match");
}

}  // namespace dashcam::storage
