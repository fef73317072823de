#include "server/api_keys.h"

#include <algorithm>

#include <set>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "api/query_parser.h"

namespace dashcam::server {

std::string_view RoleName(Role role) {
  switch (role) {
    case Role::kIngest:
      return "ingest";
    case Role::kRead:
      return "read";
    case Role::kAdmin:
      return "admin";
  }
  return "?";
}

std::optional<Role> ParseRole(std::string_view name) {
  if (name == "ingest") return Role::kIngest;
  if (name == "read") return Role::kRead;
  if (name == "admin") return Role::kAdmin;
  return std::nullopt;
}

bool IsValidKeyId(std::string_view id) {
  if (id.empty() || id.size() > 64) return false;
  for (char c : id) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

namespace {

Status Bad(const std::string& path, const std::string& what) {
  return Status::InvalidArgument(fmt::format("auth file {}: {}", path, what));
}

// Checks what only a whole entry can tell; `where` names it in errors.
Status CheckEntry(ApiKey& key, const std::string& path, const std::string& where) {
  if (!IsValidKeyId(key.id)) return Bad(path, where + ": id must be 1-64 of [A-Za-z0-9._-]");
  if (key.hash.iterations < kMinIterations || key.hash.iterations > kMaxIterations) {
    return Bad(path, fmt::format("{}: iterations must be in [{}, {}]", where, kMinIterations,
                                 kMaxIterations));
  }
  if (key.hash.salt.size() < 8) return Bad(path, where + ": salt must be base64 of >= 8 bytes");
  if (key.hash.hash.size() != kHashBytes) {
    return Bad(path, where + ": hash must be base64 of 32 bytes (PBKDF2-HMAC-SHA256)");
  }
  if (key.filter_text.empty()) return Status::Ok();
  if (key.role != Role::kRead) return Bad(path, where + ": only a read key may have a filter");
  // Parsed here to refuse a bad filter at startup; each request parses it
  // again with its own now (server/router.cpp), for date math.
  auto parsed = api::ParseQuery(key.filter_text);
  if (auto* err = std::get_if<api::QueryError>(&parsed)) {
    return Bad(path,
               fmt::format("{}: filter: {} at position {}", where, err->reason, err->position));
  }
  key.filter = std::move(std::get<query::Node>(parsed));
  return Status::Ok();
}

Result<ApiKey> ParseEntry(const YAML::Node& node, const std::string& path, std::size_t index) {
  const std::string where = fmt::format("keys[{}]", index);
  if (!node.IsMap()) return Bad(path, where + " must be a mapping");
  ApiKey key;
  bool has_role = false;
  for (const auto& kv : node) {
    const auto name = kv.first.as<std::string>();
    if (!kv.second.IsScalar()) return Bad(path, fmt::format("{}.{} must be a scalar", where, name));
    const auto value = kv.second.as<std::string>();
    if (name == "id") {
      key.id = value;
    } else if (name == "role") {
      auto role = ParseRole(value);
      if (!role) return Bad(path, where + ": role must be ingest, read or admin");
      key.role = *role;
      has_role = true;
    } else if (name == "iterations") {
      key.hash.iterations = kv.second.as<std::uint32_t>();
    } else if (name == "salt" || name == "hash") {
      auto bytes = Base64Decode(value);
      if (!bytes) return Bad(path, fmt::format("{}.{} is not base64", where, name));
      (name == "salt" ? key.hash.salt : key.hash.hash) = std::move(*bytes);
    } else if (name == "filter") {
      key.filter_text = value;
    } else {
      return Bad(path, fmt::format("{}: unknown field '{}' (id, role, iterations, salt, hash, "
                                   "filter)",
                                   where, name));
    }
  }
  if (!has_role) return Bad(path, where + ": role is missing");
  if (auto s = CheckEntry(key, path, where); !s.ok()) return s;
  return key;
}

}  // namespace

Result<std::unique_ptr<ApiKeySet>> ApiKeySet::Load(const std::string& path) {
  std::vector<ApiKey> keys;
  try {
    const YAML::Node root = YAML::LoadFile(path);
    if (!root.IsMap() || !root["keys"] || !root["keys"].IsSequence()) {
      return Bad(path, "the file must be a mapping with a list 'keys'");
    }
    for (const auto& kv : root) {
      if (kv.first.as<std::string>() != "keys") {
        return Bad(path, fmt::format("unknown key '{}' (keys)", kv.first.as<std::string>()));
      }
    }
    std::set<std::string> ids;
    std::size_t i = 0;
    for (const auto& item : root["keys"]) {
      auto key = ParseEntry(item, path, i++);
      if (!key.ok()) return key.status();
      if (!ids.insert(key->id).second) return Bad(path, "duplicate id '" + key->id + "'");
      keys.push_back(std::move(*key));
    }
  } catch (const YAML::Exception& e) {
    return Bad(path, e.what());
  }
  if (keys.empty()) return Bad(path, "no keys: nobody could use the server");
  return std::make_unique<ApiKeySet>(std::move(keys));
}

namespace {

KeyHash DecoyHash(const std::vector<ApiKey>& keys) {
  std::vector<std::uint32_t> iterations;
  for (const ApiKey& k : keys) iterations.push_back(k.hash.iterations);
  if (iterations.empty()) return HashKey("decoy", kMinIterations);
  std::nth_element(iterations.begin(), iterations.begin() + iterations.size() / 2,
                   iterations.end());
  return HashKey("decoy", iterations[iterations.size() / 2]);
}

}  // namespace

ApiKeySet::ApiKeySet(std::vector<ApiKey> keys) : keys_(std::move(keys)), decoy_(DecoyHash(keys_)) {}

const ApiKey* ApiKeySet::Find(std::string_view id) const {
  for (const auto& k : keys_) {
    if (k.id == id) return &k;
  }
  return nullptr;
}

namespace {

std::string CacheKey(std::string_view id, std::string_view key) {
  std::string material;
  material.reserve(id.size() + 1 + key.size());
  material.append(id).push_back('\0');
  material.append(key);
  return Sha256(material);
}

}  // namespace

std::optional<ApiKeySet::Verdict> ApiKeySet::CachedVerify(std::string_view id,
                                                          std::string_view key) {
  const ApiKey* k = Find(id);
  if (k == nullptr) return std::nullopt;  // Verify spends the time a known id would
  const std::string ck = CacheKey(id, key);
  std::lock_guard lock(mu_);
  auto it = verified_.find(ck);
  if (it == verified_.end()) return std::nullopt;
  if (it->second < std::chrono::steady_clock::now()) {
    verified_.erase(it);
    return std::nullopt;
  }
  return Verdict{Outcome::kOk, k};
}

ApiKeySet::Verdict ApiKeySet::Verify(std::string_view id, std::string_view key) {
  if (auto cached = CachedVerify(id, key)) return *cached;
  const ApiKey* k = Find(id);
  if (k == nullptr) {
    VerifyKey(key, decoy_);
    return Verdict{Outcome::kUnknownKey, nullptr};
  }
  if (!VerifyKey(key, k->hash)) return Verdict{Outcome::kBadKey, nullptr};
  const auto now = std::chrono::steady_clock::now();
  std::lock_guard lock(mu_);
  if (verified_.size() >= kVerifiedCacheEntries) {
    std::erase_if(verified_, [now](const auto& e) { return e.second < now; });
    if (verified_.size() >= kVerifiedCacheEntries) verified_.clear();
  }
  verified_[CacheKey(id, key)] = now + kVerifiedCacheTtl;
  return Verdict{Outcome::kOk, k};
}

}  // namespace dashcam::server
