#include "ingest/document_parser.h"

#include <string>

namespace dashcam::ingest {
namespace {

std::string_view Trim(std::string_view s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return {};
  const auto e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

}  // namespace

DocumentParser::DocumentParser(DocumentLimits limits, const Redactor* redactor)
    : reader_(limits), redactor_(redactor) {
  if (redactor_) doc_redactor_ = std::make_unique<DocumentRedactor>(*redactor_, limits.max_depth);
}

Result<storage::Record> DocumentParser::Parse(std::string_view json, std::size_t capacity,
                                              TimeMs arrival) {
  if (doc_redactor_) {
    // On a JSON error the document is read as sent, so that the reader
    // names the problem; its message is redacted below.
    auto changed = doc_redactor_->Redact(json, capacity, redacted_, hits_);
    if (changed.ok() && *changed) {
      const std::size_t size = redacted_.size();
      redacted_.append(simdjson::SIMDJSON_PADDING, ' ');
      json = std::string_view(redacted_.data(), size);
      capacity = redacted_.size();
    }
  }
  if (auto s = reader_.Read(json, capacity, view_); !s.ok()) {
    std::string masked;
    RedactionHits ignored;
    if (redactor_ && redactor_->RedactText(s.message(), masked, ignored)) {
      return s.WithMessage(std::move(masked));
    }
    return s;
  }
  storage::Record rec;
  rec.ts_ms = view_.timestamp.value_or(arrival);
  if (rec.ts_ms < kMinEventTime || rec.ts_ms >= kMaxEventTime) {
    return Status::InvalidArgument(
        "failed to parse field [@timestamp]: outside the supported range 1970..2200");
  }
  rec.message = std::move(view_.message).value_or(std::string());
  rec.level = std::move(view_.level).value_or(std::string());
  rec.fields = std::move(view_.fields);
  rec.source = std::string(Trim(json));
  return rec;
}

ParserPool::Lease::~Lease() {
  std::lock_guard lock(pool_.mu_);
  pool_.idle_.push_back(std::move(p_));
}

ParserPool::Lease ParserPool::Acquire() {
  std::unique_ptr<DocumentParser> p;
  {
    std::lock_guard lock(mu_);
    if (!idle_.empty()) {
      p = std::move(idle_.back());
      idle_.pop_back();
    }
  }
  if (!p) p = std::make_unique<DocumentParser>(limits_, redactor_);
  return Lease(*this, std::move(p));
}

std::string PadForParsing(std::string_view data) {
  std::string out;
  out.reserve(data.size() + simdjson::SIMDJSON_PADDING);
  out.append(data);
  out.append(simdjson::SIMDJSON_PADDING, ' ');
  return out;
}

}  // namespace dashcam::ingest
