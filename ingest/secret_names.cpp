#include "ingest/secret_names.h"

#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include "storage/ascii.h"

namespace dashcam::ingest {
namespace {

using storage::AsciiLower;
using storage::IsAsciiAlpha;
using storage::IsAsciiDigit;
using storage::IsAsciiLower;
using storage::IsAsciiUpper;

// Words of a name, lowercased. Boundaries: any non-alphanumeric byte, a
// lowercase->uppercase step ("clientSecret"), the last capital of an
// acronym before a lowercase letter ("HFToken"), and letter<->digit steps.
std::vector<std::string> SplitWords(std::string_view name) {
  std::vector<std::string> words;
  std::string cur;
  const auto flush = [&] {
    if (!cur.empty()) words.push_back(std::move(cur));
    cur.clear();
  };
  for (std::size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    if (!IsAsciiAlpha(c) && !IsAsciiDigit(c)) {
      flush();
      continue;
    }
    if (i > 0 && !cur.empty()) {
      const char p = name[i - 1];
      const bool camel = IsAsciiLower(p) && IsAsciiUpper(c);
      const bool acronym_end =
          IsAsciiUpper(p) && IsAsciiUpper(c) && i + 1 < name.size() && IsAsciiLower(name[i + 1]);
      const bool digit_step = IsAsciiDigit(p) != IsAsciiDigit(c);
      if (camel || acronym_end || digit_step) flush();
    }
    cur.push_back(AsciiLower(c));
  }
  flush();
  return words;
}

template <std::size_t N>
bool OneOf(const std::string& w, const std::array<std::string_view, N>& set) {
  return std::find(set.begin(), set.end(), w) != set.end();
}

constexpr std::array<std::string_view, 11> kSecretWords = {
    "password",    "passwd",        "pwd",    "passphrase", "secret",    "credential",
    "credentials", "authorization", "apikey", "accesskey",  "privatekey"};
constexpr std::array<std::string_view, 4> kKeyQualifiers = {"api", "access", "private", "secret"};
// A trailing word that makes the name about the secret, not the secret.
constexpr std::array<std::string_view, 30> kMetadataSuffixes = {
    "id",      "ids",     "type",    "types",    "name",   "names",  "file",   "path",
    "dir",     "length",  "len",     "size",     "count",  "counts", "num",    "number",
    "index",   "idx",     "expiry",  "expires",  "expire", "ttl",    "policy", "required",
    "enabled", "changed", "updated", "provider", "source", "version"};
// Words before `token` that make it a tokenizer's token.
constexpr std::array<std::string_view, 26> kVocabularyWords = {
    "pad",   "eos", "bos",  "unk",   "sep",   "cls",    "mask",   "special",    "additional",
    "max",   "min", "num",  "total", "input", "output", "prompt", "completion", "new",
    "start", "end", "stop", "image", "audio", "text",   "per",    "vocab"};

bool SecretAt(const std::vector<std::string>& w, std::size_t i) {
  if (OneOf(w[i], kSecretWords)) return true;
  if (w[i] == "key" && i > 0 && OneOf(w[i - 1], kKeyQualifiers)) return true;
  if (w[i] == "token") return i == 0 || !OneOf(w[i - 1], kVocabularyWords);
  return false;
}

// Whether the name contains, in any case, a fragment every secret word has:
// most names ("host", "gpu_id") are rejected here without splitting.
bool MayBeSecret(std::string_view name) {
  constexpr std::string_view kFragments[] = {"pass", "pwd",        "secret", "token",
                                             "key",  "credential", "auth"};
  for (const auto frag : kFragments) {
    if (name.size() < frag.size()) continue;
    for (std::size_t i = 0; i + frag.size() <= name.size(); ++i) {
      std::size_t j = 0;
      while (j < frag.size() && AsciiLower(name[i + j]) == frag[j]) ++j;
      if (j == frag.size()) return true;
    }
  }
  return false;
}

}  // namespace

bool IsSecretName(std::string_view name) {
  if (!MayBeSecret(name)) return false;
  if (name == "PWD" || name == "OLDPWD") return false;
  const auto words = SplitWords(name);
  if (words.empty()) return false;
  // "token_type", "api_key_id", "password_file": about a secret, not one.
  if (words.size() > 1 && OneOf(words.back(), kMetadataSuffixes)) return false;
  for (std::size_t i = 0; i < words.size(); ++i) {
    if (SecretAt(words, i)) return true;
  }
  return false;
}

}  // namespace dashcam::ingest
