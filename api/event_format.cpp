#include "api/event_format.h"

#include <algorithm>
#include <array>
#include <cstring>

#include <fmt/format.h>

#include "api/json_writer.h"
#include "storage/json_text.h"
#include "storage/time_format.h"

namespace dashcam::api {
namespace {

using Value = storage::FieldExtractor::Value;

constexpr std::size_t kMaxColumns = 100;
constexpr std::size_t kMaxColumnName = 256;

const std::vector<std::string>& DefaultCsvColumns() {
  static const std::vector<std::string> columns = {"@timestamp", "level", "host.name", "message"};
  return columns;
}

// Where the extracted names begin: the message's three
// (storage::kMessageSourceNames), then the rest.
constexpr std::size_t kMessage = 0, kFirstField = storage::kMessageSourceNames.size();
// The text line's host, in the order Host() tries them.
constexpr std::array<std::string_view, 3> kHostFields = {"host.name", "host.hostname", "host"};

// Columns that are not read from the document's fields.
bool IsEventColumn(std::string_view c) {
  return c == "@timestamp" || c == "_id" || c == "_index" || c == "_source" || c == "message" ||
         c == "level";
}

// Appends `name` to `names` unless it is there.
void AddOnce(std::vector<std::string>& names, std::string_view name) {
  if (std::find(names.begin(), names.end(), name) == names.end()) names.emplace_back(name);
}

// What an EventFormatter reads of a document: `message`, `msg` and `log`,
// then the text line's host fields or the field columns, each once.
std::vector<std::string> NamesToRead(EventFormat format, const std::vector<std::string>& columns) {
  std::vector<std::string> names(storage::kMessageSourceNames.begin(),
                                 storage::kMessageSourceNames.end());
  if (format == EventFormat::kText) {
    for (std::string_view h : kHostFields) AddOnce(names, h);
  }
  for (const std::string& c : columns) {
    if (!IsEventColumn(c)) AddOnce(names, c);
  }
  return names;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool NeedsCsvQuotes(std::string_view cell) {
  for (char c : cell) {
    if (c == ',' || c == '"' || c == '\r' || c == '\n') return true;
  }
  return false;
}

bool HasLineBreak(std::string_view s) {
  return std::memchr(s.data(), '\n', s.size()) != nullptr ||
         std::memchr(s.data(), '\r', s.size()) != nullptr;
}

void AppendCsvCell(std::string_view cell, std::string& out) {
  if (!NeedsCsvQuotes(cell)) {
    out.append(cell);
    return;
  }
  out.push_back('"');
  for (char c : cell) {
    if (c == '"') out.push_back('"');
    out.push_back(c);
  }
  out.push_back('"');
}

// `text` on one line, with control characters (C0, DEL, and C1 as UTF-8)
// written as escapes, and backslashes doubled so that an escape and the
// same characters typed in a message read differently.
void AppendOneLine(std::string_view text, std::string& out) {
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      fmt::format_to(std::back_inserter(out), "\\x{:02x}", c);
    } else if (c == 0xc2 && i + 1 < text.size() &&
               static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
               static_cast<unsigned char>(text[i + 1]) <= 0x9f) {
      fmt::format_to(std::back_inserter(out), "\\u{:04x}", static_cast<unsigned char>(text[++i]));
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
}

std::string Joined(const std::vector<Value>& values) {
  std::string out;
  for (const Value& v : values) {
    if (!out.empty()) out += ", ";
    out += v.text;
  }
  return out;
}

void AppendFieldJson(const Value& f, JsonWriter& w) {
  switch (f.type) {
    case storage::Field::Type::kNumber:
      w.Raw(f.text);  // the canonical form of a JSON number
      break;
    case storage::Field::Type::kBool:
      w.Bool(f.text == "true");
      break;
    case storage::Field::Type::kString:
      w.String(f.text);
      break;
  }
}

}  // namespace

std::optional<EventFormat> ParseEventFormat(std::string_view name) {
  if (name == "ndjson") return EventFormat::kNdjson;
  if (name == "csv") return EventFormat::kCsv;
  if (name == "text") return EventFormat::kText;
  if (name == "sse") return EventFormat::kSse;
  return std::nullopt;
}

std::optional<std::vector<std::string>> ParseColumns(std::string_view fields, std::string& error) {
  std::vector<std::string> out;
  while (!fields.empty()) {
    const std::size_t comma = fields.find(',');
    const std::string_view name = Trim(fields.substr(0, comma));
    fields = comma == std::string_view::npos ? std::string_view() : fields.substr(comma + 1);
    if (name.empty()) continue;
    if (name.size() > kMaxColumnName) {
      error = fmt::format("[fields] names are at most {} bytes", kMaxColumnName);
      return std::nullopt;
    }
    if (std::find(out.begin(), out.end(), name) != out.end()) {
      error = fmt::format("[fields] names '{}' twice", name);
      return std::nullopt;
    }
    if (out.size() == kMaxColumns) {
      error = fmt::format("[fields] names at most {} columns", kMaxColumns);
      return std::nullopt;
    }
    out.emplace_back(name);
  }
  return out;
}

EventFormatter::EventFormatter(EventFormat format, std::vector<std::string> columns)
    : format_(format),
      columns_(columns.empty() && format == EventFormat::kCsv ? DefaultCsvColumns()
                                                              : std::move(columns)),
      // Only what the format shows is read: a document's other fields are
      // skipped unread (export read every field of every line before, ~40%
      // of its CPU).
      names_(NamesToRead(format_, columns_)),
      extractor_(names_) {
  for (const std::string& c : columns_) {
    const auto at = std::find(names_.begin(), names_.end(), c);
    column_names_.push_back(IsEventColumn(c) ? kMessage
                                             : static_cast<std::size_t>(at - names_.begin()));
  }
}

std::string EventFormatter::Preamble() const {
  if (format_ != EventFormat::kCsv) return {};
  std::string out;
  for (std::size_t i = 0; i < columns_.size(); ++i) {
    if (i > 0) out.push_back(',');
    AppendCsvCell(columns_[i], out);
  }
  out += "\r\n";
  return out;
}

void EventFormatter::Append(const storage::StoredEvent& ev, std::string& out) {
  switch (format_) {
    case EventFormat::kNdjson:
      if (columns_.empty())
        AppendHit(ev, out);
      else
        AppendColumnsJson(ev, out);
      out.push_back('\n');
      break;
    case EventFormat::kCsv:
      AppendCsvRow(ev, out);
      break;
    case EventFormat::kText:
      AppendTextLine(ev, out);
      break;
    case EventFormat::kSse:
      out += "id: ";
      out += storage::FormatEventKey(ev.key);
      out += "\ndata: ";
      AppendHit(ev, out);
      out += "\n\n";
      break;
  }
}

// Consecutive events mostly share their second: its text is kept.
void EventFormatter::AppendTimestamp(TimeMs t, std::string& out) {
  const TimeMs second = t / 1000;
  if (second != cached_second_) {
    cached_second_ = second;
    cached_prefix_ = FormatRfc3339Ms(second * 1000);
    cached_prefix_.resize(cached_prefix_.size() - 4);  // "YYYY-MM-DDTHH:MM:SS."
  }
  out += cached_prefix_;
  const auto ms = static_cast<int>(t % 1000);
  const char digits[4] = {static_cast<char>('0' + ms / 100), static_cast<char>('0' + ms / 10 % 10),
                          static_cast<char>('0' + ms % 10), 'Z'};
  out.append(digits, 4);
}

void EventFormatter::AppendHit(const storage::StoredEvent& ev, std::string& out) {
  out += "{\"_id\":";
  AppendJsonString(out, ev.id);
  out += ",\"_index\":";
  AppendJsonString(out, ev.index);
  out += ",\"@timestamp\":\"";
  AppendTimestamp(ev.ts_ms, out);
  out += "\",\"_source\":";
  const std::size_t at = out.size();
  out += ev.source;
  // A document sent pretty-printed keeps its line breaks, which are JSON
  // whitespace (inside strings they are escaped): as spaces the hit stays one
  // line, as NDJSON and SSE need.
  if (HasLineBreak(ev.source)) {
    for (std::size_t i = at; i < out.size(); ++i) {
      if (out[i] == '\n' || out[i] == '\r') out[i] = ' ';
    }
  }
  out.push_back('}');
}

void EventFormatter::ReadDocument(const storage::StoredEvent& ev) {
  read_ = extractor_.Extract(ev.source).ok();
  message_.reset();
  if (!read_) return;
  message_ = storage::MessageOf(extractor_, kMessage);
}

const std::vector<Value>& EventFormatter::Values(std::size_t i) const {
  static const std::vector<Value> kNone;
  return read_ ? extractor_.values(i) : kNone;
}

void EventFormatter::AppendColumnsJson(const storage::StoredEvent& ev, std::string& out) {
  ReadDocument(ev);
  JsonWriter w;
  w.BeginObject();
  for (std::size_t i = 0; i < columns_.size(); ++i) {
    const std::string& c = columns_[i];
    w.Key(c);
    if (c == "@timestamp") {
      std::string ts;
      AppendTimestamp(ev.ts_ms, ts);
      w.String(ts);
    } else if (c == "_id") {
      w.String(ev.id);
    } else if (c == "_index") {
      w.String(ev.index);
    } else if (c == "_source") {
      w.Raw(ev.source);
    } else if (c == "message") {
      message_ ? w.String(*message_) : w.Null();
    } else if (c == "level") {
      ev.level.empty() ? w.Null() : w.String(ev.level);
    } else {
      const auto& values = Values(column_names_[i]);
      if (values.empty()) {
        w.Null();
      } else if (values.size() == 1) {
        AppendFieldJson(values[0], w);
      } else {
        w.BeginArray();
        for (const Value& v : values) AppendFieldJson(v, w);
        w.EndArray();
      }
    }
  }
  w.EndObject();
  std::string line = w.Release();
  for (char& c : line) {
    if (c == '\n' || c == '\r') c = ' ';  // only raw _source can hold them (whitespace)
  }
  out += line;
}

void EventFormatter::AppendCsvRow(const storage::StoredEvent& ev, std::string& out) {
  ReadDocument(ev);
  for (std::size_t i = 0; i < columns_.size(); ++i) {
    if (i > 0) out.push_back(',');
    const std::string& c = columns_[i];
    if (c == "@timestamp") {
      AppendTimestamp(ev.ts_ms, out);
    } else if (c == "_id") {
      AppendCsvCell(ev.id, out);
    } else if (c == "_index") {
      AppendCsvCell(ev.index, out);
    } else if (c == "_source") {
      AppendCsvCell(ev.source, out);
    } else if (c == "message") {
      AppendCsvCell(message_.value_or(""), out);
    } else if (c == "level") {
      AppendCsvCell(ev.level, out);
    } else {
      AppendCsvCell(Joined(Values(column_names_[i])), out);
    }
  }
  out += "\r\n";
}

void EventFormatter::AppendTextLine(const storage::StoredEvent& ev, std::string& out) {
  ReadDocument(ev);
  AppendTimestamp(ev.ts_ms, out);
  out.push_back(' ');
  AppendOneLine(ev.level.empty() ? std::string_view("-") : std::string_view(ev.level), out);
  out.push_back(' ');
  const std::string host = Host();
  AppendOneLine(host.empty() ? std::string_view("-") : std::string_view(host), out);
  out.push_back(' ');
  // An event without a message shows its document, so the line still says
  // what happened.
  AppendOneLine(message_ ? *message_ : std::string_view(ev.source), out);
  out.push_back('\n');
}

// host.name (Beats, ECS), else host.hostname (older Beats), else a plain
// string `host`.
std::string EventFormatter::Host() const {
  for (std::size_t i = kFirstField; i < kFirstField + 2; ++i) {
    std::string joined = Joined(Values(i));
    if (!joined.empty()) return joined;
  }
  return std::string(storage::StringValue(Values(kFirstField + 2)).value_or(""));
}

}  // namespace dashcam::api
