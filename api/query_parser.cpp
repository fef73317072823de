// The query parser: a lexer that turns text into operator and leaf tokens,
// and a recursive-descent parser over them (grammar below). See
// query_parser.h for the language and the error contract.
//
//   query   := <empty> | or_expr
//   or_expr := and_expr (OR and_expr)*
//   and_expr:= unary ((AND)? unary)*
//   unary   := NOT* primary
//   primary := '(' or_expr ')' | leaf
//
// All leaf syntax (terms, phrases, fields, prefixes, and the rejection of
// syntax not supported yet) lives in the lexer, so new leaf kinds such as
// ranges or regexes only add a Lex* function and a Node kind.
//
// Failures do not throw: every step returns false after recording a
// QueryError, and callers return false in turn.
#include "api/query_parser.h"

#include <algorithm>
#include <charconv>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "storage/text_tokenizer.h"

namespace dashcam::api {
namespace {

using query::Node;
using query::NodeKind;
using query::Term;

// Each nesting level costs a few stack frames; keep that bounded whatever
// limits the caller passes.
constexpr std::size_t kMaxSupportedDepth = 256;

constexpr const char* kRangeReason =
    "range queries are not supported yet ([a TO b], {a TO b}, >, <); escape the character with "
    "\\ to search for it";

bool IsAsciiAlnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}
bool IsFieldStart(char c) {
  return IsAsciiAlnum(c) || c == '_' || c == '@';
}
bool IsFieldChar(char c) {
  return IsFieldStart(c) || c == '.' || c == '-';
}

// Bytes of whitespace at text[pos] (0 if none). Besides ASCII whitespace,
// no-break space and the ideographic space (typed by CJK input methods)
// separate clauses.
std::size_t SpaceLength(std::string_view text, std::size_t pos) {
  switch (text[pos]) {
    case ' ':
    case '\t':
    case '\n':
    case '\r':
    case '\f':
    case '\v':
      return 1;
    default:
      break;
  }
  const std::string_view rest = text.substr(pos);
  if (rest.starts_with("\xC2\xA0")) return 2;
  if (rest.starts_with("\xE3\x80\x80")) return 3;
  return 0;
}

// True when `text` is a number a field value may be compared with (`-1`, `2.5e3`).
bool IsNumber(std::string_view text) {
  double value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  return ec == std::errc() && ptr == end;
}

bool IsSearchable(const Term& term) {
  return storage::TextTokenizer::HasTokens(term.text) ||
         (!term.field.empty() && IsNumber(term.text));
}

enum class TokenKind { kEnd, kOpen, kClose, kAnd, kOr, kNot, kLeaf };

struct Token {
  TokenKind kind = TokenKind::kEnd;
  std::size_t position = 0;  // kEnd: the length of the text
  Node leaf;                 // kLeaf only: a Term or MatchAll node
};

bool StartsClause(TokenKind kind) {
  return kind == TokenKind::kLeaf || kind == TokenKind::kOpen || kind == TokenKind::kNot;
}

// Splits query text into tokens, one per Next() call. Leaf tokens arrive
// fully unescaped and validated.
class QueryLexer {
 public:
  explicit QueryLexer(std::string_view text) : text_(text) {}

  // Reads the next token into *out; false on a syntax error (see error()).
  bool Next(Token* out);
  const QueryError& error() const { return error_; }

 private:
  bool Fail(std::size_t pos, std::string reason);
  bool AtWordEnd(std::size_t pos) const;
  bool WordIs(std::string_view word) const;
  bool Emit(TokenKind kind, std::size_t length, Token* out);
  bool LexWord(Token* out);
  bool LexFieldValue(std::string field, std::size_t start, Token* out);
  bool CheckBareStart();
  bool CheckValueStart();
  bool CheckInsideWord(char c);
  bool ScanWordText(Term* term);
  bool LexPhrase(std::string field, std::size_t start, Token* out);
  bool ScanPhraseText(Term* term);
  bool FinishTerm(Term term, std::size_t start, Token* out);

