#include "server/credentials.h"

#include <optional>

#include <boost/beast/core/string.hpp>

#include "server/key_hash.h"

namespace dashcam::server {
namespace {

CredentialsProblem Malformed(std::string reason) {
  return CredentialsProblem{CredentialsError::kMalformed, std::move(reason)};
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::optional<Credentials> SplitIdKey(std::string_view pair) {
  const auto colon = pair.find(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == pair.size()) {
    return std::nullopt;
  }
  return Credentials{std::string(pair.substr(0, colon)), std::string(pair.substr(colon + 1))};
}

std::variant<Credentials, CredentialsProblem> FromBase64(std::string_view token,
                                                         std::string_view scheme) {
  auto decoded = Base64Decode(token);
  if (!decoded) return Malformed(std::string(scheme) + " credentials are not base64");
  auto c = SplitIdKey(*decoded);
  if (!c) return Malformed(std::string(scheme) + " credentials must encode id:key");
  return *c;
}

}  // namespace

std::variant<Credentials, CredentialsProblem> ParseAuthorization(std::string_view header) {
  header = Trim(header);
  if (header.empty()) {
    return CredentialsProblem{CredentialsError::kMissing, "this endpoint requires an API key"};
  }
  const auto space = header.find(' ');
  if (space == std::string_view::npos) {
    return Malformed("Authorization must be 'ApiKey <token>', 'Basic <token>' or 'Bearer <token>'");
  }
  const std::string_view scheme = header.substr(0, space);
  const std::string_view token = Trim(header.substr(space + 1));
  if (boost::beast::iequals(scheme, "ApiKey")) return FromBase64(token, "ApiKey");
  if (boost::beast::iequals(scheme, "Basic")) return FromBase64(token, "Basic");
  if (boost::beast::iequals(scheme, "Bearer")) {
    if (token.find(':') != std::string_view::npos) {
      auto c = SplitIdKey(token);
      if (!c) return Malformed("Bearer credentials must be id:key");
      return *c;
    }
    return FromBase64(token, "Bearer");
  }
  return Malformed("unsupported Authorization scheme (ApiKey, Basic or Bearer)");
}

}  // namespace dashcam::server
