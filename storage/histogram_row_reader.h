// HistogramRowReader: what one event contributes to a histogram
// (exploration.h, HistogramSpec): its split values (the level, the index,
// or a document field's values) and the numeric values of the value field
// (numbers, and strings that are a whole finite decimal number). Shared by
// every store that builds histograms from events it reads.
//
// Thread-safety: one reader per thread.
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

#include "storage/exploration.h"
#include "storage/field_extractor.h"

namespace dashcam::storage {

class HistogramRowReader {
 public:
  // `spec` must outlive the reader.
  explicit HistogramRowReader(const HistogramSpec& spec);

  // Whether Read needs the document (else it may be given "").
  bool needs_document() const { return doc_split_ || !spec_.value_field.empty(); }

  // Reads one event; false when its document is needed and cannot be parsed
  // (the event is skipped). values() and numbers() then hold its values,
  // valid until the next Read and while `level`, `index` and `source` are.
  bool Read(std::string_view level, std::string_view index, std::string_view source);

  const std::vector<std::string_view>& values() const { return values_; }
  const std::vector<double>& numbers() const { return numbers_; }

 private:
  const HistogramSpec& spec_;
  const bool column_split_, doc_split_;
  const std::size_t value_index_;  // of the value field among the extracted names
  FieldExtractor extractor_;
  std::vector<std::string_view> values_;
  std::vector<double> numbers_;
};

}  // namespace dashcam::storage
