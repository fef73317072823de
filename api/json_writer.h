// JsonWriter: builds a JSON text in a string, appending as it goes. Used for
// API answers, where stored documents (already JSON) are spliced in raw
// without being parsed and re-serialized, which a DOM library cannot do.
//
// The writer inserts commas itself; keys and values must alternate inside
// objects. Not thread-safe; one writer per answer.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dashcam::api {

class JsonWriter {
 public:
  JsonWriter& BeginObject() { return Open('{'); }
  JsonWriter& EndObject() { return Close('}'); }
  JsonWriter& BeginArray() { return Open('['); }
  JsonWriter& EndArray() { return Close(']'); }

  JsonWriter& Key(std::string_view key);
  JsonWriter& String(std::string_view v);
  JsonWriter& Int(std::int64_t v);
  JsonWriter& Uint(std::uint64_t v);
  JsonWriter& Double(double v);
  JsonWriter& Bool(bool v);
  JsonWriter& Null();
  // REQUIRES: `json` is one valid JSON value.
  JsonWriter& Raw(std::string_view json);

  const std::string& str() const { return out_; }
  std::string Release() { return std::move(out_); }

 private:
  JsonWriter& Open(char c);
  JsonWriter& Close(char c);
  void BeforeValue();

  std::string out_;
  std::vector<bool> has_items_;  // per open container
  bool after_key_ = false;
};

}  // namespace dashcam::api
