#include "storage/clickhouse/ch_client.h"

#include <charconv>

#include <fmt/format.h>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <boost/url/url.hpp>

namespace dashcam::storage::clickhouse {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

// Largest answer read; a query that needs more must page.
constexpr std::uint64_t kMaxResponseBytes = 256ull << 20;

// ClickHouse's codes for failures of the network between nodes or of a
// node's time budget: the cluster, not the query, is at fault.
bool IsNetworkCode(int code) {
  switch (code) {
    case 159:  // TIMEOUT_EXCEEDED
    case 209:  // SOCKET_TIMEOUT
    case 210:  // NETWORK_ERROR
    case 279:  // ALL_CONNECTION_TRIES_FAILED
      return true;
    default:
      return false;
  }
}

std::string FirstLine(std::string_view body) {
  body = body.substr(0, body.find('\n'));
  if (body.size() > 300) return std::string(body.substr(0, 300)) + "...";
  return std::string(body);
}

}  // namespace

int ChErrorCode(std::string_view body) {
  constexpr std::string_view kPrefix = "Code: ";
  if (!body.starts_with(kPrefix)) return -1;
  body.remove_prefix(kPrefix.size());
  int code = -1;
  const auto [end, ec] = std::from_chars(body.data(), body.data() + body.size(), code);
  return ec == std::errc() && end != body.data() ? code : -1;
}

ChClient::ChClient(ChHost host, std::chrono::milliseconds timeout)
    : host_(std::move(host)), timeout_(timeout) {}

Result<std::string> ChClient::Query(std::string_view sql, const ChSettings& settings) const {
  return Post({}, sql, settings);
}

Status ChClient::Insert(std::string_view sql, std::string_view data,
                        const ChSettings& settings) const {
  auto r = Post(sql, data, settings);
  return r.ok() ? Status::Ok() : r.status();
}

Result<std::string> ChClient::Post(std::string_view query_param, std::string_view body,
                                   const ChSettings& settings) const {
  boost::urls::url target("/");
  if (!query_param.empty()) target.params().append({"query", query_param});
  // An error in the middle of an answer is then a non-200 answer, not a
  // 200 with the exception appended to the rows.
  target.params().append({"wait_end_of_query", "1"});
  for (const auto& [name, value] : settings) target.params().append({name, value});
  http::request<http::string_body> req{http::verb::post, target.encoded_target(), 11};
  const bool ipv6 = host_.host.find(':') != std::string::npos;
  req.set(http::field::host, ipv6 ? fmt::format("[{}]:{}", host_.host, host_.port)
                                  : fmt::format("{}:{}", host_.host, host_.port));
  req.set(http::field::content_type, "text/plain; charset=utf-8");
  req.body() = std::string(body);
  req.prepare_payload();

  asio::io_context ioc;
  asio::ip::tcp::resolver resolver(ioc);
  beast::tcp_stream stream(ioc);
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(kMaxResponseBytes);
  beast::error_code failure;
  const char* step = "resolve";
  // One deadline for the whole exchange.
  stream.expires_after(timeout_);
  resolver.async_resolve(
      host_.host, std::to_string(host_.port), [&](beast::error_code ec, const auto& endpoints) {
        if (ec) return void(failure = ec);
        step = "connect";
        stream.async_connect(endpoints, [&](beast::error_code ec, const auto&) {
          if (ec) return void(failure = ec);
          step = "send";
          http::async_write(stream, req, [&](beast::error_code ec, std::size_t) {
            if (ec) return void(failure = ec);
            step = "read the answer";
            http::async_read(stream, buffer, parser,
                             [&](beast::error_code ec, std::size_t) { failure = ec; });
          });
        });
      });
  ioc.run();
  const std::string where = fmt::format("ClickHouse {}:{}", host_.host, host_.port);
  if (failure) {
    if (failure == beast::error::timeout) {
      return Status::Unavailable(
          fmt::format("{}: no answer within {} ms ({})", where, timeout_.count(), step));
    }
    return Status::Unavailable(fmt::format("{}: {}: {}", where, step, failure.message()));
  }
  auto res = parser.release();
  if (res.result() == http::status::ok) return std::move(res.body());
  const int code = ChErrorCode(res.body());
  if (code < 0) {
    return Status::Unavailable(
        fmt::format("{}: HTTP {}: {}", where, res.result_int(), FirstLine(res.body())));
  }
  std::string msg = fmt::format("ClickHouse Code {} from {}:{}: {}", code, host_.host, host_.port,
                                FirstLine(res.body()));
  return IsNetworkCode(code) ? Status::Unavailable(std::move(msg))
                             : Status::Internal(std::move(msg));
}

}  // namespace dashcam::storage::clickhouse
