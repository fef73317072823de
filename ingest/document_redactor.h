// DocumentRedactor: applies a Redactor to one JSON document, before it is
// parsed into an event. Every string value, at any depth and in arrays, is
// redacted as text; a field whose name is secret (Redactor::IsSecretField)
// has its whole value, whatever its type, replaced by the string
// "[REDACTED:secret_field]". Field names are never changed.
//
// When a rule fired, the document gets a top-level "redacted" array naming
// the rules, in first-hit order, so `redacted:jupyter_token` finds it.
// dashcam owns that field: a "redacted" member sent by a client is dropped,
// so no client can mark an event as redacted or hide that it was.
//
// An untouched document is left byte for byte as it came. A rewritten one is
// compact JSON: unchanged strings, numbers and literals keep their original
// text; keys and redacted strings are re-escaped.
//
// Not thread-safe (owns a simdjson parser): use one per thread.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include <simdjson.h>

#include "ingest/redactor.h"
#include "storage/status.h"

namespace dashcam::ingest {

class DocumentRedactor {
 public:
  explicit DocumentRedactor(const Redactor& redactor, std::size_t max_depth = 32)
      : redactor_(redactor), max_depth_(max_depth) {}

  // REQUIRES: the bytes after `json` up to `capacity` are readable, and
  // `capacity - json.size() >= simdjson::SIMDJSON_PADDING`.
  // Returns true and sets `out` when the document changed; false when it
  // is to be kept as it is. Errors: InvalidArgument for JSON that is not
  // an object (the caller's parser reports those in its own words).
  Result<bool> Redact(std::string_view json, std::size_t capacity, std::string& out,
                      RedactionHits& hits);

 private:
  class Scanner;
  class Walker;
  const Redactor& redactor_;
  const std::size_t max_depth_;
  simdjson::ondemand::parser parser_;
  std::string joined_;  // the document's strings, for one pre-check
};

}  // namespace dashcam::ingest
