// DocumentReader: the searchable view of a JSON document, shared by ingest
// (building Records) and by anything that reads stored documents back
// (query evaluation, aggregations), so that both agree on what a field is:
//
//   fields     every scalar value under its dotted name (`host.name`), arrays
//              giving one field per element, numbers and booleans typed,
//              nulls dropped; `message` and `@timestamp` are not fields.
//   message    `message`, else `msg`, else `log` (when a string).
//   level      `log.level`, else `level` (a string).
//   timestamp  `@timestamp`: RFC 3339 string or epoch milliseconds; an
//              invalid or out-of-range one is an error.
//
// A reader owns a simdjson On Demand parser and is not thread-safe: use one
// per thread. Views returned do not point into the parser.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <simdjson.h>

#include "storage/record.h"

namespace dashcam::storage {

// A simdjson error as a Status: InvalidArgument, "invalid JSON: <reason>".
Status JsonError(simdjson::error_code err);

// Whether the dotted field name `name` is `prefix` or a member under it
// (`host.name` is under `host`; `hostname` is not).
inline bool IsAtOrUnder(std::string_view name, std::string_view prefix) {
  return name.starts_with(prefix) && (name.size() == prefix.size() || name[prefix.size()] == '.');
}

struct DocumentLimits {
  std::size_t max_fields = 1000;  // Default: Elasticsearch's total_fields limit
  std::size_t max_depth = 32;     // nesting of objects and arrays
};

struct DocumentView {
  std::vector<Field> fields;
  std::optional<std::string> message;
  std::optional<std::string> level;
  std::optional<TimeMs> timestamp;
  // Bit i: the document has a top-level member named the reader's
  // watched_members[i] (whatever its value: null, {} and [] included, which
  // give no field).
  std::uint32_t watched_members = 0;
};

class DocumentReader {
 public:
  explicit DocumentReader(DocumentLimits limits = {}) : limits_(limits) {}

  // REQUIRES: the bytes after `json` up to `capacity` are readable, and
  // `capacity - json.size() >= simdjson::SIMDJSON_PADDING`.
  // Errors: InvalidArgument naming the problem.
  Status Read(std::string_view json, std::size_t capacity, DocumentView& out);
  // The same for a document that is not padded (copied into a buffer).
  Status ReadUnpadded(std::string_view json, DocumentView& out);

  // Top-level member names to report in DocumentView::watched_members (at
  // most 32): a caller that must know whether a document has a member asks
  // here instead of scanning the text again.
  void WatchMembers(std::vector<std::string> names);

  // From now on DocumentView::fields holds only the fields named here or
  // under one of them (`host` keeps `host.name`); message, level and
  // timestamp are found as always. Members that lead to none of these are
  // skipped unread, and `limits` are not checked on them: this is for
  // documents checked when stored, read back for a few fields (a query's
  // row checks). nullopt: every field (the default).
  void KeepOnlyFields(std::optional<std::vector<std::string>> names);

 private:
  class Walker;
  DocumentLimits limits_;
  std::vector<std::string> watched_;
  std::optional<std::vector<std::string>> kept_;
  simdjson::ondemand::parser parser_;
  std::string padded_;
};

}  // namespace dashcam::storage
