// BulkDecoder: the body of an Elasticsearch `_bulk` request -> records to
// store plus one item per action, in order.
//
// The body is NDJSON: an action line (`{"create":{"_index":..,"_id":..}}`,
// `index`, `delete`, `update`), then for all but `delete` a source line.
// A bad source line fails only its own item (400); `delete` and `update` get
// a per-item error (dashcam stores events, it does not edit them). A
// malformed action line fails the whole request, as in Elasticsearch, because
// the pairing of the following lines can no longer be known.
//
// Thread-safety: a decoder owns no state beyond the parser it is given.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "ingest/document_parser.h"
#include "storage/record.h"

namespace dashcam::ingest {

struct BulkItem {
  std::string op;     // "create", "index", "delete", "update"
  std::string index;  // the action's _index, or the URL's default
  std::string id;     // the action's _id; empty when none
  int status = 0;     // 0 until known; 400 for a decode failure
  std::string error_type, error_reason;
  std::size_t record = static_cast<std::size_t>(-1);  // index into records, when stored
};

struct DecodedBulk {
  std::vector<BulkItem> items;
  std::vector<storage::Record> records;
};

struct BulkLimits {
  std::size_t max_event_bytes = 1u << 20;  // Default: 1 MiB per source line
};

// Where DecodeBulk hands out records as it goes, when given one: every time
// `records` of them are decoded, `emit` gets them (moved out). DecodedBulk's
// `records` then holds only those decoded after the last part, and each
// item's `record` still counts from the body's first record. Parts are
// handed out only once every action line has been read, so a body refused
// for a malformed one has handed out none.
struct BulkParts {
  std::size_t records = 0;
  std::function<void(std::vector<storage::Record>)> emit;
};

// `body` must be padded for simdjson (PadForParsing); `body_size` is the
// length of the real content. Errors: InvalidArgument for a malformed action
// line (naming the line number).
Result<DecodedBulk> DecodeBulk(std::string_view padded_body, std::size_t body_size,
                               std::string_view default_index, TimeMs arrival,
                               const BulkLimits& limits, DocumentParser& parser,
                               const BulkParts* parts = nullptr);

}  // namespace dashcam::ingest
