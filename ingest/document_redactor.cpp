#include "ingest/document_redactor.h"

#include "storage/json_text.h"

namespace dashcam::ingest {

namespace od = simdjson::ondemand;

namespace {

constexpr std::string_view kRedactedField = "redacted";

std::string_view TrimRight(std::string_view s) {
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\t' || s.back() == '\n' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

Status Invalid() {
  return Status::InvalidArgument("invalid JSON");
}

// Whether `v` is the literal null. is_null() fails on a bad literal such as
// `nul`; its result must be read with get(), since converting it to bool
// throws on that error.
bool IsNull(od::value& v) {
  bool null = false;
  return !v.is_null().get(null) && null;
}

}  // namespace

// The first pass: joins every string value with '\n' and notes whether any
// field name is secret (or is a top-level "redacted"), so that a clean
// document costs one walk and one RE2::Set match.
class DocumentRedactor::Scanner {
 public:
  Scanner(const Redactor& r, std::size_t max_depth, std::string& joined)
      : r_(r), max_depth_(max_depth), joined_(joined) {}

  bool must_rewrite() const { return must_rewrite_; }

  Status Object(od::object obj, std::size_t depth, bool top) {
    if (depth > max_depth_) return Invalid();
    for (auto field : obj) {
      std::string_view key;
      if (field.unescaped_key().get(key)) return Invalid();
      if ((top && key == kRedactedField) || r_.IsSecretField(key)) must_rewrite_ = true;
      od::value v;
      if (field.value().get(v)) return Invalid();
      if (auto s = Value(v, depth); !s.ok()) return s;
    }
    return Status::Ok();
  }

 private:
  Status Value(od::value v, std::size_t depth) {
    od::json_type type;
    if (v.type().get(type)) return Invalid();
    switch (type) {
      case od::json_type::object: {
        od::object o;
        if (v.get_object().get(o)) return Invalid();
        return Object(o, depth + 1, false);
      }
      case od::json_type::array: {
        if (depth + 1 > max_depth_) return Invalid();
        od::array arr;
        if (v.get_array().get(arr)) return Invalid();
        for (auto element : arr) {
          od::value ev;
          if (element.get(ev)) return Invalid();
          if (auto s = Value(ev, depth + 1); !s.ok()) return s;
        }
        return Status::Ok();
      }
      case od::json_type::string: {
        std::string_view text;
        if (v.get_string().get(text)) return Invalid();
        joined_.append(text);
        joined_.push_back('\n');
        return Status::Ok();
      }
      default:
        return Status::Ok();  // the rewriting pass validates scalars
    }
  }

  const Redactor& r_;
  const std::size_t max_depth_;
  std::string& joined_;
  bool must_rewrite_ = false;
};

// Copies the document to `out_` while redacting; `changed_` tells whether
// the copy differs from the input in meaning.
class DocumentRedactor::Walker {
 public:
  Walker(const Redactor& r, std::size_t max_depth, std::string& out, RedactionHits& hits)
      : r_(r), max_depth_(max_depth), out_(out), hits_(hits) {}

  bool changed() const { return changed_; }

  Status Object(od::object obj, std::size_t depth, bool top) {
    if (depth > max_depth_) return Invalid();
    out_.push_back('{');
    bool first = true;
    for (auto field : obj) {
      std::string_view key;
      if (field.unescaped_key().get(key)) return Invalid();
      // unescaped_key points into the parser's string buffer, which the
      // value's own unescaping may overwrite: keep a copy of the name.
      const std::string name(key);
      od::value v;
      if (field.value().get(v)) return Invalid();
      if (top && name == kRedactedField) {
        changed_ = true;  // dashcam's field: the client's is dropped
        continue;
      }
      if (!first) out_.push_back(',');
      first = false;
      AppendJsonString(out_, name);
      out_.push_back(':');
      if (r_.IsSecretField(name)) {
        if (auto s = MaskWholeValue(v); !s.ok()) return s;
        continue;
      }
      if (auto s = Value(v, depth); !s.ok()) return s;
    }
    if (top && !hits_.empty()) AppendHits(first);
    out_.push_back('}');
    return Status::Ok();
  }

