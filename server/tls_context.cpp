#include "server/tls_context.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <fmt/format.h>

namespace dashcam::server {

namespace ssl = boost::asio::ssl;

namespace {

// The reason of the last OpenSSL error on this thread, or Asio's message.
std::string Reason(const boost::system::error_code& ec) {
  const unsigned long e = ERR_peek_last_error();
  ERR_clear_error();
  if (e != 0) {
    const char* r = ERR_reason_error_string(e);
    if (r != nullptr) return r;
  }
  return ec.message();
}

Status Bad(std::string_view what, const std::string& file, const boost::system::error_code& ec) {
  return Status::InvalidArgument(fmt::format("{} '{}': {}", what, file, Reason(ec)));
}

}  // namespace

Result<std::shared_ptr<ssl::context>> MakeServerTlsContext(const TlsFiles& files,
                                                           bool require_client_cert) {
  auto ctx = std::make_shared<ssl::context>(ssl::context::tls_server);
  SSL_CTX* native = ctx->native_handle();
  // TLS 1.0 and 1.1 are deprecated (RFC 8996); SSLv2/3 are long broken.
  SSL_CTX_set_min_proto_version(native, TLS1_2_VERSION);
  SSL_CTX_set_options(
      native, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
  // Without a session id context OpenSSL fails every resumed session on a
  // context that verifies clients (SSL_R_SESSION_ID_CONTEXT_UNINITIALIZED):
  // a reconnecting Beats client with a session ticket would be refused.
  static constexpr unsigned char kSessionContext[] = "dashcam";
  SSL_CTX_set_session_id_context(native, kSessionContext, sizeof kSessionContext - 1);
  boost::system::error_code ec;
  ctx->use_certificate_chain_file(files.cert, ec);
  if (ec) return Bad("cannot load the TLS certificate", files.cert, ec);
  ctx->use_private_key_file(files.key, ssl::context::pem, ec);
  if (ec) return Bad("cannot load the TLS private key", files.key, ec);
  if (SSL_CTX_check_private_key(native) != 1) {
    ERR_clear_error();
    return Status::InvalidArgument(fmt::format(
        "the TLS private key '{}' does not match the certificate '{}'", files.key, files.cert));
  }
  if (require_client_cert) {
    if (files.client_ca.empty()) {
      return Status::InvalidArgument("client certificates need a CA (--tls-client-ca)");
    }
    ctx->load_verify_file(files.client_ca, ec);
    if (ec) return Bad("cannot load the client CA", files.client_ca, ec);
    // The CA names sent in the CertificateRequest let a client with several
    // certificates pick the right one.
    STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(files.client_ca.c_str());
    if (names == nullptr) {
      return Bad("no CA certificate in", files.client_ca, boost::system::error_code());
    }
    SSL_CTX_set_client_CA_list(native, names);
    ctx->set_verify_mode(ssl::verify_peer | ssl::verify_fail_if_no_peer_cert, ec);
    if (ec) return Bad("cannot require client certificates with", files.client_ca, ec);
  } else {
    ctx->set_verify_mode(ssl::verify_none, ec);
  }
  return ctx;
}

std::string PeerSubject(SSL* ssl) {
  X509* cert = SSL_get1_peer_certificate(ssl);
  if (cert == nullptr) return {};
  std::string out;
  if (BIO* bio = BIO_new(BIO_s_mem())) {
    X509_NAME_print_ex(bio, X509_get_subject_name(cert), 0, XN_FLAG_RFC2253);
    char* data = nullptr;
    const long n = BIO_get_mem_data(bio, &data);
    if (n > 0) out.assign(data, static_cast<std::size_t>(n));
    BIO_free(bio);
  }
  X509_free(cert);
  return out;
}

}  // namespace dashcam::server
