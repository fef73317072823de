#include "storage/clickhouse/ch_row.h"

#include <charconv>
#include <cmath>
#include <ctime>
#include <unordered_set>

#include <fmt/format.h>

#include "storage/attrs_codec.h"
#include "storage/json_text.h"
#include "storage/query_ast.h"
#include "storage/text_tokenizer.h"

namespace dashcam::storage::clickhouse {
namespace {

// The last second a ClickHouse DateTime (UInt32 seconds) holds.
constexpr TimeMs kMaxChTimeMs = 4294967295LL * 1000 + 999;

// "YYYY-MM-DD hh:mm:ss" in UTC, as a DateTime('UTC') column reads it.
std::string FormatChDateTime(TimeMs t) {
  const std::time_t secs = static_cast<std::time_t>(t / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  return fmt::format("{:04}-{:02}-{:02} {:02}:{:02}:{:02}", tm.tm_year + 1900, tm.tm_mon + 1,
                     tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

// A string value's number for ranges: the whole text read by
// std::from_chars, as query_ast.h's kRange says ("inf" included); NaN, which
// no range holds, is left out.
std::optional<double> WholeNumber(std::string_view s) {
  double v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || std::isnan(v)) return std::nullopt;
  return v;
}

// A JSON array of strings, appended.
class JsonArray {
 public:
  explicit JsonArray(std::string& out) : out_(out) { out_ += '['; }
  void String(std::string_view s) {
    Comma();
    AppendJsonString(out_, s);
  }
  void Number(double v) {
    Comma();
    fmt::format_to(std::back_inserter(out_), "{}", v);
  }
  void Close() { out_ += ']'; }

 private:
  void Comma() {
    if (!first_) out_ += ',';
    first_ = false;
  }
  std::string& out_;
  bool first_ = true;
};

void AppendMessageTokens(std::string_view text, std::string& out) {
  out += ' ';
  TextTokenizer::Tokenize(text, [&](const TokenSpan& t) {
    out.append(t.token);
    out += ' ';
    return true;
  });
}

void AppendValueTokens(std::string_view name, std::string_view text, std::string& out) {
  out += kChValueMark;
  out += ' ';
  TextTokenizer::Tokenize(text, [&](const TokenSpan& t) {
    out.append(name);
    out += kChNameMark;
    out.append(t.token);
    out += ' ';
    return true;
  });
}

}  // namespace

std::string ChTokenName(std::string_view field) {
  std::string name(field);
  for (char& c : name) {
    if (c == ' ' || c == kChValueMark || c == kChNameMark) c = '\x1d';
  }
  return name;
}

Status ChRowEncoder::Append(const Record& record, std::string_view id, std::uint32_t seq,
                            TimeMs ins_ms, std::string& out) {
  if (record.ts_ms < 0 || record.ts_ms > kMaxChTimeMs) {
    return Status::InvalidArgument("event time is past what a ClickHouse DateTime holds");
  }
  view_ = DocumentView{};
  if (Status s = reader_.ReadUnpadded(record.source, view_); !s.ok()) return s;

  tokens_.clear();
  if (view_.message) AppendMessageTokens(*view_.message, tokens_);
  ftokens_.clear();
  std::string names_s, values_s, names_n, values_n, names_sn, values_sn;
  JsonArray str_names(names_s), str_values(values_s), num_names(names_n), num_values(values_n),
      snum_names(names_sn), snum_values(values_sn);
  // A string value: its text for ranges and regexes, its number for numeric
  // ranges, and (unless a keyword, or the message) its tokens.
  auto add_string = [&](std::string_view name, std::string_view text, bool tokens) {
    str_names.String(name);
    str_values.String(text);
    if (auto v = WholeNumber(text)) {
      snum_names.String(name);
      snum_values.Number(*v);
    }
    if (tokens && !IsKeywordField(name)) AppendValueTokens(ChTokenName(name), text, ftokens_);
  };
  auto add_field = [&](const Field& f) {
    if (f.name == query::kIndexField) return;  // _index is the index name only
    if (f.type == Field::Type::kNumber) {
      num_names.String(f.name);
      num_values.Number(f.number);
    } else if (f.type == Field::Type::kBool) {
      str_names.String(f.name);  // "true"/"false": a string, but no number
      str_values.String(f.text);
      AppendValueTokens(ChTokenName(f.name), f.text, ftokens_);
    } else {
      add_string(f.name, f.text, true);
    }
  };
  if (view_.message) add_string(kChMessageName, *view_.message, false);
  if (!record.index.empty()) add_string(query::kIndexField, record.index, true);
  // The document's fields, then those ingest derived without writing them
  // into the document (e.g. run.id next to a client's own `run` object),
  // which the SQLite index holds too.
  std::unordered_set<std::string_view> in_document;
  for (const Field& f : view_.fields) {
    add_field(f);
    in_document.insert(f.name);
  }
  for (const Field& f : record.fields) {
    if (!in_document.contains(f.name)) add_field(f);
  }
  str_names.Close();
  str_values.Close();
  num_names.Close();
  num_values.Close();
  snum_names.Close();
  snum_values.Close();
  if (!ftokens_.empty()) ftokens_ += kChValueMark;

  out += "{\"ts\":\"";
  out += FormatChDateTime(record.ts_ms);
  fmt::format_to(std::back_inserter(out),
                 "\",\"ms\":{},\"seq\":{},\"ins\":{},\"id\":", record.ts_ms % 1000,
                 seq & kChSeqMask, ins_ms);
  AppendJsonString(out, id);
  out += ",\"idx\":";
  AppendJsonString(out, record.index);
  out += ",\"level\":";
  AppendJsonString(out, record.level);
  out += ",\"message\":";
  AppendJsonString(out, view_.message.value_or(""));
  out += ",\"has_msg\":";
  out += view_.message ? '1' : '0';
  out += ",\"tokens\":";
  AppendJsonString(out, tokens_);
  out += ",\"ftokens\":";
  AppendJsonString(out, ftokens_);
  out += ",\"str_names\":" + names_s + ",\"str_values\":" + values_s;
  out += ",\"num_names\":" + names_n + ",\"num_values\":" + values_n;
  out += ",\"snum_names\":" + names_sn + ",\"snum_values\":" + values_sn;
  out += ",\"grp\":";
  AppendJsonString(out, record.group);
  out += ",\"grp_end\":";
  out += record.group_end ? '1' : '0';
  out += ",\"source\":";
  AppendJsonString(out, record.source);
  out += "}\n";
  return Status::Ok();
}

}  // namespace dashcam::storage::clickhouse
