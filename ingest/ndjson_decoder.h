// NdjsonDecoder: a body of newline-delimited JSON documents (one event per
// line, for curl and scripts) -> records plus the lines that failed. Blank
// lines are skipped. Thread-safety as BulkDecoder.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "ingest/document_parser.h"
#include "storage/record.h"

namespace dashcam::ingest {

struct LineError {
  std::size_t line = 0;  // 1-based
  std::string reason;
};

struct DecodedNdjson {
  std::vector<storage::Record> records;
  std::vector<LineError> errors;
};

// `padded_body` as for DecodeBulk.
DecodedNdjson DecodeNdjson(std::string_view padded_body, std::size_t body_size, TimeMs arrival,
                           std::size_t max_event_bytes, DocumentParser& parser);

}  // namespace dashcam::ingest
