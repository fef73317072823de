// FieldExtractor: the values of a few named fields of a stored JSON
// document, by DocumentReader's rules (dotted names for nested objects, one
// value per array element, nulls dropped, numbers in canonical form), without
// building the whole DocumentView: subtrees that cannot hold a wanted name
// are skipped unread. Aggregations over many documents use it (a histogram
// split by a field reads one or two fields of a million documents), and
// so do export's csv, text and column formats (api/event_format.h).
//
// Unlike DocumentReader, `message` is a field like any other here (so a
// histogram can be split by it); `@timestamp` is never extracted.
//
// Thread-safety: none; one extractor per thread. Values returned point into
// the extractor and stay valid until its next Extract.
#pragma once

#include <array>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <simdjson.h>

#include "storage/record.h"

namespace dashcam::storage {

class FieldExtractor {
 public:
  struct Value {
    Field::Type type = Field::Type::kString;
    std::string_view text;  // strings unescaped; numbers canonical; "true"/"false"
    double number = 0;      // kNumber only
  };

  explicit FieldExtractor(std::vector<std::string> names);

  // Reads `json` (not padded: it is copied). values(i) then holds the values
  // of names[i] in document order. Errors: InvalidArgument for bad JSON.
  Status Extract(std::string_view json);

  const std::vector<Value>& values(std::size_t i) const { return values_[i]; }

 private:
  Status Object(simdjson::ondemand::object obj);
  Status Member(simdjson::ondemand::value v);
  // Which names the current path is, or is an ancestor of.
  bool Wanted(std::size_t& exact) const;

  const std::vector<std::string> names_;
  simdjson::ondemand::parser parser_;
  std::string padded_, path_;
  std::deque<std::string> number_texts_;  // canonical numbers of this document
  std::vector<std::vector<Value>> values_;
};

// The first string among `values` (the last when `last`).
std::optional<std::string_view> StringValue(const std::vector<FieldExtractor::Value>& values,
                                            bool last = false);

// The names a document's message comes from, in DocumentReader's order of
// preference. A reader that wants the message extracts these three names
// next to each other, from index `first`, and asks MessageOf.
inline constexpr std::array<std::string_view, 3> kMessageSourceNames = {"message", "msg", "log"};

// The message as DocumentReader reads it: the last string `message`, else
// the first string `msg`, else the first string `log`. REQUIRES: the
// extractor's names first..first+2 are kMessageSourceNames.
std::optional<std::string_view> MessageOf(const FieldExtractor& extracted, std::size_t first);

}  // namespace dashcam::storage
