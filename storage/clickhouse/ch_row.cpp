#include "storage/clickhouse/ch_row.h"

#include <charconv>
#include <cmath>
#include <ctime>

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

std::optional<double> WholeFiniteDouble(std::string_view s) {
  double v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || !std::isfinite(v)) return std::nullopt;
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

std::uint32_t ChSeq(std::string_view id) {
  std::uint64_t h = 14695981039346656037ull;
  for (char c : id) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return static_cast<std::uint32_t>(h & 0xFFFFF);
}

std::string ChTokenName(std::string_view field) {
  std::string name(field);
  for (char& c : name) {
    if (c == ' ' || c == kChValueMark || c == kChNameMark) c = '\x1d';
  }
  return name;
}

Status ChRowEncoder::Append(const Record& record, std::string_view id, std::string& out) {
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
  auto add_string = [&](std::string_view name, std::string_view text) {
    str_names.String(name);
    str_values.String(text);
    if (!IsKeywordField(name)) AppendValueTokens(ChTokenName(name), text, ftokens_);
  };
  if (!record.index.empty()) add_string(query::kIndexField, record.index);
  for (const Field& f : view_.fields) {
    if (f.name == query::kIndexField) continue;  // _index is the index name only
    if (f.type == Field::Type::kNumber) {
      num_names.String(f.name);
      num_values.Number(f.number);
      continue;
    }
    add_string(f.name, f.text);
    if (f.type != Field::Type::kString) continue;
    if (auto v = WholeFiniteDouble(f.text)) {
      snum_names.String(f.name);
      snum_values.Number(*v);
    }
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
  fmt::format_to(std::back_inserter(out), "\",\"ms\":{},\"seq\":{},\"id\":", record.ts_ms % 1000,
                 ChSeq(id));
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
  out += ",\"source\":";
  AppendJsonString(out, record.source);
  out += "}\n";
  return Status::Ok();
}

}  // namespace dashcam::storage::clickhouse
