// A small reader of RE2 syntax that tracks, per subexpression, either the
// exact set of strings it can match (while that set stays small) or a tree
// of literals its matches contain, in the manner of Russ Cox's trigram
// index for regular expressions ("Regular Expression Matching with a
// Trigram Index"), with whole literals instead of trigrams.
#include "storage/regex_prefilter.h"

#include <optional>
#include <utility>

#include "storage/ascii.h"
#include "storage/text_tokenizer.h"

namespace dashcam::storage {
namespace {

using Kind = LiteralTree::Kind;

// Exact sets grow by cross product; past this many strings only the
// literal tree is kept.
constexpr std::size_t kMaxExact = 16;
// Deeper nesting than this gives up (kAll): RE2 accepts up to 1000 levels.
constexpr int kMaxDepth = 200;

LiteralTree All() {
  return {};
}

LiteralTree Literal(std::string s) {
  if (s.empty()) return All();
  return {Kind::kLiteral, std::move(s), {}};
}

LiteralTree Combine(Kind kind, std::vector<LiteralTree> parts) {
  LiteralTree out{kind, {}, {}};
  for (LiteralTree& p : parts) {
    if (p.kind == Kind::kAll) {
      if (kind == Kind::kOr) return All();
      continue;
    }
    if (p.kind == kind) {
      for (LiteralTree& c : p.children) out.children.push_back(std::move(c));
    } else {
      out.children.push_back(std::move(p));
    }
  }
  if (out.children.empty()) return All();
  if (out.children.size() == 1) return std::move(out.children.front());
  return out;
}

// What one subexpression can match.
struct Info {
  std::optional<std::vector<std::string>> exact;  // every string it matches
  LiteralTree match;                              // when !exact

  static Info Exact(std::vector<std::string> strings) { return {std::move(strings), {}}; }
  static Info Empty() { return Exact({""}); }
  static Info Any() { return {std::nullopt, All()}; }
};

LiteralTree ToTree(Info info) {
  if (!info.exact) return std::move(info.match);
  std::vector<LiteralTree> any;
  for (std::string& s : *info.exact) any.push_back(Literal(std::move(s)));
  return Combine(Kind::kOr, std::move(any));
}

Info Concat(Info a, Info b) {
  if (a.exact && b.exact && a.exact->size() * b.exact->size() <= kMaxExact) {
    std::vector<std::string> out;
    for (const std::string& x : *a.exact) {
      for (const std::string& y : *b.exact) out.push_back(x + y);
    }
    return Info::Exact(std::move(out));
  }
  std::vector<LiteralTree> both;
  both.push_back(ToTree(std::move(a)));
  both.push_back(ToTree(std::move(b)));
  return {std::nullopt, Combine(Kind::kAnd, std::move(both))};
}

Info Alternate(Info a, Info b) {
  if (a.exact && b.exact && a.exact->size() + b.exact->size() <= kMaxExact) {
    a.exact->insert(a.exact->end(), b.exact->begin(), b.exact->end());
    return a;
  }
  std::vector<LiteralTree> either;
  either.push_back(ToTree(std::move(a)));
  either.push_back(ToTree(std::move(b)));
  return {std::nullopt, Combine(Kind::kOr, std::move(either))};
}

class Analyzer {
 public:
  explicit Analyzer(std::string_view p) : p_(p) {}

  LiteralTree Run() {
    Info info = Alternation(0);
    if (failed_ || pos_ != p_.size()) return All();
    return ToTree(std::move(info));
  }

 private:
  bool AtEnd() const { return pos_ >= p_.size(); }
  char Peek() const { return p_[pos_]; }

  Info Alternation(int depth) {
    if (depth > kMaxDepth) {
      failed_ = true;
      return Info::Any();
    }
    // Flags set by `(?i)` last until the end of the enclosing group, across
    // its alternatives.
    const bool saved = fold_;
    Info info = Concatenation(depth);
    while (!failed_ && !AtEnd() && Peek() == '|') {
      ++pos_;
      info = Alternate(std::move(info), Concatenation(depth));
    }
    fold_ = saved;
    return info;
  }

  // Consecutive exact items join into one run of strings ("CUDA " "error"
  // -> "CUDA error"); an inexact item, or a run grown past kMaxExact, closes
  // the run, whose strings become one requirement among the others.
  Info Concatenation(int depth) {
    std::vector<LiteralTree> done;
    Info run = Info::Empty();
    while (!failed_ && !AtEnd() && Peek() != '|' && Peek() != ')') {
      Info item = Repetition(depth);
      if (item.exact && run.exact->size() * item.exact->size() <= kMaxExact) {
        run = Concat(std::move(run), std::move(item));
        continue;
      }
      done.push_back(ToTree(std::move(run)));
      if (item.exact) {
        run = std::move(item);
      } else {
        done.push_back(std::move(item.match));
        run = Info::Empty();
      }
    }
    if (done.empty()) return run;
    done.push_back(ToTree(std::move(run)));
    return {std::nullopt, Combine(Kind::kAnd, std::move(done))};
  }

