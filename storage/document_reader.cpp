#include "storage/document_reader.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "storage/attrs_codec.h"

namespace dashcam::storage {

namespace od = simdjson::ondemand;

Status JsonError(simdjson::error_code err) {
  return Status::InvalidArgument(fmt::format("invalid JSON: {}", simdjson::error_message(err)));
}

// Walks one document, flattening it into a DocumentView. Not reusable.
class DocumentReader::Walker {
 public:
  Walker(const DocumentLimits& limits, const std::vector<std::string>& watched,
         const std::optional<std::vector<std::string>>& kept, DocumentView& view)
      : limits_(limits), watched_(watched), kept_(kept), view_(view) {}

  Status Object(od::object obj, std::size_t depth) {
    if (depth > limits_.max_depth) return TooDeep();
    for (auto field : obj) {
      std::string_view key;
      if (auto err = field.unescaped_key().get(key)) return JsonError(err);
      if (depth == 1) Watch(key);
      const std::size_t mark = path_.size();
      if (!path_.empty()) path_.push_back('.');
      path_.append(key);
      if (!LeadsToWanted()) {
        path_.resize(mark);
        continue;  // On Demand skips the value unread
      }
      od::value v;
      if (auto err = field.value().get(v)) return JsonError(err);
      Status s = Value(v, depth);
      path_.resize(mark);
      if (!s.ok()) return s;
    }
    return Status::Ok();
  }

  // The message/level/timestamp candidates seen, resolved after the walk.
  std::optional<std::string> message, msg, log, level, log_level;
  std::optional<TimeMs> timestamp;
  Status timestamp_error;

 private:
  Status Value(od::value v, std::size_t depth) {
    od::json_type type;
    if (auto err = v.type().get(type)) return JsonError(err);
    switch (type) {
      case od::json_type::object: {
        od::object o;
        if (auto err = v.get_object().get(o)) return JsonError(err);
        return Object(o, depth + 1);
      }
      case od::json_type::array:
        return Array(v, depth + 1);
      case od::json_type::string:
        return String(v);
      case od::json_type::number:
        return Number(v);
      case od::json_type::boolean: {
        bool b = false;
        if (auto err = v.get_bool().get(b)) return JsonError(err);
        return Add(Field::Type::kBool, b ? "true" : "false", 0);
      }
      case od::json_type::null: {
        if (auto err = v.is_null().error()) return JsonError(err);
        return Status::Ok();
      }
    }
    return Status::Ok();
  }

  Status Array(od::value v, std::size_t depth) {
    if (depth > limits_.max_depth) return TooDeep();
    od::array arr;
    if (auto err = v.get_array().get(arr)) return JsonError(err);
    for (auto element : arr) {
      od::value ev;
      if (auto err = element.get(ev)) return JsonError(err);
      if (auto s = Value(ev, depth); !s.ok()) return s;
    }
    return Status::Ok();
  }

  Status String(od::value v) {
    std::string_view s;
    if (auto err = v.get_string().get(s)) return JsonError(err);
    if (path_ == "@timestamp") return Timestamp(s);
    if (path_ == "message") {
      message.emplace(s);
      return Status::Ok();  // the message column, not a field
    }
    if (path_ == "msg" && !msg) msg.emplace(s);
    if (path_ == "log" && !log) log.emplace(s);
    if (path_ == "level" && !level) level.emplace(s);
    if (path_ == "log.level" && !log_level) log_level.emplace(s);
    return Add(Field::Type::kString, s, 0);
  }

  Status Number(od::value v) {
    if (path_ != "@timestamp" && !Kept()) return Status::Ok();
    od::number_type nt;
    if (auto err = v.get_number_type().get(nt)) return JsonError(err);
    std::string canonical;
    double d = 0;
    if (nt == od::number_type::signed_integer) {
      std::int64_t i = 0;
      if (auto err = v.get_int64().get(i)) return JsonError(err);
      canonical = CanonicalInteger(i);
      d = static_cast<double>(i);
    } else {
      if (auto err = v.get_double().get(d)) return JsonError(err);
      canonical = CanonicalDouble(d);
    }
    if (path_ == "@timestamp") {
      // Check the double itself: casting an out-of-range one is undefined,
      // and truncation would turn -0.5 into the valid 0.
      if (!std::isfinite(d) || d < static_cast<double>(kMinEventTime) ||
          d >= static_cast<double>(kMaxEventTime)) {
        return Status::InvalidArgument(
            "failed to parse field [@timestamp]: outside the supported range 1970..2200");
      }
      timestamp = static_cast<TimeMs>(d);
      return Status::Ok();
    }
    return Add(Field::Type::kNumber, canonical, d);
  }

