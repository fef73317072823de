// The query lexer: operators, marks and leaves. See query_lexer.h; the
// language is described in query_parser.h and its meaning in query_ast.h.
//
// Failures do not throw: every step returns false after recording a
// QueryError, and callers return false in turn.
#include "api/query_lexer.h"

#include <charconv>
#include <utility>

#include <re2/re2.h>

#include "api/date_math.h"
#include "storage/ascii.h"
#include "storage/attrs_codec.h"
#include "storage/text_tokenizer.h"

namespace dashcam::api {
namespace {

using query::Node;
using query::NodeKind;
using query::Term;

// Largest distance in "a b"~N: far beyond any useful proximity.
constexpr unsigned kMaxNearDistance = 1000;

using storage::IsAsciiAlnum;
using storage::IsAsciiDigit;

bool IsFieldStart(char c) {
  return IsAsciiAlnum(c) || c == '_' || c == '@';
}
bool IsFieldChar(char c) {
  return IsFieldStart(c) || c == '.' || c == '-';
}

// True when `text` is a number a field value may be compared with (`-1`, `2.5e3`).
bool IsNumber(std::string_view text) {
  double value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  return ec == std::errc() && ptr == end;
}

// The code point of `text` that ends at its last byte, as bytes.
std::string_view LastCharacter(std::string_view text) {
  std::size_t i = text.size();
  while (i > 0 && (static_cast<unsigned char>(text[i - 1]) & 0xC0) == 0x80) --i;
  return text.substr(i > 0 ? i - 1 : 0);
}

std::size_t CountTokens(std::string_view text) {
  std::size_t n = 0;
  storage::TextTokenizer::Tokenize(text, [&](const storage::TokenSpan&) {
    ++n;
    return true;
  });
  return n;
}

std::string Quoted(std::string_view s) {
  // Not "'" + std::string(s) + "'": GCC 12 warns of a memcpy past the
  // maximum object size there (-Wstringop-overflow, a known false positive).
  std::string out;
  out.reserve(s.size() + 2);
  out += '\'';
  out += s;
  out += '\'';
  return out;
}

}  // namespace

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

// An unquoted value: its text with escapes resolved, the same text for a
// wildcard pattern (escaped * and ? become spaces), and what suffixes it had.
struct QueryLexer::Word {
  std::string text;
  std::string pattern;
  std::size_t wildcards = 0;        // unescaped * and ?
  bool ends_with_star = false;      // the last character is an unescaped *
  bool star_follows_token = false;  // ... right after a letter or digit
  int fuzzy = -1;                   // ~N: N, else -1
  std::size_t tilde = 0;            // where the ~ is
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
  out->spelling = text_.substr(pos_, length);
  pos_ += length;
  return true;
}

bool QueryLexer::EmitLeaf(Node leaf, Token* out) {
  out->kind = TokenKind::kLeaf;
  out->leaf = std::move(leaf);
  return true;
}

void QueryLexer::SkipSpaces() {
  while (pos_ < text_.size()) {
    const std::size_t space = SpaceLength(text_, pos_);
    if (space == 0) break;
    pos_ += space;
  }
}

bool QueryLexer::Next(Token* out) {
  SkipSpaces();
  *out = Token{};
  out->position = pos_;
  if (pos_ == text_.size()) return Emit(TokenKind::kEnd, 0, out);
  switch (text_[pos_]) {
    case '(':
      return Emit(TokenKind::kOpen, 1, out);
    case ')':
      return Emit(TokenKind::kClose, 1, out);
    case '"':
      return LexValue(group_field_, pos_, out);
    case '^':
      out->kind = TokenKind::kBoost;
      return ScanBoost();
    default:
      return LexWord(out);
  }
}

// Operators and marks at pos_; *matched is false when there is none.
bool QueryLexer::LexOperator(Token* out, bool* matched) {
  *matched = true;
  if (WordIs("AND")) return Emit(TokenKind::kAnd, 3, out);
  if (WordIs("OR")) return Emit(TokenKind::kOr, 2, out);
  if (WordIs("NOT")) return Emit(TokenKind::kNot, 3, out);
  if (limits_.lowercase_operators) {
    if (WordIs("and")) return Emit(TokenKind::kAnd, 3, out);
    if (WordIs("or")) return Emit(TokenKind::kOr, 2, out);
    if (WordIs("not")) return Emit(TokenKind::kNot, 3, out);
  }
  const std::string_view rest = text_.substr(pos_);
  if (rest.starts_with("&&")) return Emit(TokenKind::kAnd, 2, out);
  if (rest.starts_with("||")) return Emit(TokenKind::kOr, 2, out);
  if (rest[0] == '!') return Emit(TokenKind::kNot, 1, out);
  if (rest[0] == '+' || rest[0] == '-') {
    if (AtWordEnd(pos_ + 1) && !(pos_ + 1 < text_.size() && text_[pos_ + 1] == '"') &&
        !(pos_ + 1 < text_.size() && text_[pos_ + 1] == '(')) {
      return Fail(pos_ + 1, std::string("expected a term right after '") + rest[0] + "'");
    }
    return Emit(rest[0] == '+' ? TokenKind::kPlus : TokenKind::kMinus, 1, out);
  }
  *matched = false;
  return true;
}

// An operator, a mark, `*`, `field:value` or a bare value.
bool QueryLexer::LexWord(Token* out) {
  const std::size_t start = pos_;
  bool matched = false;
  if (!LexOperator(out, &matched)) return false;
  if (matched) return true;
  if (WordIs("*") || WordIs("*:*")) {
    const bool exists = !group_field_.empty() && WordIs("*");
    pos_ += WordIs("*") ? 1 : 3;
    return EmitLeaf(exists ? Node::MakeExists(group_field_, start) : Node::MatchAll(start), out);
  }
  std::size_t name_end = start;
  if (IsFieldStart(text_[start])) {
    while (name_end < text_.size() && IsFieldChar(text_[name_end])) ++name_end;
  }
  if (name_end > start && name_end < text_.size() && text_[name_end] == ':') {
    if (!group_field_.empty()) {
      return Fail(start, "a field group (" + group_field_ +
                             ":(...)) cannot contain another field; close the group first");
    }
    std::string field(text_.substr(start, name_end - start));
    pos_ = name_end + 1;
    if (field == "_exists_") return LexExists(start, out);
    return LexFieldValue(std::move(field), start, out);
  }
  return LexValue(group_field_, start, out);
}

// pos_ is just past `_exists_:`.
bool QueryLexer::LexExists(std::size_t start, Token* out) {
  std::size_t end = pos_;
  if (end < text_.size() && IsFieldStart(text_[end])) {
    while (end < text_.size() && IsFieldChar(text_[end])) ++end;
  }
  if (end == pos_ || !AtWordEnd(end)) {
    return Fail(end == pos_ ? pos_ : end, "expected a field name after '_exists_:'");
  }
  std::string field(text_.substr(pos_, end - pos_));
  pos_ = end;
  return EmitLeaf(Node::MakeExists(std::move(field), start), out);
}

// pos_ is just past `field:`.
bool QueryLexer::LexFieldValue(std::string field, std::size_t start, Token* out) {
  if (pos_ == text_.size() || SpaceLength(text_, pos_) > 0 || text_[pos_] == ')') {
    return Fail(pos_, "expected a value after '" + field + ":'");
  }
  if (text_[pos_] == '(') {
    out->kind = TokenKind::kFieldGroup;
    out->field = std::move(field);
    out->open = pos_++;
    return true;
  }
  if (WordIs("*")) {
    ++pos_;
    return EmitLeaf(Node::MakeExists(std::move(field), start), out);
  }
  return LexValue(std::move(field), start, out);
}

// A value for `field` (empty: the message) at pos_; the clause began at `start`.
bool QueryLexer::LexValue(std::string field, std::size_t start, Token* out) {
  switch (text_[pos_]) {
    case '"':
      return LexPhrase(std::move(field), start, out);
    case '/':
      return LexRegex(std::move(field), start, out);
    case '[':
    case '{':
      if (field.empty()) {
        return Fail(pos_, "a range needs a field: write field:[a TO b]; escape the '" +
                              std::string(1, text_[pos_]) + "' to search for it");
      }
      return LexRange(std::move(field), start, out);
    case '<':
    case '>':
      if (field.empty()) {
        return Fail(pos_, "a comparison needs a field: write field:" + std::string(1, text_[pos_]) +
                              "10; escape the '" + std::string(1, text_[pos_]) +
                              "' to search for it");
      }
      return LexComparison(std::move(field), start, out);
    case ']':
    case '}':
      return Fail(pos_, Quoted(text_.substr(pos_, 1)) + " closes no range");
    case '~':
    case '^':
      return Fail(pos_, "expected a term before " + Quoted(text_.substr(pos_, 1)));
    default:
      return LexWordValue(std::move(field), start, out);
  }
}

bool QueryLexer::LexWordValue(std::string field, std::size_t start, Token* out) {
  Word word;
  const std::size_t value_pos = pos_;
  if (!ScanWord(&word)) return false;
  return FinishWord(std::move(word), std::move(field), start, value_pos, out);
}

// Reads an unquoted word up to its end, with its ~N and ^N suffixes.
bool QueryLexer::ScanWord(Word* word) {
  while (!AtWordEnd(pos_)) {
    const char c = text_[pos_];
    switch (c) {
      case '\\': {
        if (pos_ + 1 == text_.size())
          return Fail(pos_, "trailing backslash: expected a character to escape");
        const char escaped = text_[pos_ + 1];
        word->text += escaped;
        word->pattern += escaped == '*' || escaped == '?' ? ' ' : escaped;
        word->ends_with_star = false;
        pos_ += 2;
        continue;
      }
      case '*':
      case '?':
        ++word->wildcards;
        word->ends_with_star = c == '*';
        word->star_follows_token =
            c == '*' && storage::TextTokenizer::HasTokens(LastCharacter(word->text));
        word->text += c;
        word->pattern += c;
        ++pos_;
        continue;
      case '~':
        return ScanTilde(word);
      case '^':
        return ScanBoost() && (AtWordEnd(pos_) || Fail(pos_, "expected a space after the boost"));
      case '[':
      case ']':
      case '{':
      case '}':
        return Fail(pos_, Quoted(std::string(1, c)) +
                              " belongs to a range (field:[a TO b]); escape it (\\" + c +
                              ") to search for it");
      case ':':
        if (word->wildcards > 0) {
          return Fail(pos_,
                      "field names cannot contain wildcards; escape the ':' (\\:) to "
                      "search for it");
        }
        break;
      default:
        break;
    }
    word->text += c;
    word->pattern += c;
    word->ends_with_star = false;
    ++pos_;
  }
  return true;
}

// pos_ is at `~` after a word: an edit distance, then optionally a boost.
bool QueryLexer::ScanTilde(Word* word) {
  word->tilde = pos_++;
  word->fuzzy = 2;  // Lucene's default for `term~`
  if (pos_ < text_.size() && IsAsciiDigit(text_[pos_])) {
    word->fuzzy = text_[pos_++] - '0';
    if (word->fuzzy > 2 ||
        (pos_ < text_.size() && (IsAsciiDigit(text_[pos_]) || text_[pos_] == '.'))) {
      return Fail(word->tilde + 1, "expected an edit distance of 0, 1 or 2 after '~'");
    }
  }
  if (pos_ < text_.size() && text_[pos_] == '^' && !ScanBoost()) return false;
  if (!AtWordEnd(pos_)) {
    return Fail(pos_, "expected an edit distance of 0, 1 or 2 after '~', then a space");
  }
  return true;
}

// pos_ is at `^`: a boost, which changes nothing (hits are not scored).
bool QueryLexer::ScanBoost() {
  const std::size_t caret = pos_++;
  const std::size_t digits = pos_;
  while (pos_ < text_.size() && (IsAsciiDigit(text_[pos_]) || text_[pos_] == '.')) ++pos_;
  if (pos_ == digits || !IsNumber(text_.substr(digits, pos_ - digits))) {
    return Fail(caret + 1, "expected a number after '^' (a boost)");
  }
  return true;
}

bool QueryLexer::FinishWord(Word word, std::string field, std::size_t start, std::size_t value_pos,
                            Token* out) {
  Term term;
  term.field = std::move(field);
  if (word.fuzzy >= 0) {
    if (word.wildcards > 0) {
      return Fail(word.tilde, "fuzzy (~) cannot be combined with wildcards (* ?)");
    }
    if (term.field == query::kTimestampField || term.field == query::kIdField) {
      return Fail(word.tilde, "fuzzy (~) is not supported on " + term.field);
    }
    // A keyword field's fuzzy term is its whole value (query_ast.h).
    if (storage::IsKeywordField(term.field) ? word.text.empty() : CountTokens(word.text) != 1) {
      return Fail(start, "fuzzy (~) takes a single word (letters and digits only)");
    }
    term.text = std::move(word.text);
    term.distance = static_cast<unsigned>(word.fuzzy);
    return EmitLeaf(Node::MakeLeaf(NodeKind::kFuzzy, std::move(term), start), out);
  }
  const bool prefix = word.wildcards == 1 && word.ends_with_star && word.star_follows_token;
  if (word.wildcards > 0 && !prefix) {
    if (term.field == query::kTimestampField || term.field == query::kIdField) {
      return Fail(value_pos, "wildcards (* ?) are not supported on " + term.field +
                                 (term.field == query::kIdField ? "" : "; use a range"));
    }
    if (word.pattern.find_first_not_of('*') == std::string::npos) {
      return EmitLeaf(term.field.empty() ? Node::MatchAll(start)
                                         : Node::MakeExists(std::move(term.field), start),
                      out);
    }
    term.text = std::move(word.pattern);
    return EmitLeaf(Node::MakeLeaf(NodeKind::kWildcard, std::move(term), start), out);
  }
  term.text = std::move(word.text);
  if (prefix) {
    term.text.pop_back();
    term.prefix = true;
  }
  return FinishTerm(std::move(term), start, value_pos, out);
}

// pos_ is at the opening quote; `start` is where the clause starts.
bool QueryLexer::LexPhrase(std::string field, std::size_t start, Token* out) {
  const std::size_t value_pos = pos_;
  Term term;
  term.field = std::move(field);
  term.phrase = true;
  if (!ScanPhraseText(&term.text)) return false;
  bool near = false;
  if (pos_ < text_.size() && text_[pos_] == '*') {
    term.prefix = true;
    ++pos_;
  } else if (pos_ < text_.size() && text_[pos_] == '~') {
    const std::size_t tilde = pos_++;
    unsigned n = 0;
    const std::size_t digits = pos_;
    while (pos_ < text_.size() && IsAsciiDigit(text_[pos_]) && n <= kMaxNearDistance) {
      n = n * 10 + static_cast<unsigned>(text_[pos_++] - '0');
    }
    if (pos_ == digits || n > kMaxNearDistance ||
        (pos_ < text_.size() && IsAsciiDigit(text_[pos_]))) {
      return Fail(tilde + 1, "expected a distance from 0 to " + std::to_string(kMaxNearDistance) +
                                 " after '~' (proximity: \"a b\"~3)");
    }
    if (!query::IsMessageField(term.field)) {
      return Fail(tilde, "proximity (\"a b\"~N) is supported on the message only");
    }
    near = true;
    term.distance = n;
  }
  if (pos_ < text_.size() && text_[pos_] == '^' && !ScanBoost()) return false;
  if (near) {
    if (!storage::TextTokenizer::HasTokens(term.text)) {
      return Fail(start, "term has no letters or digits to search");
    }
    return EmitLeaf(Node::MakeLeaf(NodeKind::kNear, std::move(term), start), out);
  }
  return FinishTerm(std::move(term), start, value_pos, out);
}

// Reads from the opening quote to just past the closing one.
bool QueryLexer::ScanPhraseText(std::string* text) {
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
    *text += text_[pos_++];
  }
  return Fail(text_.size(), "unterminated phrase: expected '\"' to close the one at byte " +
                                std::to_string(open));
}