  Info Repetition(int depth) {
    Info atom = Atom(depth);
    while (!failed_ && !AtEnd()) {
      const char c = Peek();
      std::size_t min = 0;
      if (c == '*' || c == '?') {
        ++pos_;
      } else if (c == '+') {
        ++pos_;
        min = 1;
      } else if (c == '{' && ReadBraces(&min)) {
      } else {
        break;
      }
      if (!AtEnd() && Peek() == '?') ++pos_;  // non-greedy: same strings
      if (min >= 1) {
        atom = {std::nullopt, ToTree(std::move(atom))};
      } else if (c == '?' && atom.exact) {
        atom.exact->push_back("");
      } else {
        atom = Info::Any();
      }
    }
    return atom;
  }

  // `{n}`, `{n,}`, `{n,m}` at pos_; otherwise RE2 reads `{` as a literal.
  bool ReadBraces(std::size_t* min) {
    std::size_t i = pos_ + 1;
    std::size_t n = 0, digits = 0;
    while (i < p_.size() && IsAsciiDigit(p_[i]) && digits < 9) {
      n = n * 10 + static_cast<std::size_t>(p_[i++] - '0');
      ++digits;
    }
    if (digits == 0) return false;
    if (i < p_.size() && p_[i] == ',') {
      ++i;
      while (i < p_.size() && IsAsciiDigit(p_[i])) ++i;
    }
    if (i >= p_.size() || p_[i] != '}') return false;
    pos_ = i + 1;
    *min = n;
    return true;
  }

  Info Atom(int depth) {
    const char c = Peek();
    switch (c) {
      case '(':
        return Group(depth);
      case '[':
        SkipClass();
        return Info::Any();
      case '.':
        ++pos_;
        return Info::Any();
      case '^':
      case '$':
        ++pos_;
        return Boundary();
      case '\\':
        return Escape();
      default:
        return Character();
    }
  }

  Info Group(int depth) {
    ++pos_;  // (
    bool fold_inside = fold_;
    if (!AtEnd() && Peek() == '?') {
      ++pos_;
      if (!AtEnd() && (Peek() == 'P' || Peek() == '<')) {  // (?P<name>...) (?<name>...)
        const std::size_t close = p_.find('>', pos_);
        if (close == std::string_view::npos) return Fail();
        pos_ = close + 1;
      } else {
        bool on = true;
        while (!AtEnd() && Peek() != ':' && Peek() != ')') {
          if (Peek() == '-') on = false;
          if (Peek() == 'i') fold_inside = on;
          ++pos_;
        }
        if (AtEnd()) return Fail();
        if (Peek() == ')') {  // (?i): flags for the rest of the enclosing group
          ++pos_;
          fold_ = fold_inside;
          return Info::Empty();
        }
        ++pos_;  // :
      }
    }
    const bool saved = fold_;
    fold_ = fold_inside;
    Info inner = Alternation(depth + 1);
    fold_ = saved;
    if (AtEnd() || Peek() != ')') return Fail();
    ++pos_;
    return inner;
  }

  void SkipClass() {
    ++pos_;  // [
    if (!AtEnd() && Peek() == '^') ++pos_;
    if (!AtEnd() && Peek() == ']') ++pos_;  // a leading ] is literal
    while (!AtEnd() && Peek() != ']') {
      if (Peek() == '\\') {
        pos_ += 2;
      } else if (p_.substr(pos_).starts_with("[:")) {
        const std::size_t close = p_.find(":]", pos_ + 2);
        pos_ = close == std::string_view::npos ? p_.size() : close + 2;
      } else {
        ++pos_;
      }
    }
    if (AtEnd()) {
      failed_ = true;
      return;
    }
    ++pos_;
  }

