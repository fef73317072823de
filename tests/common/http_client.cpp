#include "tests/common/http_client.h"

#include <zlib.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace dashcam::testing {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

struct HttpClient::Impl {
  std::string host;
  std::uint16_t port;
  asio::io_context ioc;
  std::unique_ptr<beast::tcp_stream> stream;
  beast::flat_buffer buffer;

  bool Connect(std::string& error) {
    stream = std::make_unique<beast::tcp_stream>(ioc);
    beast::error_code ec;
    stream->connect(asio::ip::tcp::endpoint(asio::ip::make_address(host), port), ec);
    if (ec) {
      error = ec.message();
      stream.reset();
      return false;
    }
    buffer.clear();
    return true;
  }

  bool Exchange(const http::request<http::string_body>& req, HttpResult& out) {
    beast::error_code ec;
    stream->expires_after(std::chrono::seconds(120));
    http::write(*stream, req, ec);
    if (ec) {
      out.error = ec.message();
      return false;
    }
    http::response_parser<http::string_body> parser;
    parser.body_limit(1ull << 32);
    http::read(*stream, buffer, parser, ec);
    if (ec) {
      out.error = ec.message();
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
    if (!res.keep_alive()) stream.reset();
    return true;
  }
};

HttpClient::HttpClient(std::string host, std::uint16_t port)
    : impl_(new Impl{std::move(host), port, {}, {}, {}}) {}
HttpClient::~HttpClient() = default;

HttpResult HttpClient::Request(std::string_view method, std::string_view target,
                               std::string_view body,
                               const std::map<std::string, std::string>& headers) {
  http::request<http::string_body> req{http::string_to_verb(method), std::string(target), 11};
  req.set(http::field::host, impl_->host);
  for (const auto& [k, v] : headers) req.set(k, v);
  if (!body.empty() || method == "POST" || method == "PUT") {
    req.body() = std::string(body);
    req.prepare_payload();
  }
  HttpResult out;
  for (int attempt = 0; attempt < 2; ++attempt) {
    out = HttpResult{};
    if (!impl_->stream && !impl_->Connect(out.error)) return out;
    if (impl_->Exchange(req, out)) return out;
    impl_->stream.reset();  // stale keep-alive connection: retry once on a new one
  }
  return out;
}

std::string UrlEncode(std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

std::string Gzip(std::string_view data, int level) {
  z_stream zs{};
  deflateInit2(&zs, level, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&zs, data.size()) + 32, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  deflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

}  // namespace dashcam::testing
