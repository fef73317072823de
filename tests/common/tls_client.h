// TlsClient: a blocking TLS client for the tests (OpenSSL through Asio):
// connects to 127.0.0.1, handshakes verifying the server against a CA and
// the name "localhost", optionally presenting a client certificate or
// limiting the protocol versions, then writes and reads bytes or makes HTTP
// requests. Every call is bounded by a timeout. Not thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include <openssl/ssl.h>

#include "tests/common/http_client.h"

namespace dashcam::testing {

struct TlsClientOptions {
  std::string ca_file;    // verify the server against it; empty: no verification
  std::string cert_file;  // client certificate; empty: none
  std::string key_file;   // its key
  int min_version = 0;    // TLS1_2_VERSION etc.; 0: OpenSSL's default
  int max_version = 0;    // same
  bool allow_legacy = false;
  // A session to resume (from TlsClient::session() of an earlier client).
  std::shared_ptr<SSL_SESSION> resume;  // SECLEVEL=0, so that TLS 1.0/1.1 may be offered at all
  std::chrono::milliseconds timeout{10'000};
};

class TlsClient {
 public:
  // Connects and handshakes; ok() says whether that worked.
  TlsClient(std::uint16_t port, TlsClientOptions options);
  ~TlsClient();
  TlsClient(const TlsClient&) = delete;
  TlsClient& operator=(const TlsClient&) = delete;

  bool ok() const { return error_.empty(); }
  // Why the connection or the handshake failed, with OpenSSL's reason
  // ("tlsv1 alert protocol version", "certificate verify failed").
  const std::string& error() const { return error_; }
  // The negotiated protocol ("TLSv1.3"); empty if not connected.
  std::string protocol() const;

  // The session, for resuming it in another client; null if none.
  std::shared_ptr<SSL_SESSION> session() const;
  // Whether the handshake resumed options.resume.
  bool resumed() const;
  // Sends TLS's close_notify and closes the connection, as a client that
  // is done does (curl, Go's tls.Conn.Close), without waiting for an answer.
  void CloseNotifyAndClose();

  bool Write(std::string_view bytes);
  // Up to `n` bytes; fewer when the server closed the stream (closed() is
  // then true; error() says how) or when `timeout` passed.
  std::string Read(std::size_t n, std::chrono::milliseconds timeout);
  bool closed() const { return closed_; }
  // One HTTP/1.1 request on this connection (keep-alive).
  HttpResult Request(std::string_view method, std::string_view target, std::string_view body = {},
                     const std::map<std::string, std::string>& headers = {});

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string error_;
  bool closed_ = false;
};

}  // namespace dashcam::testing