  std::string_view text_;
  std::size_t pos_ = 0;
  QueryError error_;
};

bool QueryLexer::Fail(std::size_t pos, std::string reason) {
  error_ = QueryError{std::move(reason), pos};
  return false;
}

// Words (bare terms and unquoted values) end at whitespace, parentheses and
// double quotes.
bool QueryLexer::AtWordEnd(std::size_t pos) const {
  if (pos >= text_.size()) return true;
  const char c = text_[pos];
  return c == '(' || c == ')' || c == '"' || SpaceLength(text_, pos) > 0;
}

// True when the word at pos_ is exactly `word`, unescaped.
bool QueryLexer::WordIs(std::string_view word) const {
  return text_.substr(pos_).starts_with(word) && AtWordEnd(pos_ + word.size());
}

bool QueryLexer::Emit(TokenKind kind, std::size_t length, Token* out) {
  out->kind = kind;
  pos_ += length;
  return true;
}

bool QueryLexer::Next(Token* out) {
  while (pos_ < text_.size()) {
    const std::size_t space = SpaceLength(text_, pos_);
    if (space == 0) break;
    pos_ += space;
  }
  *out = Token{};
  out->position = pos_;
  if (pos_ == text_.size()) return Emit(TokenKind::kEnd, 0, out);
  switch (text_[pos_]) {
    case '(':
      return Emit(TokenKind::kOpen, 1, out);
    case ')':
      return Emit(TokenKind::kClose, 1, out);
    case '"':
      return LexPhrase("", pos_, out);
    default:
      return LexWord(out);
  }
}

// An operator, `*`, `field:value` or a bare term.
bool QueryLexer::LexWord(Token* out) {
  const std::size_t start = pos_;
  if (WordIs("AND")) return Emit(TokenKind::kAnd, 3, out);
  if (WordIs("OR")) return Emit(TokenKind::kOr, 2, out);
  if (WordIs("NOT")) return Emit(TokenKind::kNot, 3, out);
  if (WordIs("&&")) return Fail(start, "'&&' is not supported; write AND");
  if (WordIs("||")) return Fail(start, "'||' is not supported; write OR");
  for (std::string_view all : {"*", "*:*"}) {
    if (!WordIs(all)) continue;
    out->leaf = Node::MatchAll(start);
    return Emit(TokenKind::kLeaf, all.size(), out);
  }
  std::size_t name_end = start;
  if (IsFieldStart(text_[start])) {
    while (name_end < text_.size() && IsFieldChar(text_[name_end])) ++name_end;
  }
  if (name_end > start && name_end < text_.size() && text_[name_end] == ':') {
    pos_ = name_end + 1;
    return LexFieldValue(std::string(text_.substr(start, name_end - start)), start, out);
  }
  Term term;
  if (!CheckBareStart() || !ScanWordText(&term)) return false;
  return FinishTerm(std::move(term), start, out);
}

// pos_ is just past `field:`.
bool QueryLexer::LexFieldValue(std::string field, std::size_t start, Token* out) {
  if (field == "_exists_") {
    return Fail(start, "existence queries (_exists_:field) are not supported yet");
  }
  if (pos_ == text_.size() || SpaceLength(text_, pos_) > 0 || text_[pos_] == ')') {
    return Fail(pos_, "expected a value after '" + field + ":'");
  }
  if (text_[pos_] == '"') return LexPhrase(std::move(field), start, out);
  if (text_[pos_] == '(') {
    return Fail(pos_,
                "field groups (field:(a b)) are not supported yet; write field:a AND field:b");
  }
  if (WordIs("*")) return Fail(start, "existence queries (field:*) are not supported yet");
  Term term;
  term.field = std::move(field);
  if (!CheckValueStart() || !ScanWordText(&term)) return false;
  return FinishTerm(std::move(term), start, out);
}

// Lucene's prefix operators; a field value may start with them (`delta:-1`).
bool QueryLexer::CheckBareStart() {
  const char c = text_[pos_];
  if (c == '+' || c == '-' || c == '!') {
    return Fail(pos_, std::string("the prefix operator '") + c +
                          "' is not supported yet; write NOT, or escape it (\\" + c +
                          ") to search for it");
  }
  return CheckValueStart();
}

bool QueryLexer::CheckValueStart() {
  const char c = text_[pos_];
  if (c == '/') {
    return Fail(pos_,
                "regular expressions (/.../) are not supported yet; escape the '/' (\\/) or quote "
                "the text to search for it");
  }
  if (c == '<' || c == '>') return Fail(pos_, kRangeReason);
  return true;
}

// Characters Lucene gives a meaning inside a word, which we do not support yet.
bool QueryLexer::CheckInsideWord(char c) {
  switch (c) {
    case '*':
    case '?':
      return Fail(pos_,
                  "wildcard queries (? and * other than at the end) are not supported yet; escape "
                  "the character with \\ to search for it");
    case '~':
      return Fail(pos_, "fuzzy and proximity queries (~) are not supported yet");
    case '^':
      return Fail(pos_, "boosts (^) are not supported yet");
    case '[':
    case ']':
    case '{':
    case '}':
      return Fail(pos_, kRangeReason);
    default:
      return true;
  }
}

// Reads an unquoted word into term->text, unescaping it; a trailing
// unescaped `*` sets term->prefix.
bool QueryLexer::ScanWordText(Term* term) {
  while (!AtWordEnd(pos_)) {
    const char c = text_[pos_];
    if (c == '\\') {
      if (pos_ + 1 == text_.size())
        return Fail(pos_, "trailing backslash: expected a character to escape");
      term->text += text_[pos_ + 1];
      pos_ += 2;
      continue;
    }
    if (c == '*' && AtWordEnd(pos_ + 1)) {
      term->prefix = true;
      ++pos_;
      break;
    }
    if (!CheckInsideWord(c)) return false;
    term->text += c;
    ++pos_;
  }
  return true;
}

// pos_ is at the opening quote; `start` is where the clause starts.
bool QueryLexer::LexPhrase(std::string field, std::size_t start, Token* out) {
  Term term;
  term.field = std::move(field);
  term.phrase = true;
  if (!ScanPhraseText(&term)) return false;
  if (pos_ < text_.size()) {
    switch (text_[pos_]) {
      case '*':
        term.prefix = true;
        ++pos_;
        break;
      case '~':
        return Fail(pos_, "fuzzy and proximity queries (~) are not supported yet");
      case '^':
        return Fail(pos_, "boosts (^) are not supported yet");
      default:
        break;
    }
  }
  return FinishTerm(std::move(term), start, out);
}

// Reads from the opening quote to just past the closing one.
bool QueryLexer::ScanPhraseText(Term* term) {
  const std::size_t open = pos_++;
  while (pos_ < text_.size()) {
    const char c = text_[pos_];
    if (c == '"') {
      ++pos_;
      return true;
    }
    if (c == '\\') {
      if (pos_ + 1 == text_.size())
        return Fail(pos_, "trailing backslash: expected a character to escape");
      ++pos_;
    }
    term->text += text_[pos_++];
  }
  return Fail(text_.size(), "unterminated phrase: expected '\"' to close the one at byte " +
                                std::to_string(open));
}

bool QueryLexer::FinishTerm(Term term, std::size_t start, Token* out) {
  if (!IsSearchable(term)) return Fail(start, "term has no letters or digits to search");
  out->leaf = Node::MakeTerm(std::move(term), start);
  return Emit(TokenKind::kLeaf, 0, out);
}

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

class QueryParser {
 public:
  QueryParser(std::string_view text, const ParseLimits& limits)
      : lexer_(text),
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
  bool ParseAnd(std::string_view after, Node* out);
  bool ParseUnary(std::string_view after, Node* out);
  bool ParsePrimary(std::string_view after, Node* out);
  bool ParseGroup(Node* out);
  bool ExpectedTerm(std::string_view after);

