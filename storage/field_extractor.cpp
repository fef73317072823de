#include "storage/field_extractor.h"

#include <fmt/format.h>

#include "storage/attrs_codec.h"
#include "storage/document_reader.h"

namespace dashcam::storage {

namespace od = simdjson::ondemand;

namespace {

constexpr std::size_t kNone = static_cast<std::size_t>(-1);

}  // namespace

FieldExtractor::FieldExtractor(std::vector<std::string> names)
    : names_(std::move(names)), values_(names_.size()) {}

Status FieldExtractor::Extract(std::string_view json) {
  for (auto& v : values_) v.clear();
  number_texts_.clear();
  path_.clear();
  padded_.assign(json);
  padded_.append(simdjson::SIMDJSON_PADDING, ' ');
  od::document doc;
  if (auto err = parser_.iterate(padded_.data(), json.size(), padded_.size()).get(doc)) {
    return JsonError(err);
  }
  od::object obj;
  if (auto err = doc.get_object().get(obj)) return JsonError(err);
  return Object(obj);
}

bool FieldExtractor::Wanted(std::size_t& exact) const {
  exact = kNone;
  bool any = false;
  for (std::size_t i = 0; i < names_.size(); ++i) {
    const std::string& n = names_[i];
    if (n == path_) {
      exact = i;
      any = true;
    } else if (IsAtOrUnder(n, path_)) {
      any = true;
    }
  }
  return any;
}

Status FieldExtractor::Object(od::object obj) {
  for (auto field : obj) {
    std::string_view key;
    if (auto err = field.unescaped_key().get(key)) return JsonError(err);
    const std::size_t mark = path_.size();
    if (!path_.empty()) path_.push_back('.');
    path_.append(key);
    std::size_t exact;
    Status s;
    // A value that cannot hold a wanted name is left unread; the iterator
    // skips it on the way to the next key.
    if (Wanted(exact) && path_ != "@timestamp") {
      od::value v;
      if (auto err = field.value().get(v)) return JsonError(err);
      s = Member(v);
    }
    path_.resize(mark);
    if (!s.ok()) return s;
  }
  return Status::Ok();
}

Status FieldExtractor::Member(od::value v) {
  od::json_type type;
  if (auto err = v.type().get(type)) return JsonError(err);
  std::size_t exact;
  Wanted(exact);
  switch (type) {
    case od::json_type::object: {
      od::object o;
      if (auto err = v.get_object().get(o)) return JsonError(err);
      return Object(o);
    }
    case od::json_type::array: {
      od::array arr;
      if (auto err = v.get_array().get(arr)) return JsonError(err);
      for (auto element : arr) {
        od::value ev;
        if (auto err = element.get(ev)) return JsonError(err);
        if (auto s = Member(ev); !s.ok()) return s;
      }
      return Status::Ok();
    }
    case od::json_type::string: {
      if (exact == kNone) return Status::Ok();
      std::string_view s;
      if (auto err = v.get_string().get(s)) return JsonError(err);
      values_[exact].push_back({Field::Type::kString, s, 0});
      return Status::Ok();
    }
    case od::json_type::number: {
      if (exact == kNone) return Status::Ok();
      od::number_type nt;
      if (auto err = v.get_number_type().get(nt)) return JsonError(err);
      double d = 0;
      if (nt == od::number_type::signed_integer) {
        std::int64_t i = 0;
        if (auto err = v.get_int64().get(i)) return JsonError(err);
        number_texts_.push_back(CanonicalInteger(i));
        d = static_cast<double>(i);
      } else {
        if (auto err = v.get_double().get(d)) return JsonError(err);
        number_texts_.push_back(CanonicalDouble(d));
      }
      values_[exact].push_back({Field::Type::kNumber, number_texts_.back(), d});
      return Status::Ok();
    }
    case od::json_type::boolean: {
      if (exact == kNone) return Status::Ok();
      bool b = false;
      if (auto err = v.get_bool().get(b)) return JsonError(err);
      values_[exact].push_back({Field::Type::kBool, b ? "true" : "false", 0});
      return Status::Ok();
    }
    case od::json_type::null:
      return Status::Ok();
  }
  return Status::Ok();
}

std::optional<std::string_view> StringValue(const std::vector<FieldExtractor::Value>& values,
                                            bool last) {
  std::optional<std::string_view> found;
  for (const FieldExtractor::Value& v : values) {
    if (v.type != Field::Type::kString) continue;
    found = v.text;
    if (!last) break;
  }
  return found;
}

std::optional<std::string_view> MessageOf(const FieldExtractor& extracted, std::size_t first) {
  if (auto m = StringValue(extracted.values(first), /*last=*/true)) return m;
  if (auto m = StringValue(extracted.values(first + 1))) return m;
  return StringValue(extracted.values(first + 2));
}

}  // namespace dashcam::storage
