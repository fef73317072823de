// NdjsonLines: the non-blank lines of a newline-delimited body, each with its
// 1-based line number (blank lines count) and its offset in the body. Shared
// by the bulk and NDJSON decoders. A view over the body; not thread-safe.
#pragma once

#include <cstddef>
#include <string_view>

namespace dashcam::ingest {

struct NdjsonLine {
  std::string_view text;   // without the '\n'; may end in '\r'
  std::size_t number = 0;  // 1-based
  std::size_t offset = 0;  // of `text` in the body
};

class NdjsonLines {
 public:
  explicit NdjsonLines(std::string_view body) : body_(body) {}

  // The next non-blank line; false at the end of the body.
  bool Next(NdjsonLine& line) {
    while (pos_ < body_.size()) {
      std::size_t end = body_.find('\n', pos_);
      if (end == std::string_view::npos) end = body_.size();
      const std::size_t start = pos_;
      pos_ = end + 1;
      ++number_;
      const std::string_view text = body_.substr(start, end - start);
      if (text.find_first_not_of(" \t\r") == std::string_view::npos) continue;
      line = NdjsonLine{text, number_, start};
      return true;
    }
    return false;
  }

 private:
  std::string_view body_;
  std::size_t pos_ = 0, number_ = 0;
};

}  // namespace dashcam::ingest