 private:
  Status Value(od::value v, std::size_t depth) {
    od::json_type type;
    if (v.type().get(type)) return Invalid();
    switch (type) {
      case od::json_type::object: {
        od::object o;
        if (v.get_object().get(o)) return Invalid();
        return Object(o, depth + 1, false);
      }
      case od::json_type::array:
        return Array(v, depth + 1);
      case od::json_type::string:
        return String(v);
      default: {
        out_.append(TrimRight(v.raw_json_token()));
        // Validate the literal or number so a bad one is not copied through.
        if (type == od::json_type::number) {
          double d;
          if (v.get_double().get(d)) return Invalid();
        } else if (type == od::json_type::boolean) {
          bool b;
          if (v.get_bool().get(b)) return Invalid();
        } else if (!IsNull(v)) {
          return Invalid();
        }
        return Status::Ok();
      }
    }
    return Invalid();
  }

  Status Array(od::value v, std::size_t depth) {
    if (depth > max_depth_) return Invalid();
    od::array arr;
    if (v.get_array().get(arr)) return Invalid();
    out_.push_back('[');
    bool first = true;
    for (auto element : arr) {
      od::value ev;
      if (element.get(ev)) return Invalid();
      if (!first) out_.push_back(',');
      first = false;
      if (auto s = Value(ev, depth); !s.ok()) return s;
    }
    out_.push_back(']');
    return Status::Ok();
  }

  Status String(od::value v) {
    const std::string_view raw = v.raw_json_token();
    std::string_view text;
    if (v.get_string().get(text)) return Invalid();
    if (r_.RedactText(text, scratch_, hits_)) {
      AppendJsonString(out_, scratch_);
      changed_ = true;
    } else {
      out_.append(TrimRight(raw));
    }
    return Status::Ok();
  }

  // The value is skipped (On Demand skips what is not consumed) and replaced.
  Status MaskWholeValue(od::value v) {
    od::json_type type;
    if (v.type().get(type)) return Invalid();
    if (type == od::json_type::null) {
      out_.append("null");  // nothing to hide
      return IsNull(v) ? Status::Ok() : Invalid();
    }
    out_.push_back('"');
    out_.append("[REDACTED:");
    out_.append(r_.rule_name(r_.secret_field_rule()));
    out_.append("]\"");
    hits_.Add(r_.secret_field_rule());
    r_.CountFieldMask();
    changed_ = true;
    return Status::Ok();
  }

  void AppendHits(bool empty_object) {
    if (!empty_object) out_.push_back(',');
    AppendJsonString(out_, kRedactedField);
    out_.append(":[");
    bool first = true;
    for (auto id : hits_.ids()) {
      if (!first) out_.push_back(',');
      first = false;
      AppendJsonString(out_, r_.rule_name(id));
    }
    out_.push_back(']');
  }

  const Redactor& r_;
  const std::size_t max_depth_;
  std::string& out_;
  RedactionHits& hits_;
  std::string scratch_;
  bool changed_ = false;
};

Result<bool> DocumentRedactor::Redact(std::string_view json, std::size_t capacity, std::string& out,
                                      RedactionHits& hits) {
  hits.Clear();
  od::document doc;
  od::object obj;
  joined_.clear();
  if (parser_.iterate(json.data(), json.size(), capacity).get(doc)) return Invalid();
  if (doc.get_object().get(obj)) return Invalid();
  Scanner scanner(redactor_, max_depth_, joined_);
  if (auto s = scanner.Object(obj, 1, true); !s.ok()) return s;
  if (!scanner.must_rewrite() && !redactor_.MayMatchAny(joined_)) return false;

  if (parser_.iterate(json.data(), json.size(), capacity).get(doc)) return Invalid();
  if (doc.get_object().get(obj)) return Invalid();
  out.clear();
  Walker walker(redactor_, max_depth_, out, hits);
  if (auto s = walker.Object(obj, 1, true); !s.ok()) return s;
  return walker.changed();
}

}  // namespace dashcam::ingest
