#include "ingest/ndjson_decoder.h"

#include <fmt/format.h>

namespace dashcam::ingest {

DecodedNdjson DecodeNdjson(std::string_view padded_body, std::size_t body_size, TimeMs arrival,
                           std::size_t max_event_bytes, DocumentParser& parser) {
  DecodedNdjson out;
  std::size_t pos = 0, number = 0;
  while (pos < body_size) {
    std::size_t end = padded_body.find('\n', pos);
    if (end == std::string_view::npos || end > body_size) end = body_size;
    const std::string_view line = padded_body.substr(pos, end - pos);
    const std::size_t capacity = padded_body.size() - pos;
    pos = end + 1;
    ++number;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    if (line.size() > max_event_bytes) {
      out.errors.push_back({number, fmt::format("line is {} bytes, over the limit of {}",
                                                line.size(), max_event_bytes)});
      continue;
    }
    auto rec = parser.Parse(line, capacity, arrival);
    if (!rec.ok()) {
      out.errors.push_back({number, rec.status().message()});
      continue;
    }
    out.records.push_back(std::move(*rec));
  }
  return out;
}

}  // namespace dashcam::ingest
