// KeyHash: how API keys are stored (server/api_keys.h): PBKDF2-HMAC-SHA256
// of the key with a random salt, never the key itself. Plus the small codecs
// the auth code needs (base64, random keys).
//
// Iterations: a key that `dashcam hash-key --generate` makes is 32 random
// bytes, which no amount of guessing finds, so its hash needs no stretching
// beyond being one-way: kGeneratedKeyIterations keeps verifying it cheap
// (~4 ms). A key typed by a person may be guessable: kChosenKeyIterations is
// OWASP's 2023 figure for PBKDF2-HMAC-SHA256 (~200 ms here). Either way a
// key is verified once per kVerifiedCacheTtl per client (api_keys.h).
//
// Thread-safety: pure functions (RandomBytes uses OpenSSL's thread-safe RNG).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace dashcam::server {

inline constexpr std::uint32_t kGeneratedKeyIterations = 10'000;
inline constexpr std::uint32_t kChosenKeyIterations = 600'000;
// Accepted in a keys file.
inline constexpr std::uint32_t kMinIterations = 1'000;
inline constexpr std::uint32_t kMaxIterations = 10'000'000;
inline constexpr std::size_t kSaltBytes = 16;
inline constexpr std::size_t kHashBytes = 32;  // SHA-256

struct KeyHash {
  std::uint32_t iterations = 0;
  std::string salt;  // raw bytes
  std::string hash;  // raw bytes, kHashBytes
};

// PBKDF2-HMAC-SHA256(key, salt, iterations), kHashBytes long.
std::string Pbkdf2Sha256(std::string_view key, std::string_view salt, std::uint32_t iterations);
// A new hash of `key` with a fresh random salt.
KeyHash HashKey(std::string_view key, std::uint32_t iterations);
// Whether `key` hashes to `stored`, compared in constant time.
bool VerifyKey(std::string_view key, const KeyHash& stored);
// Constant-time equality of two byte strings (their lengths are not secret).
bool ConstantTimeEquals(std::string_view a, std::string_view b);
// SHA-256 of `data`, raw bytes.
std::string Sha256(std::string_view data);

// `n` bytes from OpenSSL's CSPRNG. Aborts if the RNG fails (it cannot be
// seeded): handing out predictable keys or salts is worse than stopping.
std::string RandomBytes(std::size_t n);
// A new random key: 32 bytes, base64url without padding (43 characters,
// none of them ':' so it fits every header form).
std::string GenerateKey();

std::string Base64Encode(std::string_view bytes);
// Standard base64 (RFC 4648 §4) with padding; nullopt unless well formed.
std::optional<std::string> Base64Decode(std::string_view text);

}  // namespace dashcam::server
