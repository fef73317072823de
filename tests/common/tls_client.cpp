#include "tests/common/tls_client.h"

#include <openssl/ssl.h>

#include <optional>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>

namespace dashcam::testing {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using asio::ip::tcp;

struct TlsClient::Impl {
  // Runs the operation `start` begins to completion; the stream's deadline
  // (which closes the stream when it passes) bounds it.
  template <class Start>
  boost::system::error_code Run(Start start, std::chrono::milliseconds timeout) {
    boost::system::error_code result;
    beast::get_lowest_layer(*stream).expires_after(timeout);
    start([&result](boost::system::error_code ec, auto&&...) { result = ec; });
    ioc.restart();
    ioc.run();
    return result;
  }

  asio::io_context ioc;
  asio::ssl::context ctx{asio::ssl::context::tls_client};
  // Made once ctx is configured: a stream takes its settings when built.
  std::optional<beast::ssl_stream<beast::tcp_stream>> stream;
  beast::flat_buffer buffer;
  std::chrono::milliseconds timeout{};
};

namespace {

std::string Describe(std::string_view what, const boost::system::error_code& ec) {
  return std::string(what) + ": " + ec.message();
}

}  // namespace

TlsClient::TlsClient(std::uint16_t port, TlsClientOptions options)
    : impl_(std::make_unique<Impl>()) {
  Impl& c = *impl_;
  c.timeout = options.timeout;
  SSL_CTX* native = c.ctx.native_handle();
  if (options.allow_legacy) SSL_CTX_set_security_level(native, 0);
  if (options.min_version != 0) SSL_CTX_set_min_proto_version(native, options.min_version);
  if (options.max_version != 0) SSL_CTX_set_max_proto_version(native, options.max_version);
  boost::system::error_code ec;
  if (!options.ca_file.empty()) {
    c.ctx.load_verify_file(options.ca_file, ec);
    c.ctx.set_verify_mode(asio::ssl::verify_peer);
  }
  if (!ec && !options.cert_file.empty()) {
    c.ctx.use_certificate_chain_file(options.cert_file, ec);
    if (!ec) c.ctx.use_private_key_file(options.key_file, asio::ssl::context::pem, ec);
  }
  if (ec) {
    error_ = Describe("client setup", ec);
    return;
  }
  c.stream.emplace(c.ioc, c.ctx);
  if (!options.ca_file.empty()) {
    c.stream->set_verify_callback(asio::ssl::host_name_verification("localhost"));
  }
  SSL_set_tlsext_host_name(c.stream->native_handle(), "localhost");
  if (options.resume) SSL_set_session(c.stream->native_handle(), options.resume.get());
  const tcp::endpoint ep(asio::ip::make_address("127.0.0.1"), port);
  ec = c.Run([&](auto done) { beast::get_lowest_layer(*c.stream).async_connect(ep, done); },
             c.timeout);
  if (ec) {
    error_ = Describe("connect", ec);
    return;
  }
  ec = c.Run([&](auto done) { c.stream->async_handshake(asio::ssl::stream_base::client, done); },
             c.timeout);
  if (ec) error_ = Describe("handshake", ec);
}

TlsClient::~TlsClient() = default;

std::shared_ptr<SSL_SESSION> TlsClient::session() const {
  if (!impl_->stream) return nullptr;
  SSL_SESSION* s = SSL_get1_session(impl_->stream->native_handle());
  return s ? std::shared_ptr<SSL_SESSION>(s, SSL_SESSION_free) : nullptr;
}

bool TlsClient::resumed() const {
  return impl_->stream && SSL_session_reused(impl_->stream->native_handle()) == 1;
}

void TlsClient::CloseNotifyAndClose() {
  if (!impl_->stream || closed_) return;
  // async_shutdown sends close_notify, then waits for the server's; the
  // short deadline ends that wait by closing the socket (sending FIN).
  impl_->Run([&](auto done) { impl_->stream->async_shutdown(done); },
             std::chrono::milliseconds(300));
  beast::error_code ec;
  beast::get_lowest_layer(*impl_->stream).socket().close(ec);
  closed_ = true;
}

std::string TlsClient::protocol() const {
  if (!ok() || !impl_->stream) return {};
  return SSL_get_version(impl_->stream->native_handle());
}

bool TlsClient::Write(std::string_view bytes) {
  if (!impl_->stream || closed_) return false;
  const auto ec = impl_->Run(
      [&](auto done) {
        asio::async_write(*impl_->stream, asio::buffer(bytes.data(), bytes.size()), done);
      },
      impl_->timeout);
  if (ec) {
    error_ = Describe("write", ec);
    closed_ = true;
  }
  return !ec;
}

std::string TlsClient::Read(std::size_t n, std::chrono::milliseconds timeout) {
  std::string out;
  if (!impl_->stream) return out;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (out.size() < n && !closed_) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    char buf[4096];
    std::size_t got = 0;
    const auto ec = impl_->Run(
        [&](auto done) {
          impl_->stream->async_read_some(
              asio::buffer(buf, std::min(sizeof buf, n - out.size())),
              [&got, done](boost::system::error_code e, std::size_t k) mutable {
                got = k;
                done(e);
              });
        },
        left);
    out.append(buf, got);
    if (ec) {
      error_ = Describe("read", ec);
      closed_ = true;  // EOF, reset, alert, or the deadline (which closes)
    }
  }
  return out;
}

HttpResult TlsClient::Request(std::string_view method, std::string_view target,
                              std::string_view body,
                              const std::map<std::string, std::string>& headers) {
  HttpResult result;
  if (!impl_->stream || !ok() || closed_) {
    result.error = error_.empty() ? "not connected" : error_;
    return result;
  }
  http::request<http::string_body> req{http::string_to_verb(method), target, 11};
  req.set(http::field::host, "localhost");
  for (const auto& [k, v] : headers) req.set(k, v);
  req.body() = std::string(body);
  req.prepare_payload();
  auto ec =
      impl_->Run([&](auto done) { http::async_write(*impl_->stream, req, done); }, impl_->timeout);
  if (ec) {
    result.error = Describe("write", ec);
    closed_ = true;
    return result;
  }
  http::response<http::string_body> res;
  ec = impl_->Run([&](auto done) { http::async_read(*impl_->stream, impl_->buffer, res, done); },
                  impl_->timeout);
  if (ec) {
    result.error = Describe("read", ec);
    closed_ = true;
    return result;
  }
  result.status = static_cast<int>(res.result_int());
  for (const auto& f : res) {
    std::string name(f.name_string());
    for (char& ch : name) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    result.headers[name] = std::string(f.value());
  }
  result.body = std::move(res.body());
  return result;
}

}  // namespace dashcam::testing