  QueryLexer lexer_;
  const std::size_t max_depth_;
  const bool juxtaposition_is_or_;
  std::size_t depth_ = 0;  // open groups and NOTs around the current token
  Token token_;            // the current (lookahead) token
  QueryError error_;
};

std::variant<Node, QueryError> QueryParser::Parse() {
  if (!Advance()) return error_;
  if (token_.kind == TokenKind::kEnd) return Node::MatchAll(0);
  Node root;
  if (!ParseOr("", &root)) return error_;
  // ParseOr stops only at the end or at a ')' that closes nothing.
  if (token_.kind != TokenKind::kEnd) return QueryError{"unexpected ')'", token_.position};
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
  std::vector<Node> clauses(1);
  if (!ParseAnd(after, &clauses.back())) return false;
  while (token_.kind == TokenKind::kOr || (juxtaposition_is_or_ && StartsClause(token_.kind))) {
    if (token_.kind == TokenKind::kOr && !Advance()) return false;
    if (!ParseAnd("OR", &clauses.emplace_back())) return false;
  }
  *out = Combine(NodeKind::kOr, std::move(clauses));
  return true;
}

bool QueryParser::ParseAnd(std::string_view after, Node* out) {
  std::vector<Node> clauses(1);
  if (!ParseUnary(after, &clauses.back())) return false;
  while (true) {
    std::string_view op;  // empty: juxtaposition
    if (token_.kind == TokenKind::kAnd) {
      if (!Advance()) return false;
      op = "AND";
    } else if (juxtaposition_is_or_ || !StartsClause(token_.kind)) {
      break;
    }
    if (!ParseUnary(op, &clauses.emplace_back())) return false;
  }
  *out = Combine(NodeKind::kAnd, std::move(clauses));
  return true;
}

// NOT chains are consumed in a loop, not by recursion, and count as depth.
bool QueryParser::ParseUnary(std::string_view after, Node* out) {
  std::vector<std::size_t> nots;
  while (token_.kind == TokenKind::kNot) {
    if (!Enter(token_.position)) return false;
    nots.push_back(token_.position);
    if (!Advance()) return false;
    after = "NOT";
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
    default:
      return ExpectedTerm(after);
  }
}

bool QueryParser::ParseGroup(Node* out) {
  const std::size_t open = token_.position;
  if (!Enter(open) || !Advance()) return false;
  if (!ParseOr("'('", out)) return false;
  if (token_.kind != TokenKind::kClose) {
    return Fail(token_.position, "expected ')' to close the '(' at byte " + std::to_string(open));
  }
  --depth_;
  return Advance();
}

// The current token cannot start an operand.
bool QueryParser::ExpectedTerm(std::string_view after) {
  const bool is_binary = token_.kind == TokenKind::kAnd || token_.kind == TokenKind::kOr;
  if (is_binary && (after.empty() || after == "'('")) {
    const char* op = token_.kind == TokenKind::kAnd ? "AND" : "OR";
    return Fail(token_.position, std::string("expected a term before ") + op);
  }
  if (after.empty()) return Fail(token_.position, "unexpected ')'");
  return Fail(token_.position, "expected a term after " + std::string(after));
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
