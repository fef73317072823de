#include "storage/attrs_codec.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <span>

namespace dashcam::storage {
namespace {

void AppendSanitized(std::string& out, std::string_view s, char replacement) {
  for (char c : s) {
    out.push_back(c == kRecordSeparator || c == kNameSeparator ? replacement : c);
  }
}

void AppendRecord(std::string& out, std::string_view name, char type, std::string_view value) {
  AppendSanitized(out, name, '_');
  out.push_back(kNameSeparator);
  out.push_back(type);
  AppendSanitized(out, value, ' ');
}

// Whether `list` is `names` joined with commas.
constexpr bool IsJoinedList(std::string_view list, std::span<const std::string_view> names) {
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i > 0) {
      if (!list.starts_with(',')) return false;
      list.remove_prefix(1);
    }
    if (!list.starts_with(names[i])) return false;
    list.remove_prefix(names[i].size());
  }
  return list.empty();
}
static_assert(IsJoinedList(kKeywordFields, kKeywordFieldNames));

}  // namespace

bool IsIndexedField(std::string_view name) {
  return !name.starts_with("train.") && name != "log.offset";
}

bool IndexesEverythingUnder(std::string_view field) {
  // The objects holding what IsIndexedField leaves out (train.*, log.offset).
  return IsIndexedField(field) && field != "train" && field != "log";
}

bool ListsField(std::string_view list, std::string_view field) {
  while (!list.empty()) {
    const std::size_t comma = list.find(',');
    if (list.substr(0, comma) == field) return true;
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return false;
}

// Called for every field of every event on the writer thread: four
// comparisons, no parsing.
bool IsKeywordField(std::string_view name) {
  return std::find(kKeywordFieldNames.begin(), kKeywordFieldNames.end(), name) !=
         kKeywordFieldNames.end();
}

namespace {

// The records of EncodeAttrs, without its marker.
void AppendRecords(const std::vector<Field>& fields, std::string_view index, std::string& out) {
  bool first = true;
  auto sep = [&] {
    if (!first) out.push_back(kRecordSeparator);
    first = false;
  };
  if (!index.empty()) {
    sep();
    AppendRecord(out, "_index", 'k', index);
  }
  for (const Field& f : fields) {
    if (!IsIndexedField(f.name)) continue;
    sep();
    const char type = f.type == Field::Type::kNumber ? 'n' : IsKeywordField(f.name) ? 'k' : 's';
    AppendRecord(out, f.name, type, f.text);
  }
}

}  // namespace

void EncodeAttrs(const std::vector<Field>& fields, std::string_view index, std::string& out) {
  out.push_back(kAttrsMarker);
  AppendRecords(fields, index, out);
}

void EncodeIndexedEvent(std::string_view message, const std::vector<Field>& fields,
                        std::string_view index, std::string& out) {
  out.push_back(kEventMarker);
  // Cut, never wrapped: the bytes after n are read as records.
  const auto n = static_cast<std::uint32_t>(
      std::min<std::size_t>(message.size(), std::numeric_limits<std::uint32_t>::max()));
  for (int shift = 0; shift < 32; shift += 8) out.push_back(static_cast<char>(n >> shift));
  out.append(message.substr(0, n));
  AppendRecords(fields, index, out);
}

void EncodeMessage(std::string_view message, std::string& out) {
  out.push_back(kMessageMarker);
  out.append(message);
}

std::string EncodeMessagePhrase(std::string_view text) {
  std::string out;
  EncodeMessage(text, out);
  return out;
}

std::string EncodeFieldPhrase(std::string_view field, std::string_view text) {
  std::string out(1, kAttrsMarker);
  AppendRecord(out, field, 's', text);
  return out;
}

std::string EncodeFieldNumber(std::string_view field, std::string_view canonical) {
  std::string out(1, kAttrsMarker);
  AppendRecord(out, field, 'n', canonical);
  return out;
}

std::string EncodeRawTerm(std::string_view term) {
  std::string out(1, kRawTermMarker);
  out.append(term);
  return out;
}

std::string EncodeRawFieldTerm(std::string_view term) {
  std::string out(1, kRawFieldTermMarker);
  out.append(term);
  return out;
}

std::string_view UnledTerm(std::string_view term) {
  if (!term.empty() && term.front() == kFieldTermLead) term.remove_prefix(1);
  return term;
}

std::string FieldTermPrefix(std::string_view field) {
  std::string out;
  AppendSanitized(out, field, '_');
  out.push_back(kNameSeparator);
  return out;
}

std::string KeywordTermPrefix(std::string_view field) {
  std::string out = FieldTermPrefix(field);
  out.push_back(kKeywordMark);
  return out;
}

std::string KeywordTerm(std::string_view field, std::string_view value) {
  std::string out = KeywordTermPrefix(field);
  AppendSanitized(out, CutUtf8(value, kMaxKeywordBytes), ' ');
  return out;
}

std::string_view CutUtf8(std::string_view s, std::size_t max) {
  if (s.size() <= max) return s;
  std::size_t n = max;
  // Back over continuation bytes (10xxxxxx) to the start of a sequence: at
  // most 3 in valid UTF-8, and no further in anything else.
  while (n > 0 && max - n < 3 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return s.substr(0, n);
}

std::string CanonicalInteger(std::int64_t v) {
  return std::to_string(v);
}

std::string CanonicalDouble(double v) {
  if (std::isfinite(v) && std::trunc(v) == v && std::fabs(v) < 9.0e15) {
    return CanonicalInteger(static_cast<std::int64_t>(v));
  }
  char buf[64];
  auto [p, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc() ? std::string(buf, p) : std::string("nan");
}

std::optional<std::string> CanonicalNumberText(std::string_view text) {
  if (text.empty()) return std::nullopt;
  const char* b = text.data();
  const char* e = b + text.size();
  std::int64_t i = 0;
  auto [pi, eci] = std::from_chars(b, e, i);
  if (eci == std::errc() && pi == e) return CanonicalInteger(i);
  double d = 0;
  auto [pd, ecd] = std::from_chars(b, e, d, std::chars_format::general);
  if (ecd != std::errc() || pd != e || !std::isfinite(d)) return std::nullopt;
  return CanonicalDouble(d);
}

}  // namespace dashcam::storage
