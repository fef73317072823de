#include "storage/clickhouse/ch_literal.h"

#include <cmath>

#include <fmt/format.h>

namespace dashcam::storage::clickhouse {
namespace {

constexpr char kHex[] = "0123456789ABCDEF";

// Appends `bytes` with `quote` and the backslash escaped, control bytes as \xHH.
std::string Quoted(std::string_view bytes, char quote) {
  std::string out;
  out.reserve(bytes.size() + 2);
  out.push_back(quote);
  for (const char c : bytes) {
    const auto u = static_cast<unsigned char>(c);
    if (c == quote || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (u < 0x20 || u == 0x7F) {
      out += "\\x";
      out.push_back(kHex[u >> 4]);
      out.push_back(kHex[u & 0xF]);
    } else {
      out.push_back(c);
    }
  }
  out.push_back(quote);
  return out;
}

}  // namespace

std::string ChString(std::string_view bytes) {
  return Quoted(bytes, '\'');
}

std::string ChNumber(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  // fmt's shortest round-trip form ("0.5", "1e+300"); a literal that starts
  // with '-' is a unary minus, which ClickHouse folds.
  return fmt::format("{}", v);
}

std::string ChIdentifier(std::string_view name) {
  return Quoted(name, '`');
}

}  // namespace dashcam::storage::clickhouse
