// ApiKeySet: the API keys of --auth-file, and their verification.
//
// File format (YAML; `dashcam hash-key` prints one entry):
//   keys:
//     - id: filebeat-gpu01      # [A-Za-z0-9._-]{1,64}: the user name in Basic,
//       role: ingest            #   the id in ApiKey and Bearer forms
//       iterations: 10000       # PBKDF2-HMAC-SHA256 (server/key_hash.h)
//       salt: <base64>          # >= 8 bytes
//       hash: <base64>          # 32 bytes
//     - id: zhangsan
//       role: read              # ingest | read | admin
//       filter: 'user:zhangsan' # read keys only: ANDed into every query
//       ...
// The key itself is never stored. A filter is parsed when the file is
// loaded (a bad one stops startup) and again for each request, so that date
// math in it (now-1d) means that request's now.
//
// Verification is PBKDF2 (deliberately slow), so a successful one is cached
// in memory for kVerifiedCacheTtl, keyed by SHA-256(id, key): a client that
// sends the same key on every request pays the hash once per TTL. The cache
// holds at most kVerifiedCacheEntries (expired entries are swept, then the
// whole cache is cleared when still full: the cost is re-verification).
//
// Thread-safety: all methods may be called from any thread. Verify may take
// hundreds of milliseconds: never on an I/O thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "server/key_hash.h"
#include "storage/query_ast.h"
#include "storage/status.h"

namespace dashcam::server {

enum class Role { kIngest, kRead, kAdmin };
std::string_view RoleName(Role role);
std::optional<Role> ParseRole(std::string_view name);
// 1-64 of [A-Za-z0-9._-]: no ':' (it separates id and key) and nothing that
// needs quoting in YAML or a header.
bool IsValidKeyId(std::string_view id);

struct ApiKey {
  std::string id;
  Role role = Role::kRead;
  KeyHash hash;
  std::optional<query::Node> filter;  // read keys only
  std::string filter_text;
};

inline constexpr std::chrono::seconds kVerifiedCacheTtl{300};
inline constexpr std::size_t kVerifiedCacheEntries = 10'000;

class ApiKeySet {
 public:
  // The keys of a --auth-file. Errors: InvalidArgument naming the file and
  // the entry (unreadable, bad YAML, unknown field, duplicate id, bad role,
  // bad hash, a filter that does not parse, a filter on a non-read key).
  static Result<std::unique_ptr<ApiKeySet>> Load(const std::string& path);
  explicit ApiKeySet(std::vector<ApiKey> keys);

  enum class Outcome { kOk, kUnknownKey, kBadKey };
  struct Verdict {
    Outcome outcome = Outcome::kUnknownKey;
    const ApiKey* key = nullptr;  // when kOk; lives as long as this set
  };
  // From the cache only: kOk when (id, key) was verified within the TTL,
  // else nullopt (not known either way, also for an unknown id). Cheap: for
  // an I/O thread.
  std::optional<Verdict> CachedVerify(std::string_view id, std::string_view key);
  // The full check (runs PBKDF2 unless cached, also for an unknown id).
  // Blocks: call on a worker.
  Verdict Verify(std::string_view id, std::string_view key);

  std::size_t size() const { return keys_.size(); }

 private:
  const ApiKey* Find(std::string_view id) const;

  // Constant after construction.
  const std::vector<ApiKey> keys_;
  // What an unknown id is checked against, so that it costs what a known
  // one does and its answer's timing does not tell which ids exist: a hash
  // with the median iteration count of the keys.
  const KeyHash decoy_;

  std::mutex mu_;
  // SHA-256(id '\0' key) -> when the entry expires. Guarded by mu_.
  std::unordered_map<std::string, std::chrono::steady_clock::time_point> verified_;
};

}  // namespace dashcam::server
