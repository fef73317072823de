#include "storage/field_stats.h"

#include <algorithm>

namespace dashcam::storage {

void FieldStatsCollector::Add(const DocumentView& doc, std::string_view index) {
  ++docs_;
  if (doc.message) AddValue("message", Field::Type::kString, *doc.message);
  if (!index.empty()) AddValue(kIndexField, Field::Type::kString, index);
  for (const Field& f : doc.fields) AddValue(f.name, f.type, f.text);
}

void FieldStatsCollector::AddValue(std::string_view name, Field::Type type, std::string_view text) {
  auto it = fields_.find(name);
  if (it == fields_.end()) {
    if (fields_.size() >= budget_.max_fields) {
      fields_dropped_ = true;
      return;
    }
    it = fields_.emplace(std::string(name), FieldState{}).first;
  }
  FieldState& f = it->second;
  if (f.last_doc != docs_) {
    f.last_doc = docs_;
    ++f.events;
  }
  f.has_string |= type == Field::Type::kString;
  f.has_number |= type == Field::Type::kNumber;
  f.has_bool |= type == Field::Type::kBool;

  auto v = f.values.find(text);
  if (v == f.values.end()) {
    if (values_ >= budget_.max_values || value_bytes_ + text.size() > budget_.max_value_bytes) {
      f.values_dropped = true;
      return;
    }
    ++values_;
    value_bytes_ += text.size();
    v = f.values.emplace(std::string(text), ValueState{}).first;
  }
  if (v->second.last_doc != docs_) {
    v->second.last_doc = docs_;
    ++v->second.events;
  }
}

FieldsSummary FieldStatsCollector::Finish(std::size_t top, bool complete) const {
  FieldsSummary out;
  out.events_read = docs_;
  out.complete = complete;
  out.fields_truncated = fields_dropped_;
  for (const auto& [name, f] : fields_) {
    FieldSummary s;
    s.name = name;
    s.events = f.events;
    s.has_string = f.has_string;
    s.has_number = f.has_number;
    s.has_bool = f.has_bool;
    s.distinct = f.values.size();
    s.distinct_exact = !f.values_dropped;
    std::vector<const std::pair<const std::string, ValueState>*> values;
    values.reserve(f.values.size());
    for (const auto& v : f.values) values.push_back(&v);
    const auto by_count = [](const auto* a, const auto* b) {
      return a->second.events != b->second.events ? a->second.events > b->second.events
                                                  : a->first < b->first;
    };
    const std::size_t n = std::min(top, values.size());
    std::partial_sort(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(n), values.end(),
                      by_count);
    for (std::size_t i = 0; i < n; ++i)
      s.top.push_back({values[i]->first, values[i]->second.events});
    out.fields.push_back(std::move(s));
  }
  std::sort(out.fields.begin(), out.fields.end(), [](const auto& a, const auto& b) {
    return a.events != b.events ? a.events > b.events : a.name < b.name;
  });
  return out;
}

}  // namespace dashcam::storage
