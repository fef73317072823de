#include "api/es_query_dsl.h"

#include <algorithm>
#include <cmath>
#include <string>

#include <fmt/format.h>
#include <boost/json.hpp>

#include "api/query_parser.h"
#include "storage/text_tokenizer.h"

namespace dashcam::api {
namespace {

namespace json = boost::json;
using query::Node;
using query::NodeKind;

constexpr int kMaxDepth = 32;

// What one translation has used of the limits (es_query_dsl.h).
struct Translation {
  TimeMs now;
  std::size_t clauses = 0;

  // Counts `n` more leaf clauses; refused past kMaxEsQueryClauses, before
  // they are built.
  Status Spend(std::size_t n) {
    clauses += n;
    if (clauses <= kMaxEsQueryClauses) return Status::Ok();
    return Status::InvalidArgument(
        fmt::format("query has more than {} clauses (each value of [terms] and each word of "
                    "[match] or [match_phrase] counts as one)",
                    kMaxEsQueryClauses));
  }
};

std::size_t CountLeaves(const Node& n) {
  if (n.children.empty()) return 1;
  std::size_t leaves = 0;
  for (const Node& c : n.children) leaves += CountLeaves(c);
  return leaves;
}

std::string FieldName(std::string_view name) {
  constexpr std::string_view kKeyword = ".keyword";
  if (name.size() > kKeyword.size() && name.ends_with(kKeyword)) {
    name.remove_suffix(kKeyword.size());
  }
  return std::string(name);
}

Node CombineClauses(NodeKind kind, std::vector<Node> children) {
  if (children.empty()) return Node::MatchAll();
  if (children.size() == 1) return std::move(children[0]);
  return Node{kind, 0, std::move(children), {}, {}};
}

Status Unsupported(std::string_view what) {
  return Status::InvalidArgument(fmt::format("{} is not supported by dashcam", what));
}

std::string ScalarText(const json::value& v) {
  if (v.is_string()) return std::string(v.as_string());
  if (v.is_bool()) return v.as_bool() ? "true" : "false";
  return json::serialize(v);
}

// {"field": value} or {"field": {"<key>": value, ...}}: the single field.
Result<std::pair<std::string, const json::value*>> SingleField(const json::value& body,
                                                               std::string_view type) {
  const json::object* obj = body.if_object();
  if (!obj || obj->size() != 1) {
    return Status::InvalidArgument(fmt::format("[{}] expects an object with one field", type));
  }
  return std::make_pair(FieldName(obj->begin()->key()), &obj->begin()->value());
}

Node TermNode(std::string field, std::string text, bool phrase) {
  return Node::MakeTerm(query::Term{std::move(field), std::move(text), phrase, false}, 0);
}

Result<Node> Translate(const json::value& q, Translation& t, int depth);

Result<Node> Match(const json::value& body, bool phrase, Translation& t) {
  auto f = SingleField(body, phrase ? "match_phrase" : "match");
  if (!f.ok()) return f.status();
  const json::value* v = f->second;
  bool all = false;
  if (const json::object* o = v->if_object()) {
    const json::value* qv = o->if_contains("query");
    if (!qv) return Status::InvalidArgument("[match] needs [query]");
    if (const json::value* op = o->if_contains("operator")) {
      all = op->is_string() && (op->as_string() == "and" || op->as_string() == "AND");
    }
    v = qv;
  }
  const std::string text = ScalarText(*v);
  auto tokens = storage::TextTokenizer::TokenizeToVector(text);
  // Each word of a phrase is looked up too.
  if (auto s = t.Spend(std::max<std::size_t>(tokens.size(), 1)); !s.ok()) return s;
  if (phrase) return TermNode(f->first, text, true);
  std::vector<Node> terms;
  for (auto& token : tokens) terms.push_back(TermNode(f->first, token, false));
  if (terms.empty()) return Status::InvalidArgument("[match] query has no letters or digits");
  return CombineClauses(all ? NodeKind::kAnd : NodeKind::kOr, std::move(terms));
}

Result<Node> TermQuery(const json::value& body, Translation& t) {
  auto f = SingleField(body, "term");
  if (!f.ok()) return f.status();
  if (auto s = t.Spend(1); !s.ok()) return s;
  const json::value* v = f->second;
  if (const json::object* o = v->if_object()) {
    v = o->if_contains("value");
    if (!v) return Status::InvalidArgument("[term] needs [value]");
  }
  return TermNode(f->first, ScalarText(*v), true);
}

Result<Node> TermsQuery(const json::value& body, Translation& t) {
  auto f = SingleField(body, "terms");
  if (!f.ok()) return f.status();
  const json::array* values = f->second->if_array();
  if (!values || values->empty()) return Status::InvalidArgument("[terms] needs a list of values");
  if (auto s = t.Spend(values->size()); !s.ok()) return s;
  std::vector<Node> any;
  for (const json::value& v : *values) any.push_back(TermNode(f->first, ScalarText(v), true));
  return CombineClauses(NodeKind::kOr, std::move(any));
}

Result<Node> RangeQuery(const json::value& body, Translation& t) {
  auto f = SingleField(body, "range");
  if (!f.ok()) return f.status();
  if (auto s = t.Spend(1); !s.ok()) return s;
  const json::object* o = f->second->if_object();
  if (!o) return Status::InvalidArgument("[range] expects bounds");
  query::Range r;
  r.field = f->first;
  for (const auto& [key, v] : *o) {
    std::string bound;
    if (r.field == query::kTimestampField) {
      auto at = ResolveEsDate(v, t.now);
      if (!at.ok()) return at.status();
      bound = std::to_string(*at);
    } else {
      bound = ScalarText(v);
    }
    if (key == "gte" || key == "gt") {
      r.lower = bound;
      r.include_lower = key == "gte";
    } else if (key == "lte" || key == "lt") {
      r.upper = bound;
      r.include_upper = key == "lte";
    } else if (key != "format" && key != "time_zone" && key != "boost") {
      return Unsupported(fmt::format("[range] option [{}]", std::string_view(key)));
    }
  }
  return Node::MakeRange(std::move(r), 0);
}

// Appends the translations of `clauses` (an object or an array of them).
Status Clauses(const json::value& clauses, Translation& t, int depth, std::vector<Node>& out) {
  if (const json::array* arr = clauses.if_array()) {
    for (const json::value& c : *arr) {
      auto n = Translate(c, t, depth + 1);
      if (!n.ok()) return n.status();
      out.push_back(std::move(*n));
    }
    return Status::Ok();
  }
  auto n = Translate(clauses, t, depth + 1);
  if (!n.ok()) return n.status();
  out.push_back(std::move(*n));
  return Status::Ok();
}

Result<Node> Bool(const json::value& body, Translation& t, int depth) {
  const json::object* o = body.if_object();
  if (!o) return Status::InvalidArgument("[bool] expects an object");
  std::vector<Node> must, should, must_not;
  for (const auto& [key, v] : *o) {
    Status s;
    if (key == "must" || key == "filter")
      s = Clauses(v, t, depth, must);
    else if (key == "should")
      s = Clauses(v, t, depth, should);
    else if (key == "must_not")
      s = Clauses(v, t, depth, must_not);
    else if (key == "minimum_should_match") {
      if (!(v.is_int64() && v.as_int64() <= 1) && !(v.is_string() && v.as_string() == "1")) {
        return Unsupported("[minimum_should_match] above 1");
      }
    } else if (key != "boost" && key != "_name") {
      return Unsupported(fmt::format("[bool] clause [{}]", std::string_view(key)));
    }
    if (!s.ok()) return s;
  }
  // `should` is required only when nothing else constrains (or when asked).
  const bool should_required = must.empty() || o->contains("minimum_should_match");
  if (!should.empty() && should_required)
    must.push_back(CombineClauses(NodeKind::kOr, std::move(should)));
  for (Node& n : must_not) must.push_back(Node::MakeNot(std::move(n), 0));
  return CombineClauses(NodeKind::kAnd, std::move(must));
}

Result<Node> QueryString(const json::value& body, Translation& t) {
  const json::object* o = body.if_object();
  const json::value* text = o ? o->if_contains("query") : nullptr;
  if (!text || !text->is_string()) return Status::InvalidArgument("[query_string] needs [query]");
  std::string default_field;
  bool default_or = true;
  if (const json::value* df = o->if_contains("default_field"); df && df->is_string()) {
    default_field = FieldName(df->as_string());
    if (default_field == "*") default_field.clear();
  }
  if (const json::value* op = o->if_contains("default_operator"); op && op->is_string()) {
    default_or = !(op->as_string() == "AND" || op->as_string() == "and");
  }
  auto node = TranslateQueryString(text->as_string(), default_field, default_or, t.now);
  if (!node.ok()) return node;
  if (auto s = t.Spend(CountLeaves(*node)); !s.ok()) return s;
  return node;
}

Result<Node> Translate(const json::value& q, Translation& t, int depth) {
  if (depth > kMaxDepth) return Status::InvalidArgument("query nests too deeply");
  const json::object* o = q.if_object();
  if (!o || o->size() != 1) {
    return Status::InvalidArgument("a query must be an object with exactly one query type");
  }
  const std::string_view type = o->begin()->key();
  const json::value& body = o->begin()->value();
  if (type == "match_all") return Node::MatchAll();
  if (type == "query_string") return QueryString(body, t);
  if (type == "match") return Match(body, false, t);
  if (type == "match_phrase") return Match(body, true, t);
  if (type == "term") return TermQuery(body, t);
  if (type == "terms") return TermsQuery(body, t);
  if (type == "range") return RangeQuery(body, t);
  if (type == "bool") return Bool(body, t, depth);
  if (type == "exists") {
    const json::object* b = body.if_object();
    const json::value* field = b ? b->if_contains("field") : nullptr;
    if (!field || !field->is_string()) return Status::InvalidArgument("[exists] needs [field]");
    if (auto s = t.Spend(1); !s.ok()) return s;
    return Node::MakeExists(FieldName(field->as_string()), 0);
  }
  return Unsupported(fmt::format("query type [{}]", type));
}

// Leaves on the message move to `field`; proximity works on the message only.
Status SetDefaultField(Node& n, const std::string& field) {
  const bool leaf = n.kind == NodeKind::kTerm || n.kind == NodeKind::kWildcard ||
                    n.kind == NodeKind::kRegex || n.kind == NodeKind::kFuzzy;
  if (leaf && n.term.field.empty()) n.term.field = field;
  if (n.kind == NodeKind::kNear && n.term.field.empty() && !query::IsMessageField(field)) {
    return Unsupported("proximity (\"a b\"~N) on a field other than the message");
  }
  for (Node& c : n.children) {
    if (auto s = SetDefaultField(c, field); !s.ok()) return s;
  }
  return Status::Ok();
}

}  // namespace

Result<Node> TranslateEsQuery(const json::value& q, TimeMs now) {
  Translation t{now};
  return Translate(q, t, 0);
}

Result<Node> TranslateQueryString(std::string_view text, std::string_view default_field,
                                  bool default_or, TimeMs now) {
  ParseLimits limits;
  limits.default_operator_or = default_or;
  limits.lowercase_operators = false;
  limits.now = now;
  auto parsed = ParseQuery(text, limits);
  if (auto* err = std::get_if<QueryError>(&parsed)) {
    return Status::InvalidArgument(fmt::format("failed to parse query [{}]: {} at position {}",
                                               text.substr(0, 200), err->reason, err->position));
  }
  Node root = std::move(std::get<Node>(parsed));
  if (!default_field.empty()) {
    if (auto s = SetDefaultField(root, std::string(default_field)); !s.ok()) return s;
  }
  return root;
}

Result<Node> TranslateIndexExpression(std::string_view expression) {
  std::vector<Node> any;
  std::size_t pos = 0;
  while (pos <= expression.size()) {
    std::size_t comma = expression.find(',', pos);
    if (comma == std::string_view::npos) comma = expression.size();
    std::string_view name = expression.substr(pos, comma - pos);
    pos = comma + 1;
    if (name.empty()) continue;
    if (name == "_all" || name == "*") return Node::MatchAll();
    const bool prefix = name.ends_with('*');
    if (prefix) name.remove_suffix(1);
    if (name.find_first_of("*?") != std::string_view::npos || name.starts_with('-')) {
      return Unsupported(fmt::format("index pattern [{}] (only a trailing * is)", name));
    }
    if (!storage::TextTokenizer::HasTokens(name)) return Node::MatchAll();
    any.push_back(Node::MakeTerm(query::Term{"_index", std::string(name), !prefix, prefix}, 0));
  }
  return CombineClauses(NodeKind::kOr, std::move(any));
}

// Epoch milliseconds as a bound: one past the times events can have selects
// what any farther bound would, and stays a number later arithmetic on keys
// can take (a double like 2e36 is no int64 at all).
constexpr TimeMs kLowestBound = kMinEventTime - 1, kHighestBound = kMaxEventTime;

Result<TimeMs> ResolveEsDate(const json::value& v, TimeMs now) {
  if (v.is_int64()) return std::clamp(v.as_int64(), kLowestBound, kHighestBound);
  if (v.is_uint64()) return std::min<std::uint64_t>(v.as_uint64(), kHighestBound);
  if (v.is_double() && std::isfinite(v.as_double())) {
    return static_cast<TimeMs>(std::clamp(v.as_double(), static_cast<double>(kLowestBound),
                                          static_cast<double>(kHighestBound)));
  }
  if (v.is_string()) {
    if (auto t = ParseTimeParam(v.as_string(), now)) return *t;
  }
  return Status::InvalidArgument(
      fmt::format("cannot parse date [{}]: use RFC 3339, epoch milliseconds or now-<n><unit>",
                  json::serialize(v).substr(0, 64)));
}

}  // namespace dashcam::api
