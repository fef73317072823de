#include "storage/text_tokenizer.h"

#include <cstdint>

namespace dashcam::storage {
namespace {

enum class CharClass { kSeparator, kWord, kCjk };

struct Decoded {
  char32_t cp = 0;
  std::size_t len = 1;  // bytes consumed; invalid bytes consume 1 and decode to U+FFFD
};

Decoded DecodeUtf8(std::string_view s, std::size_t i) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  if (b0 < 0x80) return {b0, 1};
  auto cont = [&](std::size_t k) {
    return i + k < s.size() && (static_cast<unsigned char>(s[i + k]) & 0xC0) == 0x80;
  };
  auto bits = [&](std::size_t k) { return static_cast<char32_t>(s[i + k] & 0x3F); };
  if (b0 >= 0xC2 && b0 < 0xE0 && cont(1)) return {(char32_t(b0 & 0x1F) << 6) | bits(1), 2};
  if (b0 >= 0xE0 && b0 < 0xF0 && cont(1) && cont(2)) {
    char32_t cp = (char32_t(b0 & 0x0F) << 12) | (bits(1) << 6) | bits(2);
    if (cp >= 0x800 && (cp < 0xD800 || cp > 0xDFFF)) return {cp, 3};
  }
  if (b0 >= 0xF0 && b0 < 0xF5 && cont(1) && cont(2) && cont(3)) {
    char32_t cp = (char32_t(b0 & 0x07) << 18) | (bits(1) << 12) | (bits(2) << 6) | bits(3);
    if (cp >= 0x10000 && cp <= 0x10FFFF) return {cp, 4};
  }
  return {0xFFFD, 1};
}

bool IsCjk(char32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x20000 && c <= 0x2FFFF) ||
         (c >= 0x3040 && c <= 0x30FF) || (c >= 0x31F0 && c <= 0x31FF) ||
         (c >= 0xAC00 && c <= 0xD7AF) || (c >= 0x1100 && c <= 0x11FF) ||
         (c >= 0x3130 && c <= 0x318F) || (c >= 0xFF66 && c <= 0xFF9F);
}

// Non-ASCII punctuation, symbols, spaces and other non-word code points.
bool IsNonAsciiSeparator(char32_t c) {
  if (c < 0xC0) return c != 0xAA && c != 0xB5 && c != 0xBA;  // Latin-1 punctuation/symbols
  if (c == 0xD7 || c == 0xF7 || c == 0xFFFD) return true;
  return (c >= 0x2000 && c <= 0x2BFF) || (c >= 0x2E00 && c <= 0x2E7F) ||
         (c >= 0x3000 && c <= 0x303F) || (c >= 0xFE10 && c <= 0xFE1F) ||
         (c >= 0xFE30 && c <= 0xFE6F) || (c >= 0xFF00 && c <= 0xFF0F) ||
         (c >= 0xFF1A && c <= 0xFF20) || (c >= 0xFF3B && c <= 0xFF40) ||
         (c >= 0xFF5B && c <= 0xFF65) || (c >= 0xFFF0 && c <= 0xFFFF) ||
         (c >= 0x1F000 && c <= 0x1FAFF) || (c >= 0xE000 && c <= 0xF8FF) ||
         (c >= 0xD800 && c <= 0xDFFF);
}

CharClass Classify(char32_t c) {
  if (c < 0x80) {
    const bool alnum = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    return alnum ? CharClass::kWord : CharClass::kSeparator;
  }
  if (IsCjk(c)) return CharClass::kCjk;
  return IsNonAsciiSeparator(c) ? CharClass::kSeparator : CharClass::kWord;
}

char32_t FoldCase(char32_t c) {
  if (c >= 'A' && c <= 'Z') return c + 32;
  if (c < 0xC0) return c;
  if (c <= 0xDE) return c == 0xD7 ? c : c + 32;
  if (c >= 0x100 && c <= 0x17F) {
    const bool even_pairs = (c <= 0x137) || (c >= 0x14A && c <= 0x177);
    const bool odd_pairs = (c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E);
    if (even_pairs && c % 2 == 0) return c + 1;
    if (odd_pairs && c % 2 == 1) return c + 1;
    return c;
  }
  if (c >= 0x391 && c <= 0x3A9 && c != 0x3A2) return c + 32;
  if (c >= 0x410 && c <= 0x42F) return c + 32;
  if (c >= 0x400 && c <= 0x40F) return c + 80;
  if (c >= 0xFF21 && c <= 0xFF3A) return c - 0xFF21 + 'a';
  if ((c >= 0xFF41 && c <= 0xFF5A) || (c >= 0xFF10 && c <= 0xFF19)) return c - 0xFEE0;
  return c;
}

void AppendUtf8(std::string& out, char32_t c) {
  if (c < 0x80) {
    out.push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (c >> 6)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else if (c < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (c >> 12)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (c >> 18)));
    out.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  }
}

