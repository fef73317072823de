// The query parser: a recursive-descent parser over QueryLexer's tokens
// (query_lexer.h), which has already built every leaf. The grammar, the
// meaning of + and - and the precedence are in query_parser.h.
//
// Failures do not throw: every step returns false after recording a
// QueryError, and callers return false in turn.
#include "api/query_parser.h"

#include <algorithm>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "api/query_lexer.h"

namespace dashcam::api {
namespace {

using query::Node;
using query::NodeKind;

// Each nesting level costs a few stack frames; keep that bounded whatever
// limits the caller passes.
constexpr std::size_t kMaxSupportedDepth = 256;

bool StartsClause(TokenKind kind) {
  switch (kind) {
    case TokenKind::kLeaf:
    case TokenKind::kOpen:
    case TokenKind::kNot:
    case TokenKind::kPlus:
    case TokenKind::kMinus:
    case TokenKind::kFieldGroup:
      return true;
    default:
      return false;
  }
}

// A clause with its + or - mark (0: none) and where the mark is.
struct Marked {
  Node node;
  char mark = 0;
  std::size_t mark_position = 0;
};

// Builds an And/Or of `clauses`, splicing in children of nested nodes of the
// same kind; a single clause stands for itself.
Node Combine(NodeKind kind, std::vector<Node> clauses) {
  if (clauses.size() == 1) return std::move(clauses.front());
  Node node{kind, clauses.front().position, {}, {}};
  for (Node& clause : clauses) {
    if (clause.kind != kind) {
      node.children.push_back(std::move(clause));
      continue;
    }
    for (Node& child : clause.children) node.children.push_back(std::move(child));
  }
  return node;
}

// A clause's mark applied in an AND: +x is x, -x is NOT x.
Node Resolve(Marked m) {
  if (m.mark == '-') return Node::MakeNot(std::move(m.node), m.mark_position);
  return std::move(m.node);
}

// An or_expr's operands, with Lucene's required/prohibited reading when any
// operand is marked (query_parser.h).
Node CombineOperands(std::vector<Marked> operands) {
  const bool marked =
      std::any_of(operands.begin(), operands.end(), [](const Marked& m) { return m.mark != 0; });
  std::vector<Node> required, optional, prohibited;
  for (Marked& m : operands) {
    if (!marked || m.mark == 0) {
      optional.push_back(std::move(m.node));
    } else if (m.mark == '+') {
      required.push_back(std::move(m.node));
    } else {
      prohibited.push_back(Resolve(std::move(m)));
    }
  }
  if (!marked) return Combine(NodeKind::kOr, std::move(optional));
  if (required.empty() && !optional.empty()) {
    required.push_back(Combine(NodeKind::kOr, std::move(optional)));
  }
  for (Node& n : prohibited) required.push_back(std::move(n));
  return Combine(NodeKind::kAnd, std::move(required));
}

class QueryParser {
 public:
  QueryParser(std::string_view text, const ParseLimits& limits)
      : lexer_(text, limits),
        max_depth_(std::min(limits.max_depth, kMaxSupportedDepth)),
        juxtaposition_is_or_(limits.default_operator_or) {}

  std::variant<Node, QueryError> Parse();

 private:
  bool Advance();
  bool Fail(std::size_t pos, std::string reason);
  bool Enter(std::size_t pos);
  // `after` names what precedes the operand, for errors: "AND", "'('", or
  // empty at the start of the query.
  bool ParseOr(std::string_view after, Node* out);
  bool ParseAnd(std::string_view after, Marked* out);
  bool ParseClause(std::string_view after, Marked* out);
  bool ParseUnary(std::string_view after, Node* out);
  bool ParsePrimary(std::string_view after, Node* out);
  bool ParseGroup(Node* out);
  bool ParseFieldGroup(Node* out);
  bool CloseGroup(std::size_t open);
  bool ExpectedTerm(std::string_view after);
  bool Unexpected();

