#include "tests/common/tls_certs.h"

#include <cstdlib>
#include <fstream>
#include <stdexcept>

#include <fmt/format.h>

namespace dashcam::testing {

namespace {

void Run(const std::string& command) {
  // openssl chatters on stderr even when it succeeds.
  if (std::system((command + " 2>/dev/null").c_str()) != 0) {
    throw std::runtime_error("openssl failed: " + command);
  }
}

void MakeCa(const std::string& dir, const std::string& name, const std::string& cn) {
  Run(fmt::format(
      "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 "
      "-subj '/CN={2}' -keyout '{0}/{1}.key' -out '{0}/{1}.pem'",
      dir, name, cn));
}

// A certificate for `name` signed by the CA `ca`; `ext` is an extension line.
void MakeLeaf(const std::string& dir, const std::string& name, const std::string& cn,
              const std::string& ca, const std::string& ext) {
  const std::string ext_file = fmt::format("{}/{}.ext", dir, name);
  std::ofstream(ext_file) << ext << "\n";
  Run(fmt::format(
      "openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj '/CN={2}' "
      "-keyout '{0}/{1}.key' -out '{0}/{1}.csr'",
      dir, name, cn));
  Run(
      fmt::format("openssl x509 -req -in '{0}/{1}.csr' -CA '{0}/{2}.pem' -CAkey '{0}/{2}.key' "
                  "-CAcreateserial -days 1 -extfile '{3}' -out '{0}/{1}.pem'",
                  dir, name, ca, ext_file));
}

}  // namespace

TestPki::TestPki(const std::string& dir) {
  MakeCa(dir, "ca", "dashcam test CA");
  MakeCa(dir, "other-ca", "some other CA");
  MakeLeaf(dir, "server", "localhost", "ca",
           "subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth");
  MakeLeaf(dir, "client", "filebeat-test", "ca", "extendedKeyUsage=clientAuth");
  MakeLeaf(dir, "intruder", "intruder", "other-ca", "extendedKeyUsage=clientAuth");
  ca = dir + "/ca.pem";
  server_cert = dir + "/server.pem";
  server_key = dir + "/server.key";
  client_cert = dir + "/client.pem";
  client_key = dir + "/client.key";
  other_ca = dir + "/other-ca.pem";
  other_client_cert = dir + "/intruder.pem";
  other_client_key = dir + "/intruder.key";
}

}  // namespace dashcam::testing
