#include "ingest/ndjson_decoder.h"

#include "ingest/ndjson_lines.h"

#include <fmt/format.h>

namespace dashcam::ingest {

DecodedNdjson DecodeNdjson(std::string_view padded_body, std::size_t body_size, TimeMs arrival,
                           std::size_t max_event_bytes, DocumentParser& parser) {
  DecodedNdjson out;
  NdjsonLines lines(padded_body.substr(0, body_size));
  NdjsonLine line;
  while (lines.Next(line)) {
    if (line.text.size() > max_event_bytes) {
      out.errors.push_back({line.number, fmt::format("line is {} bytes, over the limit of {}",
                                                     line.text.size(), max_event_bytes)});
      continue;
    }
    auto rec = parser.Parse(line.text, padded_body.size() - line.offset, arrival);
    if (!rec.ok()) {
      out.errors.push_back({line.number, rec.status().message()});
      continue;
    }
    out.records.push_back(std::move(*rec));
  }
  return out;
}

}  // namespace dashcam::ingest
