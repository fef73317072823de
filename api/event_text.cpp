#include "api/event_text.h"

#include <string_view>

#include "storage/time_format.h"

namespace dashcam::api {
namespace {

// Appends `text` on one line: line breaks and backslashes escaped, other
// control characters as spaces; "-" when empty.
void AppendOneLine(std::string& out, std::string_view text) {
  if (text.empty()) {
    out.push_back('-');
    return;
  }
  for (char c : text) {
    switch (c) {
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\\':
        out += "\\\\";
        break;
      default:
        out.push_back(static_cast<unsigned char>(c) < 0x20 && c != '\t' ? ' ' : c);
    }
  }
}

std::string_view Host(const storage::DocumentView& doc) {
  std::string_view host_name, host_hostname, host;
  for (const storage::Field& f : doc.fields) {
    if (f.name == "host.name" && host_name.empty()) host_name = f.text;
    if (f.name == "host.hostname" && host_hostname.empty()) host_hostname = f.text;
    if (f.name == "host" && f.type == storage::Field::Type::kString && host.empty()) host = f.text;
  }
  if (!host_name.empty()) return host_name;
  return host_hostname.empty() ? host : host_hostname;
}

}  // namespace

void EventLineFormatter::Append(const storage::StoredEvent& ev, std::string& out) {
  out += FormatRfc3339Ms(ev.ts_ms);
  out.push_back(' ');
  const bool parsed = reader_.ReadUnpadded(ev.source, view_).ok();
  // Hosts and levels with spaces would shift the columns; they are rare.
  AppendOneLine(out, ev.level);
  out.push_back(' ');
  AppendOneLine(out, parsed ? Host(view_) : std::string_view());
  out.push_back(' ');
  if (parsed && view_.message)
    AppendOneLine(out, *view_.message);
  else
    AppendOneLine(out, ev.source);
  out.push_back('\n');
}

}  // namespace dashcam::api