  Info Escape() {
    ++pos_;  // backslash
    if (AtEnd()) return Fail();
    const char c = p_[pos_++];
    switch (c) {
      case 'A':
      case 'z':
        return Boundary();
      case 'b':  // \b is an ASCII word boundary, which `é` next to `a` is
      case 'B':  // but the tokenizer's is not
        return Info::Empty();
      case 'Q': {
        const std::size_t end = p_.find("\\E", pos_);
        const std::string_view quoted =
            p_.substr(pos_, end == std::string_view::npos ? end : end - pos_);
        pos_ = end == std::string_view::npos ? p_.size() : end + 2;
        return LiteralText(quoted);
      }
      case 'p':
      case 'P':
        if (!AtEnd() && Peek() == '{') {
          const std::size_t close = p_.find('}', pos_);
          pos_ = close == std::string_view::npos ? p_.size() : close + 1;
        } else if (!AtEnd()) {
          ++pos_;
        }
        return Info::Any();
      case 'a':
        return Info::Exact({"\a"});
      case 'f':
        return Info::Exact({"\f"});
      case 't':
        return Info::Exact({"\t"});
      case 'n':
        return Info::Exact({"\n"});
      case 'r':
        return Info::Exact({"\r"});
      case 'v':
        return Info::Exact({"\v"});
      case 'x':  // \xHH, \x{...}: skipped, not modelled
        if (!AtEnd() && Peek() == '{') {
          const std::size_t close = p_.find('}', pos_);
          pos_ = close == std::string_view::npos ? p_.size() : close + 1;
        } else {
          pos_ = std::min(p_.size(), pos_ + 2);
        }
        return Info::Any();
      default:
        if (IsAsciiAlpha(c) || IsAsciiDigit(c)) {
          // \d \w \s \C, octal: classes and codes not modelled.
          while (IsAsciiDigit(c) && !AtEnd() && IsAsciiDigit(Peek())) ++pos_;
          return Info::Any();
        }
        return LiteralText(std::string_view(&p_[pos_ - 1], 1));
    }
  }

  // One literal character (all its UTF-8 bytes).
  Info Character() {
    std::size_t n = 1;
    const auto b = static_cast<unsigned char>(Peek());
    if (b >= 0xC0) n = b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
    n = std::min(n, p_.size() - pos_);
    const std::string_view ch = p_.substr(pos_, n);
    pos_ += n;
    return LiteralText(ch);
  }

  // Text matched as written. Under (?i) an ASCII letter is lowercased, as
  // the tokenizer folds it, since only its two cases match it; not k and s,
  // which RE2 also matches to the Kelvin sign and long s (the tokenizer
  // keeps those), nor other letters (RE2 and the tokenizer fold them
  // differently): those are not modelled.
  Info LiteralText(std::string_view text) {
    std::string out(text);
    for (char& c : out) {
      if (c == kBoundary) return Info::Any();  // a NUL in the pattern
      if (!fold_ || !(IsAsciiAlpha(c) || static_cast<unsigned char>(c) >= 0x80)) continue;
      c = AsciiLower(c);
      if (c == 'k' || c == 's' || static_cast<unsigned char>(c) >= 0x80) return Info::Any();
    }
    return Info::Exact({std::move(out)});
  }

  // Start or end of the text (or of a line): a token boundary.
  static Info Boundary() { return Info::Exact({std::string(1, kBoundary)}); }

  Info Fail() {
    failed_ = true;
    return Info::Any();
  }

  std::string_view p_;
  std::size_t pos_ = 0;
  bool fold_ = false;
  bool failed_ = false;
};

}  // namespace

// The shortest word kept as a prefix at the end of a phrase of several.
constexpr std::size_t kMinPrefixBytes = 3;

LiteralTree RequiredLiterals(std::string_view pattern) {
  return Analyzer(pattern).Run();
}

GuaranteedPhrase GuaranteedTokens(std::string_view literal, bool left_boundary,
                                  bool right_boundary) {
  struct Piece {
    std::string token;
    bool left_complete, right_complete, word;
  };
  std::vector<Piece> pieces;
  TextTokenizer::Tokenize(literal, [&](const TokenSpan& t) {
    const bool cjk = TextTokenizer::IsCjkToken(t.token);
    // A 2-character CJK piece is a token of any text holding both characters
    // in a row; a word or a lone CJK character only when its ends are
    // inside the literal (the text may continue it).
    std::size_t characters = 0;
    for (char c : t.token) characters += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    const bool pair = cjk && characters == 2;
    pieces.push_back({std::string(t.token), pair || left_boundary || t.begin > 0,
                      pair || right_boundary || t.end < literal.size(), !cjk});
    return true;
  });
  GuaranteedPhrase out;
  std::size_t first = 0, last = pieces.size();
  if (first < last && !pieces[first].left_complete) ++first;
  if (first < last && !pieces[last - 1].right_complete) {
    // A word the text may continue is a prefix, unless it is so short that
    // its prefix expands to a large part of the vocabulary (`5*` is every
    // number starting with 5) while the other words already narrow enough.
    const bool short_tail = pieces[last - 1].token.size() < kMinPrefixBytes && last - first > 1;
    if (pieces[last - 1].word && !short_tail) {
      out.last_is_prefix = true;
    } else {
      --last;
    }
  }
  for (std::size_t i = first; i < last; ++i) out.tokens.push_back(std::move(pieces[i].token));
  if (out.tokens.empty()) out.last_is_prefix = false;
  return out;
}

std::string InnerWord(std::string_view literal) {
  std::vector<std::string> words = TextTokenizer::TokenizeToVector(literal);
  if (words.size() != 1 || TextTokenizer::IsCjkToken(words.front())) return {};
  if (words.front().size() < kMinPrefixBytes) return {};
  return std::move(words.front());
}

}  // namespace dashcam::storage
