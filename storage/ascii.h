// ASCII character classes and case, byte by byte: what tokenizers, parsers and
// detectors mean by a letter or a digit, whatever the C locale says (<cctype>
// depends on it, and takes an int that must not be a negative char).
// Bytes of UTF-8 sequences are none of these.
#pragma once

namespace dashcam::storage {

constexpr bool IsAsciiDigit(char c) {
  return c >= '0' && c <= '9';
}
constexpr bool IsAsciiLower(char c) {
  return c >= 'a' && c <= 'z';
}
constexpr bool IsAsciiUpper(char c) {
  return c >= 'A' && c <= 'Z';
}
constexpr bool IsAsciiAlpha(char c) {
  return IsAsciiLower(c) || IsAsciiUpper(c);
}
constexpr bool IsAsciiAlnum(char c) {
  return IsAsciiAlpha(c) || IsAsciiDigit(c);
}
constexpr bool IsAsciiHex(char c) {
  return IsAsciiDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}
constexpr char AsciiLower(char c) {
  return IsAsciiUpper(c) ? static_cast<char>(c - 'A' + 'a') : c;
}

}  // namespace dashcam::storage