// pos_ is at the opening slash.
bool QueryLexer::LexRegex(std::string field, std::size_t start, Token* out) {
  const std::size_t open = pos_++;
  if (field == query::kTimestampField || field == query::kIdField) {
    return Fail(open, "regular expressions are not supported on " + field);
  }
  Term term;
  term.field = std::move(field);
  bool closed = false;
  while (pos_ < text_.size() && !closed) {
    const char c = text_[pos_++];
    if (c == '/') {
      closed = true;
    } else if (c == '\\') {
      if (pos_ == text_.size()) return Fail(pos_ - 1, "trailing backslash: expected a character");
      if (text_[pos_] != '/') term.text += '\\';
      term.text += text_[pos_++];
    } else {
      term.text += c;
    }
  }
  if (!closed) {
    return Fail(text_.size(),
                "unterminated regular expression: expected '/' to close the one at "
                "byte " +
                    std::to_string(open));
  }
  if (pos_ < text_.size() && text_[pos_] == '^' && !ScanBoost()) return false;
  if (!AtWordEnd(pos_)) {
    return Fail(pos_,
                "expected a space or an operator after the regular expression that ends "
                "at byte " +
                    std::to_string(pos_ - 1) +
                    "; to search for a path, quote it or escape each '/' (\\/)");
  }
  RE2::Options options;
  options.set_log_errors(false);
  RE2 re(term.text, options);
  if (!re.ok()) return Fail(open, "invalid regular expression: " + re.error());
  return EmitLeaf(Node::MakeLeaf(NodeKind::kRegex, std::move(term), start), out);
}

