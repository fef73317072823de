// Credentials: the API key id and key a request presents, from its
// Authorization header. Accepted forms (scheme names are case-insensitive):
//   ApiKey <base64(id:key)>     what Filebeat (`api_key: id:key`) and the
//                               Elasticsearch clients send
//   Basic  <base64(id:key)>     HTTP basic auth: user = key id, password = key
//   Bearer <id>:<key>           for curl; the ApiKey form's base64 token is
//                               accepted here too
// The id is everything before the first ':' (ids have none); the key is
// the rest.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>
#include <variant>

namespace dashcam::server {

struct Credentials {
  std::string id;
  std::string key;
};

enum class CredentialsError {
  kMissing,    // no Authorization header
  kMalformed,  // an unknown scheme, bad base64, no ':', empty id or key
};

struct CredentialsProblem {
  CredentialsError error = CredentialsError::kMissing;
  std::string reason;  // for the 401 body; never echoes the secret
};

// `header` is the Authorization header's value ("" when absent).
std::variant<Credentials, CredentialsProblem> ParseAuthorization(std::string_view header);

}  // namespace dashcam::server
