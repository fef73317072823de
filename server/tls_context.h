// TLS for the listeners (OpenSSL through Asio): server contexts built from
// PEM files, TLS 1.2 and newer only, no compression, no renegotiation.
//
// The HTTP listener presents the certificate and asks for none (HTTP clients
// authenticate with API keys, server/auth_gate.h). The Beats listener
// presents the same certificate and, with a client CA, requires every client
// to present a certificate that CA signed (mutual TLS): the Beats protocol
// has no other way to authenticate a client.
//
// Certificates are read once at startup; rotating them means a restart
// (systemd's `restart`, a few seconds during which Filebeat retries).
#pragma once

#include <memory>
#include <string>

#include <boost/asio/ssl/context.hpp>

#include "storage/status.h"

namespace dashcam::server {

struct TlsFiles {
  std::string cert;       // PEM certificate chain, leaf first
  std::string key;        // PEM private key of the leaf
  std::string client_ca;  // PEM CA certificates; empty: clients need none
};

// A context for a listener. `require_client_cert` needs files.client_ca.
// Fails (InvalidArgument, naming the file and OpenSSL's reason) when a file
// cannot be read or parsed, or the key does not match the certificate.
Result<std::shared_ptr<boost::asio::ssl::context>> MakeServerTlsContext(const TlsFiles& files,
                                                                        bool require_client_cert);

// The peer certificate's subject ("CN=filebeat-07,O=lab") of a verified
// connection, for logs; empty when there is none.
std::string PeerSubject(SSL* ssl);

}  // namespace dashcam::server
