// HttpConnection: see http_connection.h.
#include "tests/bench/http_connection.h"

#include <boost/asio/connect.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>

namespace dashcam::bench {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using tcp = asio::ip::tcp;

HttpConnection::HttpConnection(std::string host, uint16_t port)
    : host_(std::move(host)),
      port_(port),
      host_header_(host_ + ":" + std::to_string(port)),
      socket_(io_) {}

Status HttpConnection::Connect() {
  boost::system::error_code ec;
  asio::ip::address address = asio::ip::make_address(host_, ec);
  if (ec) return Status::InvalidArgument("bad address " + host_ + ": " + ec.message());
  socket_.connect(tcp::endpoint(address, port_), ec);
  if (ec) {
    Close();
    return Status::IoError("connect " + host_header_ + ": " + ec.message());
  }
  socket_.set_option(tcp::no_delay(true), ec);  // best effort
  open_ = true;
  return Status::Ok();
}

void HttpConnection::Close() {
  boost::system::error_code ignored;
  socket_.close(ignored);
  buffer_.clear();
  open_ = false;
}

Result<HttpReply> HttpConnection::Exchange(Request& request) {
  if (!open_) {
    if (Status s = Connect(); !s.ok()) return s;
  }
  request.set(http::field::host, host_header_);
  request.keep_alive(true);
  boost::system::error_code ec;
  http::write(socket_, request, ec);
  if (ec) {
    Close();
    return Status::IoError("write: " + ec.message());
  }
  http::response_parser<http::string_body> parser;
  parser.body_limit(kMaxResponseBytes);
  http::read(socket_, buffer_, parser, ec);
  if (ec) {
    Close();
    return Status::IoError("read: " + ec.message());
  }
  http::response<http::string_body> response = parser.release();
  if (!response.keep_alive()) Close();
  return HttpReply{response.result_int(), std::move(response.body())};
}

Result<HttpReply> HttpConnection::Get(std::string_view target) {
  Request request{http::verb::get, target, 11};
  return Exchange(request);
}

}  // namespace dashcam::bench