// A range bound at pos_: a quoted phrase or a word ending at whitespace (or
// at ] } inside brackets). `*` alone is an open bound.
bool QueryLexer::ScanBound(bool in_brackets, std::string* text, bool* open) {
  *open = false;
  const std::size_t start = pos_;
  if (text_[pos_] == '"') {
    if (!ScanPhraseText(text)) return false;
    return !text->empty() || Fail(start, "expected a non-empty bound");
  }
  bool escaped_any = false;
  while (pos_ < text_.size() && SpaceLength(text_, pos_) == 0) {
    const char c = text_[pos_];
    if (in_brackets ? (c == ']' || c == '}') : (c == '(' || c == ')' || c == '"')) break;
    if (c == '\\') {
      if (pos_ + 1 == text_.size())
        return Fail(pos_, "trailing backslash: expected a character to escape");
      escaped_any = true;
      ++pos_;
    }
    *text += text_[pos_++];
  }
  *open = *text == "*" && !escaped_any;
  if (text->empty()) return Fail(start, "expected a non-empty bound");
  return true;
}

bool QueryLexer::SetBound(const std::string& field, std::string text, std::size_t pos, bool lower,
                          bool inclusive, query::Range* range) {
  if (field == query::kTimestampField) {
    auto date = ResolveDate(text, limits_.now);
    if (auto* err = std::get_if<DateError>(&date)) return Fail(pos + err->offset, err->reason);
    const DatePeriod& period = std::get<DatePeriod>(date);
    // Start of the period for [lower and upper}, its end for {lower and upper].
    const bool first = lower == inclusive;
    text = std::to_string(first ? period.first : period.last);
  }
  (lower ? range->lower : range->upper) = std::move(text);
  (lower ? range->include_lower : range->include_upper) = inclusive;
  return true;
}