  Status Timestamp(std::string_view s) {
    timestamp = ParseRfc3339(s);
    if (!timestamp) {
      return Status::InvalidArgument(
          fmt::format("failed to parse field [@timestamp]: '{}' is not an RFC 3339 date-time",
                      s.substr(0, 64)));
    }
    return Status::Ok();
  }

  Status Add(Field::Type type, std::string_view text, double number) {
    if (!Kept()) return Status::Ok();
    if (view_.fields.size() >= limits_.max_fields) {
      return Status::InvalidArgument(
          fmt::format("document has more than {} fields", limits_.max_fields));
    }
    view_.fields.push_back(Field{path_, type, std::string(text), number});
    return Status::Ok();
  }

  // Whether path_ is a kept field (DocumentReader::KeepOnlyFields).
  bool Kept() const {
    return !kept_ || std::any_of(kept_->begin(), kept_->end(),
                                 [this](std::string_view k) { return IsAtOrUnder(path_, k); });
  }

  // Whether path_ is kept, or holds a kept field or one the message, level
  // or timestamp is taken from.
  bool LeadsToWanted() const {
    if (Kept()) return true;
    auto holds = [this](std::string_view name) { return IsAtOrUnder(name, path_); };
    for (std::string_view name : {"@timestamp", "message", "msg", "log", "level", "log.level"}) {
      if (holds(name)) return true;
    }
    return std::any_of(kept_->begin(), kept_->end(), holds);
  }

  void Watch(std::string_view key) {
    for (std::size_t i = 0; i < watched_.size(); ++i) {
      if (watched_[i] == key) view_.watched_members |= std::uint32_t{1} << i;
    }
  }

  Status TooDeep() const {
    return Status::InvalidArgument(
        fmt::format("document nests deeper than {} levels", limits_.max_depth));
  }

  const DocumentLimits& limits_;
  const std::vector<std::string>& watched_;
  const std::optional<std::vector<std::string>>& kept_;
  DocumentView& view_;
  std::string path_;
};

Status DocumentReader::Read(std::string_view json, std::size_t capacity, DocumentView& out) {
  out = DocumentView{};
  od::document doc;
  if (auto err = parser_.iterate(json.data(), json.size(), capacity).get(doc)) {
    return JsonError(err);
  }
  od::object obj;
  if (auto err = doc.get_object().get(obj)) {
    if (err == simdjson::INCORRECT_TYPE) {
      return Status::InvalidArgument("a document must be a JSON object");
    }
    return JsonError(err);
  }
  Walker walker(limits_, watched_, kept_, out);
  if (auto s = walker.Object(obj, 1); !s.ok()) return s;
  if (!doc.current_location().error()) {
    return Status::InvalidArgument("invalid JSON: trailing content after the document");
  }
  if (walker.message)
    out.message = std::move(walker.message);
  else if (walker.msg)
    out.message = std::move(walker.msg);
  else if (walker.log)
    out.message = std::move(walker.log);
  if (walker.log_level)
    out.level = std::move(walker.log_level);
  else if (walker.level)
    out.level = std::move(walker.level);
  out.timestamp = walker.timestamp;
  return Status::Ok();
}

void DocumentReader::WatchMembers(std::vector<std::string> names) {
  if (names.size() > 32) names.resize(32);
  watched_ = std::move(names);
}

void DocumentReader::KeepOnlyFields(std::optional<std::vector<std::string>> names) {
  kept_ = std::move(names);
}

Status DocumentReader::ReadUnpadded(std::string_view json, DocumentView& out) {
  padded_.assign(json);
  padded_.append(simdjson::SIMDJSON_PADDING, ' ');
  return Read(std::string_view(padded_.data(), json.size()), padded_.size(), out);
}

}  // namespace dashcam::storage
