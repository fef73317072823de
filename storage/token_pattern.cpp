#include "storage/token_pattern.h"

#include <algorithm>

#include "storage/text_tokenizer.h"

namespace dashcam::storage {
namespace {

bool IsWildcard(char c) {
  return c == '*' || c == '?';
}

// Bytes of the UTF-8 character starting at s[i] (1 for a stray byte).
std::size_t CharLength(std::string_view s, std::size_t i) {
  const auto b = static_cast<unsigned char>(s[i]);
  std::size_t n = b < 0xC0 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
  n = std::min(n, s.size() - i);
  for (std::size_t k = 1; k < n; ++k) {
    if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return 1;
  }
  return n;
}

std::vector<std::string_view> Characters(std::string_view s) {
  std::vector<std::string_view> out;
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t n = CharLength(s, i);
    out.push_back(s.substr(i, n));
    i += n;
  }
  return out;
}

// The pattern's segments: maximal runs of token characters and wildcards.
struct Segment {
  std::size_t begin = 0, end = 0;
  bool wildcard = false;
};

std::vector<Segment> Segments(std::string_view pattern) {
  // Token spans say where token characters are (CJK pieces overlap);
  // wildcards are separators to the tokenizer, so they are added by position.
  std::vector<Segment> items;
  TextTokenizer::Tokenize(pattern, [&](const TokenSpan& t) {
    items.push_back({t.begin, t.end, false});
    return true;
  });
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    if (IsWildcard(pattern[i])) items.push_back({i, i + 1, true});
  }
  std::stable_sort(items.begin(), items.end(),
                   [](const Segment& a, const Segment& b) { return a.begin < b.begin; });
  std::vector<Segment> out;
  for (const Segment& item : items) {
    if (!out.empty() && item.begin <= out.back().end) {
      out.back().end = std::max(out.back().end, item.end);
      out.back().wildcard |= item.wildcard;
    } else {
      out.push_back(item);
    }
  }
  return out;
}

}  // namespace

std::string_view PatternPosition::literal_prefix() const {
  const std::string_view t(text);
  if (!wildcard) return t;
  return t.substr(0, std::min(t.find('*'), t.find('?')));
}

std::vector<PatternPosition> SplitWildcardPattern(std::string_view pattern) {
  std::vector<PatternPosition> out;
  for (const Segment& seg : Segments(pattern)) {
    const std::string_view piece = pattern.substr(seg.begin, seg.end - seg.begin);
    if (seg.wildcard) {
      out.push_back({TextTokenizer::Fold(piece), true});
      continue;
    }
    TextTokenizer::Tokenize(piece, [&](const TokenSpan& t) {
      out.push_back({std::string(t.token), false});
      return true;
    });
  }
  return out;
}

namespace {

bool IsAscii(std::string_view s) {
  for (char c : s) {
    if (static_cast<unsigned char>(c) >= 0x80) return false;
  }
  return true;
}

// Greedy matching with backtracking to the last `*`: O(|p| * |t|) at worst.
// `Seq` is a sequence of characters (bytes for ASCII, else code points).
template <class Seq>
bool Glob(const Seq& p, const Seq& t, const typename Seq::value_type& star,
          const typename Seq::value_type& one) {
  std::size_t pi = 0, ti = 0, star_p = std::string_view::npos, star_t = 0;
  while (ti < t.size()) {
    if (pi < p.size() && (p[pi] == one || (p[pi] != star && p[pi] == t[ti]))) {
      ++pi;
      ++ti;
    } else if (pi < p.size() && p[pi] == star) {
      star_p = pi++;
      star_t = ti;
    } else if (star_p != std::string_view::npos) {
      pi = star_p + 1;
      ti = ++star_t;
    } else {
      return false;
    }
  }
  while (pi < p.size() && p[pi] == star) ++pi;
  return pi == p.size();
}

// Optimal string alignment over two sequences of characters.
template <class Seq>
unsigned Osa(const Seq& x, const Seq& y, unsigned max) {
  const std::size_t n = x.size(), m = y.size();
  if ((n > m ? n - m : m - n) > max) return max + 1;
  constexpr std::size_t kStack = 64;
  unsigned buffer[3 * (kStack + 1)];
  std::vector<unsigned> heap;
  unsigned* rows = buffer;
  if (m > kStack) {
    heap.resize(3 * (m + 1));
    rows = heap.data();
  }
  unsigned *two = rows, *one = rows + (m + 1), *cur = rows + 2 * (m + 1);
  for (std::size_t j = 0; j <= m; ++j) one[j] = static_cast<unsigned>(j);
  for (std::size_t i = 1; i <= n; ++i) {
    cur[0] = static_cast<unsigned>(i);
    for (std::size_t j = 1; j <= m; ++j) {
      const unsigned cost = x[i - 1] == y[j - 1] ? 0 : 1;
      cur[j] = std::min({one[j] + 1, cur[j - 1] + 1, one[j - 1] + cost});
      if (i > 1 && j > 1 && x[i - 1] == y[j - 2] && x[i - 2] == y[j - 1]) {
        cur[j] = std::min(cur[j], two[j - 2] + 1);
      }
    }
    std::swap(two, one);
    std::swap(one, cur);
  }
  return std::min(one[m], max + 1);
}

}  // namespace

bool MatchTokenPattern(std::string_view pattern, std::string_view token) {
  if (IsAscii(pattern) && IsAscii(token)) return Glob(pattern, token, '*', '?');
  const std::vector<std::string_view> p = Characters(pattern), t = Characters(token);
  return Glob(p, t, std::string_view("*"), std::string_view("?"));
}

unsigned BoundedEditDistance(std::string_view a, std::string_view b, unsigned max) {
  if (IsAscii(a) && IsAscii(b)) return Osa(a, b, max);
  return Osa(Characters(a), Characters(b), max);
}

bool ContainsPattern(std::string_view text, const std::vector<PatternPosition>& positions) {
  return ContainsTokenRun(text, positions.size(), [&](std::string_view token, std::size_t k) {
    const PatternPosition& p = positions[k];
    return p.wildcard ? MatchTokenPattern(p.text, token) : p.text == token;
  });
}

}  // namespace dashcam::storage
