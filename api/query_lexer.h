// QueryLexer: the first half of ParseQuery (query_parser.h). It turns query
// text into operator tokens and fully built leaves: every piece of leaf
// syntax (phrases, wildcards, regexes, ranges, dates, fuzzy and proximity
// suffixes, boosts, escapes, field rules) is decided here, so the parser
// only sees booleans, groups and marks.
//
// Not thread-safe; one lexer per parse. Leaves own their strings.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "api/query_parser.h"
#include "storage/query_ast.h"

namespace dashcam::api {

enum class TokenKind {
  kEnd,
  kOpen,        // (
  kClose,       // )
  kAnd,         // AND && and
  kOr,          // OR || or
  kNot,         // NOT ! not
  kPlus,        // + touching a clause
  kMinus,       // - touching a clause
  kFieldGroup,  // field:(   `field`, `open` = where the '(' is
  kBoost,       // ^2 not directly after a leaf (valid only after ')')
  kLeaf,        // `leaf`
};

struct Token {
  TokenKind kind = TokenKind::kEnd;
  std::size_t position = 0;   // kEnd: the length of the text
  std::string_view spelling;  // operators and marks: the text as written
  std::string field;          // kFieldGroup only
  std::size_t open = 0;       // kFieldGroup only
  query::Node leaf;           // kLeaf only
};

class QueryLexer {
 public:
  QueryLexer(std::string_view text, const ParseLimits& limits) : text_(text), limits_(limits) {}

  // Reads the next token into *out; false on a syntax error (see error()).
  bool Next(Token* out);
  const QueryError& error() const { return error_; }

  // Inside `field:( ... )` leaves without a field of their own get `field`,
  // and a leaf naming a field is an error. Empty: outside any field group.
  void SetGroupField(std::string field) { group_field_ = std::move(field); }

 private:
  struct Word;  // an unquoted value being scanned

  bool Fail(std::size_t pos, std::string reason);
  bool AtWordEnd(std::size_t pos) const;
  bool WordIs(std::string_view word) const;
  bool Emit(TokenKind kind, std::size_t length, Token* out);
  bool LexWord(Token* out);
  bool LexOperator(Token* out, bool* matched);
  bool LexExists(std::size_t start, Token* out);
  bool LexFieldValue(std::string field, std::size_t start, Token* out);
  bool LexValue(std::string field, std::size_t start, Token* out);
  bool LexWordValue(std::string field, std::size_t start, Token* out);
  bool ScanWord(Word* word);
  bool ScanTilde(Word* word);
  bool ScanBoost();
  bool FinishWord(Word word, std::string field, std::size_t start, std::size_t value_pos,
                  Token* out);
  bool LexPhrase(std::string field, std::size_t start, Token* out);
  bool ScanPhraseText(std::string* text);
  bool LexRegex(std::string field, std::size_t start, Token* out);
  bool LexRange(std::string field, std::size_t start, Token* out);
  bool LexComparison(std::string field, std::size_t start, Token* out);
  bool ScanBound(bool in_brackets, std::string* text, bool* open);
  bool SetBound(const std::string& field, std::string text, std::size_t pos, bool lower,
                bool inclusive, query::Range* range);
  bool FinishTerm(query::Term term, std::size_t start, std::size_t value_pos, Token* out);
  bool EmitLeaf(query::Node leaf, Token* out);
  void SkipSpaces();

  std::string_view text_;
  const ParseLimits& limits_;
  std::size_t pos_ = 0;
  std::string group_field_;
  QueryError error_;
};

// Bytes of whitespace at text[pos] (0 if none). Besides ASCII whitespace,
// no-break space and the ideographic space (typed by CJK input methods)
// separate clauses.
std::size_t SpaceLength(std::string_view text, std::size_t pos);

}  // namespace dashcam::api
