#include "server/key_hash.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/sha.h>

#include <cstdio>
#include <cstdlib>

namespace dashcam::server {

std::string Pbkdf2Sha256(std::string_view key, std::string_view salt, std::uint32_t iterations) {
  std::string out(kHashBytes, '\0');
  const int ok = PKCS5_PBKDF2_HMAC(
      key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(salt.data()),
      static_cast<int>(salt.size()), static_cast<int>(iterations), EVP_sha256(),
      static_cast<int>(out.size()), reinterpret_cast<unsigned char*>(out.data()));
  if (ok != 1) {
    std::fputs("dashcam: PBKDF2 failed\n", stderr);
    std::abort();
  }
  return out;
}

KeyHash HashKey(std::string_view key, std::uint32_t iterations) {
  KeyHash h;
  h.iterations = iterations;
  h.salt = RandomBytes(kSaltBytes);
  h.hash = Pbkdf2Sha256(key, h.salt, iterations);
  return h;
}

bool VerifyKey(std::string_view key, const KeyHash& stored) {
  return ConstantTimeEquals(Pbkdf2Sha256(key, stored.salt, stored.iterations), stored.hash);
}

bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

std::string Sha256(std::string_view data) {
  std::string out(SHA256_DIGEST_LENGTH, '\0');
  SHA256(reinterpret_cast<const unsigned char*>(data.data()), data.size(),
         reinterpret_cast<unsigned char*>(out.data()));
  return out;
}

std::string RandomBytes(std::size_t n) {
  std::string out(n, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(out.data()), static_cast<int>(n)) != 1) {
    std::fputs("dashcam: the random number generator failed\n", stderr);
    std::abort();
  }
  return out;
}

std::string GenerateKey() {
  std::string b64 = Base64Encode(RandomBytes(32));
  while (!b64.empty() && b64.back() == '=') b64.pop_back();
  for (char& c : b64) {
    if (c == '+') c = '-';
    if (c == '/') c = '_';
  }
  return b64;
}

namespace {

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int Sextet(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

}  // namespace

std::string Base64Encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const auto v = (std::uint32_t(std::uint8_t(bytes[i])) << 16) |
                   (std::uint32_t(std::uint8_t(bytes[i + 1])) << 8) | std::uint8_t(bytes[i + 2]);
    for (int s = 18; s >= 0; s -= 6) out += kAlphabet[(v >> s) & 63];
  }
  const std::size_t rest = bytes.size() - i;
  if (rest > 0) {
    std::uint32_t v = std::uint32_t(std::uint8_t(bytes[i])) << 16;
    if (rest == 2) v |= std::uint32_t(std::uint8_t(bytes[i + 1])) << 8;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += rest == 2 ? kAlphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

std::optional<std::string> Base64Decode(std::string_view text) {
  if (text.size() % 4 != 0) return std::nullopt;
  std::string out;
  out.reserve(text.size() / 4 * 3);
  for (std::size_t i = 0; i < text.size(); i += 4) {
    const bool last = i + 4 == text.size();
    const int pad = last ? (text[i + 3] == '=') + (text[i + 2] == '=') : 0;
    if (pad == 1 && text[i + 2] == '=') return std::nullopt;  // "x=y=" is not padding
    std::uint32_t v = 0;
    for (int j = 0; j < 4; ++j) {
      const int s = j >= 4 - pad ? 0 : Sextet(text[i + j]);
      if (s < 0) return std::nullopt;
      v = (v << 6) | static_cast<std::uint32_t>(s);
    }
    out += static_cast<char>((v >> 16) & 0xff);
    if (pad < 2) out += static_cast<char>((v >> 8) & 0xff);
    if (pad < 1) out += static_cast<char>(v & 0xff);
  }
  return out;
}

}  // namespace dashcam::server
