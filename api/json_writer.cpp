#include "api/json_writer.h"

#include <cmath>

#include <fmt/format.h>

#include "storage/json_text.h"

namespace dashcam::api {

void JsonWriter::BeforeValue() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (!has_items_.empty()) {
    if (has_items_.back()) out_.push_back(',');
    has_items_.back() = true;
  }
}

JsonWriter& JsonWriter::Open(char c) {
  BeforeValue();
  out_.push_back(c);
  has_items_.push_back(false);
  return *this;
}

JsonWriter& JsonWriter::Close(char c) {
  out_.push_back(c);
  has_items_.pop_back();
  return *this;
}

JsonWriter& JsonWriter::Key(std::string_view key) {
  BeforeValue();
  AppendJsonString(out_, key);
  out_.push_back(':');
  after_key_ = true;
  return *this;
}

JsonWriter& JsonWriter::String(std::string_view v) {
  BeforeValue();
  AppendJsonString(out_, v);
  return *this;
}

JsonWriter& JsonWriter::Int(std::int64_t v) {
  BeforeValue();
  fmt::format_to(std::back_inserter(out_), "{}", v);
  return *this;
}

JsonWriter& JsonWriter::Uint(std::uint64_t v) {
  BeforeValue();
  fmt::format_to(std::back_inserter(out_), "{}", v);
  return *this;
}

JsonWriter& JsonWriter::Double(double v) {
  if (!std::isfinite(v)) return Null();
  BeforeValue();
  fmt::format_to(std::back_inserter(out_), "{}", v);
  return *this;
}

JsonWriter& JsonWriter::Bool(bool v) {
  BeforeValue();
  out_ += v ? "true" : "false";
  return *this;
}

JsonWriter& JsonWriter::Null() {
  BeforeValue();
  out_ += "null";
  return *this;
}

JsonWriter& JsonWriter::Raw(std::string_view json) {
  BeforeValue();
  out_.append(json);
  return *this;
}

}  // namespace dashcam::api
