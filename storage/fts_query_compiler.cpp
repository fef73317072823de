#include "storage/fts_query_compiler.h"

#include <algorithm>
#include <charconv>
#include <limits>

#include <fmt/format.h>

#include "storage/attrs_codec.h"
#include "storage/partition.h"
#include "storage/text_tokenizer.h"

namespace dashcam::storage {
namespace {

using query::Node;
using query::NodeKind;

std::string TermExpression(const query::Term& t) {
  if (query::IsMessageField(t.field)) {
    std::string e = QuoteFtsString(EncodeMessagePhrase(t.text));
    return t.prefix ? e + " *" : e;
  }
  std::string e = QuoteFtsString(EncodeFieldPhrase(t.field, t.text));
  if (t.prefix) return e + " *";
  auto number = CanonicalNumberText(t.text);
  if (!number) return e;
  std::string n = QuoteFtsString(EncodeFieldNumber(t.field, *number));
  if (!TextTokenizer::HasTokens(t.text)) return n;
  return "(" + e + " OR " + n + ")";
}

// True when FTS5 alone can say whether an event matches `n` positively.
bool IsFtsPositive(const Node& n) {
  switch (n.kind) {
    case NodeKind::kTerm:
      return true;
    case NodeKind::kOr:
      for (const Node& c : n.children) {
        if (!IsFtsPositive(c)) return false;
      }
      return true;
    case NodeKind::kAnd: {
      bool any_positive = false;
      for (const Node& c : n.children) {
        if (IsFtsPositive(c))
          any_positive = true;
        else if (!(c.kind == NodeKind::kNot && IsFtsPositive(c.children[0])))
          return false;
      }
      return any_positive;
    }
    default:
      return false;
  }
}

// REQUIRES: IsFtsPositive(n).
std::string FtsExpression(const Node& n) {
  if (n.kind == NodeKind::kTerm) return TermExpression(n.term);
  std::string pos, neg;
  for (const Node& c : n.children) {
    if (n.kind == NodeKind::kAnd && c.kind == NodeKind::kNot) {
      neg += " NOT (" + FtsExpression(c.children[0]) + ")";
      continue;
    }
    if (!pos.empty()) pos += n.kind == NodeKind::kAnd ? " AND " : " OR ";
    pos += "(" + FtsExpression(c) + ")";
  }
  if (neg.empty()) return pos;
  return "(" + pos + ")" + neg;
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
    t = std::clamp<std::int64_t>(t + (r.include_lower ? 0 : 1), kMinEventTime, kMaxEventTime);
    lo = FirstKeyAt(t);
  }
  if (!r.upper.empty()) {
    if (!parse(r.upper, t)) return Status::InvalidArgument("bad @timestamp range bound " + r.upper);
    t = std::clamp<std::int64_t>(t + (r.include_upper ? 1 : 0), kMinEventTime, kMaxEventTime);
    hi = FirstKeyAt(t) - 1;
  }
  return Status::Ok();
}

class SqlBuilder {
 public:
  explicit SqlBuilder(CompiledQuery& out) : out_(out) {}

  Result<std::string> Condition(const Node& n) {
    if (IsFtsPositive(n)) {
      return fmt::format("e.key IN (SELECT rowid FROM fts WHERE fts MATCH ?{})",
                         Param(FtsExpression(n)));
    }
    switch (n.kind) {
      case NodeKind::kMatchAll:
        return std::string("1");
      case NodeKind::kRange:
        if (n.range.field == query::kTimestampField) return RangeCondition(n.range);
        return RowPredicate(n);
      case NodeKind::kExists:
        return RowPredicate(n);
      case NodeKind::kNot: {
        auto c = Condition(n.children[0]);
        if (!c.ok()) return c;
        return "NOT (" + *c + ")";
      }
      case NodeKind::kAnd:
      case NodeKind::kOr: {
        std::string s;
        for (const Node& c : n.children) {
          auto sub = Condition(c);
          if (!sub.ok()) return sub;
          if (!s.empty()) s += n.kind == NodeKind::kAnd ? " AND " : " OR ";
          s += "(" + *sub + ")";
        }
        return s;
      }
      case NodeKind::kTerm:
        break;  // handled above
      case NodeKind::kWildcard:
      case NodeKind::kRegex:
      case NodeKind::kNear:
      case NodeKind::kFuzzy:
        return Status::InvalidArgument(
            "this query kind is not supported by the SQLite backend yet");
    }
    return std::string("1");
  }

 private:
  std::string RowPredicate(const Node& n) {
    return fmt::format("dc_match(e.source, ?{})", Param(&n));
  }

  int Param(std::variant<std::string, std::int64_t, const query::Node*> v) {
    out_.params.push_back(std::move(v));
    return kFirstWhereParam + static_cast<int>(out_.params.size()) - 1;
  }

  Result<std::string> RangeCondition(const query::Range& r) {
    std::int64_t lo = 0, hi = 0;
    if (auto s = TimestampKeyBounds(r, lo, hi); !s.ok()) return s;
    return fmt::format("e.key BETWEEN ?{} AND ?{}", Param(lo), Param(hi));
  }

  CompiledQuery& out_;
};

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

Result<CompiledQuery> CompileFtsQuery(const Node& root) {
  CompiledQuery out;
  if (IsFtsPositive(root)) {
    out.fts = FtsExpression(root);
    return out;
  }
  SqlBuilder sql(out);
  if (root.kind != NodeKind::kAnd) {
    auto where = sql.Condition(root);
    if (!where.ok()) return where.status();
    out.where = *where;
    return out;
  }
  // Drive by the FTS-answerable conjuncts; filter by the rest.
  Node driver{NodeKind::kAnd, root.position, {}, {}, {}};
  std::string rest;
  for (const Node& c : root.children) {
    const bool fts_part =
        IsFtsPositive(c) || (c.kind == NodeKind::kNot && IsFtsPositive(c.children[0]));
    if (fts_part) {
      driver.children.push_back(c);
      continue;
    }
    auto cond = sql.Condition(c);
    if (!cond.ok()) return cond.status();
    if (!rest.empty()) rest += " AND ";
    rest += "(" + *cond + ")";
  }
  if (driver.children.size() == 1 && IsFtsPositive(driver.children[0])) {
    out.fts = FtsExpression(driver.children[0]);
  } else if (!driver.children.empty() && IsFtsPositive(driver)) {
    out.fts = FtsExpression(driver);
  } else if (!driver.children.empty()) {
    auto cond = sql.Condition(driver);
    if (!cond.ok()) return cond.status();
    rest = rest.empty() ? *cond : "(" + *cond + ") AND " + rest;
  }
  out.where = rest.empty() ? "1" : rest;
  return out;
}

}  // namespace dashcam::storage
