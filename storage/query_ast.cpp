// DebugString: the canonical text form of a query::Node, for tests and logs.
//
// Format:
//   MatchAll     *
//   Term         [field:]text[*]     e.g. cuda  host.name:gpu\-01  cud*
//                [field:]"text"[*]   a phrase, e.g. "out of memory"  user:"zhang san"*
//   Wildcard     [field:]pattern     e.g. *memory  host.name:gpu\-node\-*
//   Regex        [field:]/re/        `/` inside written \/
//   Near         [field:]"text"~N
//   Fuzzy        [field:]text~N
//   Exists       _exists_:field
//   Range        field:[lo TO hi]    `{`/`}` for exclusive bounds, `*` when open
//   And / Or     (AND c1 c2 ...)     (OR c1 c2 ...)
//   Not          (NOT c)
// The field prefix appears whenever the field is non-empty (so `message:x`
// and `x` stay distinct); the trailing `*` marks a prefix term. Unquoted text
// has a backslash before every character the query language would read as
// syntax (whitespace, \ " ( ) : * ? ~ ^ [ ] { }, and at its start / < > and,
// for message terms, + - ! & | and the words AND OR NOT in either case);
// phrases escape only \ and ". A wildcard's `*` and `?` are not escaped. So a
// leaf's form is query text that parses back to the same leaf (@timestamp
// ranges show resolved epoch milliseconds, which parse back the same).
// Positions are not shown.
//
// Recursion follows the tree's depth; trees from the parser are bounded by
// ParseLimits::max_depth.
#include "storage/query_ast.h"

#include <algorithm>

namespace dashcam::query {
namespace {

bool AlwaysEscaped(char c) {
  switch (c) {
    case '\\':
    case '"':
    case '(':
    case ')':
    case ':':
    case '*':
    case '?':
    case '~':
    case '^':
    case '[':
    case ']':
    case '{':
    case '}':
    case ' ':
    case '\t':
    case '\n':
    case '\r':
    case '\f':
    case '\v':
      return true;
    default:
      return false;
  }
}

// Characters with a meaning only where a value starts; `bare` is true for a
// message term without a field prefix, where Lucene's operators apply.
bool EscapedAtStart(char c, bool bare) {
  if (c == '/' || c == '<' || c == '>') return true;
  return bare && (c == '+' || c == '-' || c == '!' || c == '&' || c == '|');
}

// Leading bytes of the non-ASCII spaces the parser treats as whitespace
// (U+00A0, U+3000); escaping the first byte keeps the character literal.
bool StartsUnicodeSpace(std::string_view rest) {
  return rest.starts_with("\xC2\xA0") || rest.starts_with("\xE3\x80\x80");
}

bool IsOperatorWord(const std::string& text) {
  return text == "AND" || text == "OR" || text == "NOT" || text == "and" || text == "or" ||
         text == "not";
}

// `wildcards`: leave * and ? unescaped (a Wildcard's pattern).
void AppendBareText(const std::string& text, bool bare, std::string* out, bool wildcards = false) {
  if (bare && IsOperatorWord(text)) *out += '\\';
  const std::string_view view(text);
  for (std::size_t i = 0; i < view.size(); ++i) {
    const char c = view[i];
    const bool wildcard = wildcards && (c == '*' || c == '?');
    if ((AlwaysEscaped(c) && !wildcard) || (i == 0 && EscapedAtStart(c, bare)) ||
        StartsUnicodeSpace(view.substr(i))) {
      *out += '\\';
    }
    *out += c;
  }
}

void AppendPhraseText(const std::string& text, std::string* out) {
  *out += '"';
  for (char c : text) {
    if (c == '"' || c == '\\') *out += '\\';
    *out += c;
  }
  *out += '"';
}

void AppendField(const Term& term, std::string* out) {
  if (!term.field.empty()) {
    *out += term.field;
    *out += ':';
  }
}

void AppendRegex(const Term& term, std::string* out) {
  AppendField(term, out);
  *out += '/';
  for (char c : term.text) {
    if (c == '/') *out += '\\';
    *out += c;
  }
  *out += '/';
}

void AppendTerm(const Term& term, std::string* out) {
  AppendField(term, out);
  if (term.phrase) {
    AppendPhraseText(term.text, out);
  } else {
    AppendBareText(term.text, term.field.empty(), out);
  }
  if (term.prefix) *out += '*';
}

void AppendNode(const Node& node, std::string* out) {
  const char* op = "(?";  // only for a corrupt kind
  switch (node.kind) {
    case NodeKind::kMatchAll:
      *out += '*';
      return;
    case NodeKind::kTerm:
      AppendTerm(node.term, out);
      return;
    case NodeKind::kWildcard:
      AppendField(node.term, out);
      AppendBareText(node.term.text, node.term.field.empty(), out, true);
      return;
    case NodeKind::kRegex:
      AppendRegex(node.term, out);
      return;
    case NodeKind::kNear:
      AppendField(node.term, out);
      AppendPhraseText(node.term.text, out);
      *out += '~' + std::to_string(node.term.distance);
      return;
    case NodeKind::kFuzzy:
      AppendField(node.term, out);
      AppendBareText(node.term.text, node.term.field.empty(), out);
      *out += '~' + std::to_string(node.term.distance);
      return;
    case NodeKind::kExists:
      *out += "_exists_:" + node.term.field;
      return;
    case NodeKind::kRange:
      *out += node.range.field + ':' + (node.range.include_lower ? '[' : '{') +
              (node.range.lower.empty() ? "*" : node.range.lower) + " TO " +
              (node.range.upper.empty() ? "*" : node.range.upper) +
              (node.range.include_upper ? ']' : '}');
      return;
    case NodeKind::kAnd:
      op = "(AND";
      break;
    case NodeKind::kOr:
      op = "(OR";
      break;
    case NodeKind::kNot:
      op = "(NOT";
      break;
  }
  *out += op;
  for (const Node& child : node.children) {
    *out += ' ';
    AppendNode(child, out);
  }
  *out += ')';
}

}  // namespace

std::vector<std::string_view> NearWords(std::string_view text) {
  std::vector<std::string_view> words;
  std::size_t pos = 0;
  while (pos < text.size()) {
    const std::size_t end = std::min(text.find_first_of(" \t\n\r\f\v", pos), text.size());
    if (end > pos) words.push_back(text.substr(pos, end - pos));
    pos = end + 1;
  }
  return words;
}

std::string DebugString(const Node& node) {
  std::string out;
  AppendNode(node, &out);
  return out;
}

}  // namespace dashcam::query