// pos_ is at `[` or `{`.
bool QueryLexer::LexRange(std::string field, std::size_t start, Token* out) {
  const std::size_t open = pos_;
  if (field == query::kIdField) return Fail(open, "_id takes an exact id, not a range");
  const bool include_lower = text_[pos_++] == '[';
  query::Range range;
  range.field = field;
  SkipSpaces();
  const std::size_t lower_pos = pos_;
  if (pos_ == text_.size() || text_[pos_] == ']' || text_[pos_] == '}') {
    return Fail(pos_, "expected a lower bound after " + Quoted(text_.substr(open, 1)));
  }
  std::string lower, upper;
  bool lower_open = false, upper_open = false;
  if (!ScanBound(true, &lower, &lower_open)) return false;
  const std::size_t after_lower = pos_;
  SkipSpaces();
  const bool to = text_.substr(pos_).starts_with("TO") &&
                  (pos_ + 2 == text_.size() || SpaceLength(text_, pos_ + 2) > 0 ||
                   text_[pos_ + 2] == ']' || text_[pos_ + 2] == '}');
  if (pos_ == after_lower || !to) {
    return Fail(pos_, "expected 'TO' after the range's lower bound ([a TO b])");
  }
  pos_ += 2;
  SkipSpaces();
  const std::size_t upper_pos = pos_;
  if (pos_ == text_.size() || text_[pos_] == ']' || text_[pos_] == '}') {
    return Fail(pos_, "expected an upper bound after TO");
  }
  if (!ScanBound(true, &upper, &upper_open)) return false;
  SkipSpaces();
  if (pos_ == text_.size() || (text_[pos_] != ']' && text_[pos_] != '}')) {
    return Fail(pos_,
                "expected ']' or '}' to close the range opened at byte " + std::to_string(open));
  }
  const bool include_upper = text_[pos_++] == ']';
  if (pos_ < text_.size() && text_[pos_] == '^' && !ScanBoost()) return false;
  if (!lower_open && !SetBound(field, std::move(lower), lower_pos, true, include_lower, &range))
    return false;
  if (!upper_open && !SetBound(field, std::move(upper), upper_pos, false, include_upper, &range))
    return false;
  return EmitLeaf(Node::MakeRange(std::move(range), start), out);
}

