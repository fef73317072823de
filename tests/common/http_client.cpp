#include "tests/common/http_client.h"

#include <zlib.h>

#include <cctype>
#include <stdexcept>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace dashcam::testing {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

struct HttpClient::Impl {
  Impl(std::string host_in, std::uint16_t port_in, HttpClientOptions options_in)
      : host(std::move(host_in)),
        port(port_in),
        options(options_in),
        host_header(host + ":" + std::to_string(port)) {}

  const std::string host;
  const std::uint16_t port;
  const HttpClientOptions options;
  const std::string host_header;  // "host:port"
  asio::io_context ioc;
  std::unique_ptr<tcp::socket> socket;  // null while not connected
  beast::flat_buffer buffer;            // bytes read past the last response

  bool Connect(std::string& error) {
    beast::error_code ec;
    const asio::ip::address address = asio::ip::make_address(host, ec);
    if (ec) {
      error = "bad address " + host + ": " + ec.message();
      return false;
    }
    auto s = std::make_unique<tcp::socket>(ioc);
    s->connect(tcp::endpoint(address, port), ec);
    if (ec) {
      error = "connect " + host_header + ": " + ec.message();
      return false;
    }
    s->set_option(tcp::no_delay(true), ec);  // best effort
    socket = std::move(s);
    buffer.clear();
    return true;
  }

  // False on a transport error (described in out.error).
  bool Exchange(const http::request<http::string_body>& req, HttpResult& out) {
    beast::error_code ec;
    http::write(*socket, req, ec);
    if (ec) {
      out.error = "write: " + ec.message();
      return false;
    }
    http::response_parser<http::string_body> parser;
    parser.body_limit(1ull << 32);
    // A HEAD response's Content-Length describes the GET body; none follows.
    if (req.method() == http::verb::head) parser.skip(true);
    parser.skip(req.method() == http::verb::head);  // a HEAD answer has no body
    http::read(*socket, buffer, parser, ec);
    if (ec) {
      out.error = "read: " + ec.message();
      return false;
    }
    auto res = parser.release();
    out.status = static_cast<int>(res.result_int());
    for (const auto& f : res) {
      std::string name(f.name_string());
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      out.headers[name] = std::string(f.value());
    }
    out.body = std::move(res.body());
    if (!res.keep_alive()) socket.reset();
    return true;
  }
};

HttpClient::HttpClient(std::string host, std::uint16_t port, HttpClientOptions options)
    : impl_(std::make_unique<Impl>(std::move(host), port, options)) {}
HttpClient::~HttpClient() = default;

HttpResult HttpClient::Request(std::string_view method, std::string_view target,
                               std::string_view body,
                               const std::map<std::string, std::string>& headers) {
  http::request<http::string_body> req{http::string_to_verb(method), std::string(target), 11};
  req.set(http::field::host, impl_->host_header);
  for (const auto& [k, v] : headers) req.set(k, v);
  if (!body.empty() || method == "POST" || method == "PUT") {
    req.body() = std::string(body);
    req.prepare_payload();
  }
  const int attempts = impl_->options.retry_once ? 2 : 1;
  HttpResult out;
  for (int attempt = 0; attempt < attempts; ++attempt) {
    out = HttpResult{};
    if (!impl_->socket && !impl_->Connect(out.error)) return out;
    if (impl_->Exchange(req, out)) return out;
    impl_->socket.reset();  // maybe a stale keep-alive connection: the next try reconnects
  }
  return out;
}

std::string UrlEncode(std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    const bool unreserved = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                            (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' || c == '~';
    if (unreserved) {
      out.push_back(ch);
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

std::string Gzip(std::string_view data, int level) {
  constexpr int kGzipWindowBits = 16 + MAX_WBITS;  // +16 asks zlib for the gzip wrapper
  constexpr int kMemLevel = 8;
  z_stream zs{};
  if (deflateInit2(&zs, level, Z_DEFLATED, kGzipWindowBits, kMemLevel, Z_DEFAULT_STRATEGY) !=
      Z_OK) {
    throw std::runtime_error("deflateInit2 failed");
  }
  std::string out(deflateBound(&zs, static_cast<uLong>(data.size())), '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&zs, Z_FINISH);  // one call: the output buffer is deflateBound-sized
  out.resize(zs.total_out);
  deflateEnd(&zs);
  if (rc != Z_STREAM_END) throw std::runtime_error("deflate did not finish: " + std::to_string(rc));
  return out;
}

std::string Zlib(std::string_view data, int level) {
  uLongf size = compressBound(static_cast<uLong>(data.size()));
  std::string out(size, '\0');
  if (compress2(reinterpret_cast<Bytef*>(out.data()), &size,
                reinterpret_cast<const Bytef*>(data.data()), static_cast<uLong>(data.size()),
                level) != Z_OK) {
    throw std::runtime_error("compress2 failed");
  }
  out.resize(size);
  return out;
}

}  // namespace dashcam::testing
