#include "api/highlighter.h"

#include <algorithm>

#include "storage/text_tokenizer.h"

namespace dashcam::api {
namespace {

using storage::TextTokenizer;

struct MessageToken {
  std::string text;
  std::size_t begin = 0, end = 0;
};

std::vector<MessageToken> Tokens(std::string_view text) {
  std::vector<MessageToken> out;
  TextTokenizer::Tokenize(text, [&](const storage::TokenSpan& t) {
    out.push_back({std::string(t.token), t.begin, t.end});
    return true;
  });
  return out;
}

}  // namespace

void AppendHtmlEscaped(std::string& out, std::string_view text) {
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out.push_back(c);
    }
  }
}

Highlighter::Highlighter(const query::Node& query) {
  Collect(query, false);
}

void Highlighter::Collect(const query::Node& n, bool negated) {
  if (terms_.size() >= kMaxTerms) return;
  switch (n.kind) {
    case query::NodeKind::kTerm: {
      if (negated || !query::IsMessageField(n.term.field)) return;
      Term t{TextTokenizer::TokenizeToVector(n.term.text), n.term.prefix};
      if (!t.tokens.empty()) terms_.push_back(std::move(t));
      return;
    }
    case query::NodeKind::kNot:
      for (const query::Node& c : n.children) Collect(c, !negated);
      return;
    default:
      for (const query::Node& c : n.children) Collect(c, negated);
  }
}

std::optional<std::string> Highlighter::Highlight(std::string_view message) const {
  if (terms_.empty()) return std::nullopt;
  const std::vector<MessageToken> tokens = Tokens(message);
  std::vector<std::pair<std::size_t, std::size_t>> spans;  // byte ranges to mark
  for (const Term& term : terms_) {
    const std::size_t n = term.tokens.size();
    for (std::size_t i = 0; i + n <= tokens.size(); ++i) {
      bool match = true;
      for (std::size_t j = 0; j < n && match; ++j) {
        const std::string& have = tokens[i + j].text;
        const std::string& want = term.tokens[j];
        match = (term.prefix && j + 1 == n) ? have.starts_with(want) : have == want;
      }
      if (match) spans.emplace_back(tokens[i].begin, tokens[i + n - 1].end);
    }
  }
  if (spans.empty()) return std::nullopt;
  // Overlapping or touching matches become one mark (CJK pieces overlap).
  std::sort(spans.begin(), spans.end());
  std::vector<std::pair<std::size_t, std::size_t>> merged;
  for (const auto& s : spans) {
    if (!merged.empty() && s.first <= merged.back().second) {
      merged.back().second = std::max(merged.back().second, s.second);
    } else {
      merged.push_back(s);
    }
  }
  std::string out;
  out.reserve(message.size() + merged.size() * 13);
  std::size_t at = 0;
  for (const auto& [b, e] : merged) {
    AppendHtmlEscaped(out, message.substr(at, b - at));
    out += "<mark>";
    AppendHtmlEscaped(out, message.substr(b, e - b));
    out += "</mark>";
    at = e;
  }
  AppendHtmlEscaped(out, message.substr(at));
  return out;
}

}  // namespace dashcam::api