// pos_ is at `<` or `>`.
bool QueryLexer::LexComparison(std::string field, std::size_t start, Token* out) {
  const std::size_t op = pos_;
  if (field == query::kIdField) return Fail(op, "_id takes an exact id, not a range");
  const bool greater = text_[pos_++] == '>';
  const bool or_equal = pos_ < text_.size() && text_[pos_] == '=';
  if (or_equal) ++pos_;
  const std::size_t bound_pos = pos_;
  std::string bound;
  bool open = false;
  const bool has_bound = !AtWordEnd(pos_) || (pos_ < text_.size() && text_[pos_] == '"');
  const std::string expected =
      "expected a value right after " + Quoted(text_.substr(op, bound_pos - op));
  if (!has_bound) return Fail(bound_pos, expected);
  if (!ScanBound(false, &bound, &open)) return false;
  if (open) return Fail(bound_pos, expected + ", not '*'");
  query::Range range;
  range.field = field;
  if (!SetBound(field, std::move(bound), bound_pos, greater, or_equal, &range)) return false;
  return EmitLeaf(Node::MakeRange(std::move(range), start), out);
}

// A term is complete; apply the rules of its field.
bool QueryLexer::FinishTerm(Term term, std::size_t start, std::size_t value_pos, Token* out) {
  if (term.field == query::kTimestampField) {
    if (term.prefix) {
      return Fail(value_pos, "wildcards (* ?) are not supported on @timestamp; use a range");
    }
    auto date = ResolveDate(term.text, limits_.now);
    if (auto* err = std::get_if<DateError>(&date)) {
      return Fail(value_pos + (term.phrase ? 1 : 0) + err->offset, err->reason);
    }
    const DatePeriod& period = std::get<DatePeriod>(date);
    query::Range range{term.field, std::to_string(period.first), std::to_string(period.last)};
    return EmitLeaf(Node::MakeRange(std::move(range), start), out);
  }
  if (term.field == query::kIdField) {
    if (term.prefix) return Fail(value_pos, "wildcards (* ?) are not supported on _id");
    if (term.text.empty()) return Fail(value_pos, "expected an id after '_id:'");
    return EmitLeaf(Node::MakeTerm(std::move(term), start), out);
  }
  const bool searchable = storage::TextTokenizer::HasTokens(term.text) ||
                          (!term.field.empty() && !term.prefix && IsNumber(term.text));
  if (!searchable) return Fail(start, "term has no letters or digits to search");
  return EmitLeaf(Node::MakeTerm(std::move(term), start), out);
}

}  // namespace dashcam::api
