#include "tests/common/api_keys.h"

#include <openssl/evp.h>

#include <cstdio>

#include "tests/common/test_server.h"

namespace dashcam::testing {

std::string HashKeyEntry(const std::string& id, const std::string& role, const std::string& key,
                         const std::string& filter) {
  std::string cmd = "printf '%s\\n' '" + key + "' | '" + TestServer::BinaryPath() +
                    "' hash-key --id " + id + " --role " + role + " --iterations 1000";
  if (!filter.empty()) cmd += " --filter '" + filter + "'";
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return "";
  std::string out;
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  return ::pclose(p) == 0 ? out : "";
}

std::string Base64(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()),
                                static_cast<int>(bytes.size()));
  out.resize(static_cast<std::size_t>(n));
  return out;
}

}  // namespace dashcam::testing
