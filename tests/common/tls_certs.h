// TestPki: certificates for the TLS tests, made with the `openssl` command
// in a directory: a CA, a server certificate it signed for localhost and
// 127.0.0.1, a client certificate it signed, and a client certificate signed
// by another CA (which the server must refuse). EC P-256 keys, valid for a
// day. Aborts the test (throws) if openssl fails.
#pragma once

#include <string>

namespace dashcam::testing {

struct TestPki {
  // Makes the files in `dir` (which must exist).
  explicit TestPki(const std::string& dir);

  std::string ca;           // PEM CA certificate
  std::string server_cert;  // CN=localhost, SAN DNS:localhost, IP:127.0.0.1
  std::string server_key;
  std::string client_cert;  // CN=filebeat-test, signed by `ca`
  std::string client_key;
  std::string other_ca;           // an unrelated CA
  std::string other_client_cert;  // CN=intruder, signed by `other_ca`
  std::string other_client_key;
};

}  // namespace dashcam::testing
