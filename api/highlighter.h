// Highlighter: marks where a query's terms matched in a message, for the
// `highlight` of search hits:
//   "CUDA error: out of memory" & q=`"out of memory"` ->
//   "CUDA error: <mark>out of memory</mark>"
// The text around and inside the marks is HTML-escaped (& < > " '), so the
// result can be put into a page as is.
//
// What counts as a match is the search's own rule (query_ast.h), applied
// with the same tokenizer (text_tokenizer.h): the term's tokens found
// contiguously in the message's tokens, the last one as a prefix for `cud*`.
// Only terms on the message that are not negated are highlighted; other
// kinds of query nodes (ranges, existence) mark nothing.
//
// Thread-safety: const methods may be called concurrently.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "storage/query_ast.h"

namespace dashcam::api {

class Highlighter {
 public:
  // At most this many terms of a query are highlighted (the first ones).
  static constexpr std::size_t kMaxTerms = 64;

  explicit Highlighter(const query::Node& query);

  // True when the query has no message term to highlight.
  bool empty() const { return terms_.empty(); }

  // The escaped message with every match marked; nullopt when no term matched.
  std::optional<std::string> Highlight(std::string_view message) const;

 private:
  struct Term {
    std::vector<std::string> tokens;
    bool prefix = false;
  };
  void Collect(const query::Node& n, bool negated);

  std::vector<Term> terms_;
};

// `text` with & < > " ' replaced by their HTML entities, appended to `out`.
void AppendHtmlEscaped(std::string& out, std::string_view text);

}  // namespace dashcam::api
