#include "storage/record.h"

#include <charconv>

namespace dashcam::storage {

std::size_t Record::ApproxBytes() const {
  std::size_t n = sizeof(Record) + level.size() + message.size() + index.size() + doc_id.size() +
                  source.size() + group.size() + stored_source.size();
  for (const Field& f : fields) n += sizeof(Field) + f.name.size() + f.text.size();
  return n;
}

std::string FormatEventKey(EventKey key) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(16, '0');
  auto v = static_cast<std::uint64_t>(key);
  for (int i = 15; i >= 0; --i, v >>= 4) out[static_cast<std::size_t>(i)] = kHex[v & 0xF];
  return out;
}

std::optional<EventKey> ParseEventKey(std::string_view text) {
  if (text.size() != 16) return std::nullopt;
  std::uint64_t v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v, 16);
  if (ec != std::errc() || p != text.data() + text.size()) return std::nullopt;
  for (char c : text) {
    if (c >= 'A' && c <= 'F') return std::nullopt;  // one spelling per key
  }
  return static_cast<EventKey>(v);
}

}  // namespace dashcam::storage
