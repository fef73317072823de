#include "storage/histogram_row_reader.h"

#include <charconv>
#include <cmath>

namespace dashcam::storage {

HistogramRowReader::HistogramRowReader(const HistogramSpec& spec)
    : spec_(spec),
      column_split_(spec.split_field == kLevelSplit || spec.split_field == kIndexField),
      doc_split_(!spec.split_field.empty() && !column_split_),
      value_index_(doc_split_ && spec.value_field == spec.split_field ? 0 : 1),
      extractor_({doc_split_ ? spec.split_field : "", value_index_ == 1 ? spec.value_field : ""}) {}

bool HistogramRowReader::Read(std::string_view level, std::string_view index,
                              std::string_view source) {
  values_.clear();
  numbers_.clear();
  if (needs_document() && !extractor_.Extract(source).ok()) return false;
  if (column_split_) {
    const std::string_view v = spec_.split_field == kLevelSplit ? level : index;
    if (!v.empty()) values_.push_back(v);
  }
  if (!needs_document()) return true;
  if (doc_split_) {
    for (const auto& v : extractor_.values(0)) values_.push_back(v.text);
  }
  if (spec_.value_field.empty()) return true;
  for (const auto& v : extractor_.values(value_index_)) {
    if (v.type == Field::Type::kNumber) {
      numbers_.push_back(v.number);
    } else if (v.type == Field::Type::kString) {
      double d = 0;
      auto [p, ec] = std::from_chars(v.text.data(), v.text.data() + v.text.size(), d);
      if (!v.text.empty() && ec == std::errc() && p == v.text.data() + v.text.size() &&
          std::isfinite(d)) {
        numbers_.push_back(d);
      }
    }
  }
  return true;
}

}  // namespace dashcam::storage
