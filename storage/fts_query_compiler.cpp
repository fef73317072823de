#include "storage/fts_query_compiler.h"

#include <fmt/format.h>

#include "storage/attrs_codec.h"
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

class SqlBuilder {
 public:
  explicit SqlBuilder(CompiledQuery& out) : out_(out) {}

  std::string Condition(const Node& n) {
    if (IsFtsPositive(n)) {
      out_.params.push_back(FtsExpression(n));
      const int p = kFirstWhereParam + static_cast<int>(out_.params.size()) - 1;
      return fmt::format("e.key IN (SELECT rowid FROM fts WHERE fts MATCH ?{})", p);
    }
    switch (n.kind) {
      case NodeKind::kMatchAll:
        return "1";
      case NodeKind::kNot:
        return "NOT (" + Condition(n.children[0]) + ")";
      case NodeKind::kAnd:
      case NodeKind::kOr: {
        std::string s;
        for (const Node& c : n.children) {
          if (!s.empty()) s += n.kind == NodeKind::kAnd ? " AND " : " OR ";
          s += "(" + Condition(c) + ")";
        }
        return s;
      }
      case NodeKind::kTerm:
        break;  // handled above
    }
    return "1";
  }

 private:
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
    out.where = sql.Condition(root);
    return out;
  }
  // Drive by the FTS-answerable conjuncts; filter by the rest.
  Node driver{NodeKind::kAnd, root.position, {}, {}};
  std::string rest;
  for (const Node& c : root.children) {
    const bool fts_part =
        IsFtsPositive(c) || (c.kind == NodeKind::kNot && IsFtsPositive(c.children[0]));
    if (fts_part) {
      driver.children.push_back(c);
    } else {
      if (!rest.empty()) rest += " AND ";
      rest += "(" + sql.Condition(c) + ")";
    }
  }
  if (driver.children.size() == 1 && IsFtsPositive(driver.children[0])) {
    out.fts = FtsExpression(driver.children[0]);
  } else if (!driver.children.empty() && IsFtsPositive(driver)) {
    out.fts = FtsExpression(driver);
  } else if (!driver.children.empty()) {
    rest = rest.empty() ? sql.Condition(driver) : "(" + sql.Condition(driver) + ") AND " + rest;
  }
  out.where = rest.empty() ? "1" : rest;
  return out;
}

}  // namespace dashcam::storage