  QueryLexer lexer_;
  const std::size_t max_depth_;
  const bool juxtaposition_is_or_;
  std::size_t depth_ = 0;  // open groups, NOTs and -marks around the current token
  Token token_;            // the current (lookahead) token
  QueryError error_;
};

std::variant<Node, QueryError> QueryParser::Parse() {
  if (!Advance()) return error_;
  if (token_.kind == TokenKind::kEnd) return Node::MatchAll(0);
  Node root;
  if (!ParseOr("", &root)) return error_;
  // ParseOr stops only at the end or at a token that cannot continue it.
  if (token_.kind != TokenKind::kEnd) {
    Unexpected();
    return error_;
  }
  return root;
}

bool QueryParser::Advance() {
  if (lexer_.Next(&token_)) return true;
  error_ = lexer_.error();
  return false;
}

bool QueryParser::Fail(std::size_t pos, std::string reason) {
  error_ = QueryError{std::move(reason), pos};
  return false;
}

bool QueryParser::Enter(std::size_t pos) {
  if (++depth_ <= max_depth_) return true;
  return Fail(pos, "query nests deeper than " + std::to_string(max_depth_) + " levels");
}

bool QueryParser::ParseOr(std::string_view after, Node* out) {
  std::vector<Marked> operands(1);
  if (!ParseAnd(after, &operands.back())) return false;
  while (token_.kind == TokenKind::kOr || (juxtaposition_is_or_ && StartsClause(token_.kind))) {
    std::string_view op = "OR";
    if (token_.kind == TokenKind::kOr) {
      op = token_.spelling;
      if (!Advance()) return false;
    }
    if (!ParseAnd(op, &operands.emplace_back())) return false;
  }
  *out = CombineOperands(std::move(operands));
  return true;
}

// A single marked clause keeps its mark for the or_expr; in longer ANDs the
// marks are resolved here.
bool QueryParser::ParseAnd(std::string_view after, Marked* out) {
  std::vector<Marked> clauses(1);
  if (!ParseClause(after, &clauses.back())) return false;
  while (true) {
    std::string_view op;  // empty: juxtaposition
    if (token_.kind == TokenKind::kAnd) {
      op = token_.spelling;
      if (!Advance()) return false;
    } else if (juxtaposition_is_or_ || !StartsClause(token_.kind)) {
      break;
    }
    if (!ParseClause(op, &clauses.emplace_back())) return false;
  }
  if (clauses.size() == 1) {
    *out = std::move(clauses.front());
    return true;
  }
  std::vector<Node> nodes;
  for (Marked& m : clauses) nodes.push_back(Resolve(std::move(m)));
  *out = Marked{Combine(NodeKind::kAnd, std::move(nodes)), 0, 0};
  return true;
}

bool QueryParser::ParseClause(std::string_view after, Marked* out) {
  if (token_.kind != TokenKind::kPlus && token_.kind != TokenKind::kMinus) {
    return ParseUnary(after, &out->node);
  }
  out->mark = token_.kind == TokenKind::kPlus ? '+' : '-';
  out->mark_position = token_.position;
  const std::string_view mark = token_.spelling;
  const bool nests = out->mark == '-';
  if ((nests && !Enter(token_.position)) || !Advance()) return false;
  if (!ParseUnary(mark, &out->node)) return false;
  if (nests) --depth_;
  return true;
}

// NOT chains are consumed in a loop, not by recursion, and count as depth.
bool QueryParser::ParseUnary(std::string_view after, Node* out) {
  std::vector<std::size_t> nots;
  while (token_.kind == TokenKind::kNot) {
    if (!Enter(token_.position)) return false;
    nots.push_back(token_.position);
    after = token_.spelling;
    if (!Advance()) return false;
  }
  if (!ParsePrimary(after, out)) return false;
  for (auto it = nots.rbegin(); it != nots.rend(); ++it) *out = Node::MakeNot(std::move(*out), *it);
  depth_ -= nots.size();
  return true;
}

bool QueryParser::ParsePrimary(std::string_view after, Node* out) {
  switch (token_.kind) {
    case TokenKind::kLeaf:
      *out = std::move(token_.leaf);
      return Advance();
    case TokenKind::kOpen:
      return ParseGroup(out);
    case TokenKind::kFieldGroup:
      return ParseFieldGroup(out);
    default:
      return ExpectedTerm(after);
  }
}

bool QueryParser::ParseGroup(Node* out) {
  const std::size_t open = token_.position;
  if (!Enter(open) || !Advance()) return false;
  if (!ParseOr("'('", out)) return false;
  return CloseGroup(open);
}

// `field:(` ... `)`: the lexer gives leaves inside the group's field. The
// token after `(` is read with the field set, the one after `)` without.
bool QueryParser::ParseFieldGroup(Node* out) {
  const std::size_t open = token_.open;
  if (!Enter(open)) return false;
  lexer_.SetGroupField(token_.field);
  if (!Advance() || !ParseOr("'('", out)) return false;
  lexer_.SetGroupField("");
  return CloseGroup(open);
}

// The current token must be the `)` of the group opened at `open`; an
// optional boost may follow it.
bool QueryParser::CloseGroup(std::size_t open) {
  if (token_.kind != TokenKind::kClose) {
    return Fail(token_.position, "expected ')' to close the '(' at byte " + std::to_string(open));
  }
  --depth_;
  if (!Advance()) return false;
  return token_.kind != TokenKind::kBoost || Advance();
}

// The current token cannot start an operand.
bool QueryParser::ExpectedTerm(std::string_view after) {
  const bool is_binary = token_.kind == TokenKind::kAnd || token_.kind == TokenKind::kOr;
  if (is_binary && (after.empty() || after == "'('")) {
    return Fail(token_.position, "expected a term before " + std::string(token_.spelling));
  }
  if (token_.kind == TokenKind::kBoost) return Unexpected();
  if (after.empty()) return Unexpected();
  if (after == "+" || after == "-") {
    return Fail(token_.position, "expected a term right after '" + std::string(after) + "'");
  }
  return Fail(token_.position, "expected a term after " + std::string(after));
}

// A token that cannot continue the query where it stands.
bool QueryParser::Unexpected() {
  if (token_.kind == TokenKind::kBoost) {
    return Fail(token_.position, "a boost (^) must directly follow a term or a ')'");
  }
  return Fail(token_.position, "unexpected ')'");
}

}  // namespace

std::variant<query::Node, QueryError> ParseQuery(std::string_view text, const ParseLimits& limits) {
  if (text.size() > limits.max_bytes) {
    return QueryError{"query is longer than " + std::to_string(limits.max_bytes) + " bytes",
                      limits.max_bytes};
  }
  try {
    return QueryParser(text, limits).Parse();
  } catch (const std::bad_alloc&) {
    return QueryError{"out of memory while parsing the query", 0};
  }
}

}  // namespace dashcam::api