// Cuts `token` to at most kMaxTokenBytes without splitting a UTF-8 character.
std::string_view Truncate(std::string_view token) {
  if (token.size() <= TextTokenizer::kMaxTokenBytes) return token;
  std::size_t n = TextTokenizer::kMaxTokenBytes;
  while (n > 0 && (static_cast<unsigned char>(token[n]) & 0xC0) == 0x80) --n;
  return token.substr(0, n);
}

// State machine over one text: accumulates word tokens and CJK runs.
class Splitter {
 public:
  Splitter(void* ctx, bool (*sink)(void*, const TokenSpan&)) : ctx_(ctx), sink_(sink) {}

  // Returns false when the sink asked to stop.
  bool Feed(std::string_view text) {
    std::size_t i = 0;
    while (i < text.size()) {
      const auto b = static_cast<unsigned char>(text[i]);
      if (b < 0x80) {  // ASCII fast path
        const bool alnum =
            (b >= '0' && b <= '9') || (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z');
        if (alnum) {
          if (!FlushCjk()) return false;
          if (word_.empty()) word_begin_ = i;
          word_.push_back(static_cast<char>(b >= 'A' && b <= 'Z' ? b + 32 : b));
          word_end_ = i + 1;
        } else if (!FlushAll()) {
          return false;
        }
        ++i;
        continue;
      }
      const Decoded d = DecodeUtf8(text, i);
      if (!Step(d.cp, i, i + d.len)) return false;
      i += d.len;
    }
    return FlushAll();
  }

 private:
  bool Step(char32_t cp, std::size_t begin, std::size_t end) {
    switch (Classify(cp)) {
      case CharClass::kSeparator:
        return FlushAll();
      case CharClass::kWord:
        if (!FlushCjk()) return false;
        if (word_.empty()) word_begin_ = begin;
        AppendUtf8(word_, FoldCase(cp));
        word_end_ = end;
        return true;
      case CharClass::kCjk:
        if (!FlushWord()) return false;
        return PushCjk(cp, begin, end);
    }
    return true;
  }

  bool PushCjk(char32_t cp, std::size_t begin, std::size_t end) {
    if (cjk_count_ > 0) {
      // Emit the bigram (previous, current).
      std::string bigram;
      AppendUtf8(bigram, cjk_prev_);
      AppendUtf8(bigram, cp);
      if (!Emit(bigram, cjk_prev_begin_, end)) return false;
    }
    cjk_prev_ = cp;
    cjk_prev_begin_ = begin;
    cjk_prev_end_ = end;
    ++cjk_count_;
    return true;
  }

  bool FlushCjk() {
    if (cjk_count_ == 0) return true;
    const bool single = cjk_count_ == 1;
    cjk_count_ = 0;
    if (!single) return true;
    std::string one;
    AppendUtf8(one, cjk_prev_);
    return Emit(one, cjk_prev_begin_, cjk_prev_end_);
  }

  bool FlushWord() {
    if (word_.empty()) return true;
    const bool more = Emit(word_, word_begin_, word_end_);
    word_.clear();
    return more;
  }

  bool FlushAll() { return FlushWord() && FlushCjk(); }

  bool Emit(std::string_view token, std::size_t begin, std::size_t end) {
    return sink_(ctx_, TokenSpan{Truncate(token), begin, end});
  }

  void* ctx_;
  bool (*sink_)(void*, const TokenSpan&);
  std::string word_;
  std::size_t word_begin_ = 0, word_end_ = 0;
  char32_t cjk_prev_ = 0;
  std::size_t cjk_prev_begin_ = 0, cjk_prev_end_ = 0;
  std::size_t cjk_count_ = 0;
};

}  // namespace

void TextTokenizer::Run(std::string_view text, void* ctx, RawSink sink) {
  Splitter splitter(ctx, sink);
  splitter.Feed(text);
}

std::vector<std::string> TextTokenizer::TokenizeToVector(std::string_view text) {
  std::vector<std::string> out;
  Tokenize(text, [&](const TokenSpan& t) {
    out.emplace_back(t.token);
    return true;
  });
  return out;
}

std::string TextTokenizer::Fold(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const Decoded d = DecodeUtf8(text, i);
    if (d.cp == 0xFFFD && d.len == 1 && static_cast<unsigned char>(text[i]) >= 0x80) {
      out.push_back(text[i]);  // an invalid byte: kept
    } else {
      AppendUtf8(out, FoldCase(d.cp));
    }
    i += d.len;
  }
  return out;
}

bool TextTokenizer::IsCjkToken(std::string_view token) {
  return !token.empty() && IsCjk(DecodeUtf8(token, 0).cp);
}

bool TextTokenizer::HasTokens(std::string_view text) {
  bool found = false;
  Tokenize(text, [&](const TokenSpan&) {
    found = true;
    return false;
  });
  return found;
}

}  // namespace dashcam::storage
