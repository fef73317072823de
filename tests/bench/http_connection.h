// HttpConnection: one keep-alive HTTP/1.1 client connection to a server on
// this machine, synchronous (Boost.Beast over a blocking socket). It connects
// on first use and again after any transport error or a response that did
// not allow keep-alive, so a caller just calls Exchange in a loop.
//
// Sync calls have no timeout of their own: a server that accepts and never
// answers blocks the caller until the server dies. dashcam_bench guards
// against that with a Watchdog that kills the server on a stall.
//
// Thread-safety: none; use one connection per thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

#include "storage/status.h"

namespace dashcam::bench {

struct HttpReply {
  unsigned status = 0;
  std::string body;
};

class HttpConnection {
 public:
  using Request = boost::beast::http::request<boost::beast::http::string_body>;

  // Largest response body accepted; a bulk answer for 10k events is ~1 MB.
  static constexpr uint64_t kMaxResponseBytes = 256ull << 20;

  HttpConnection(std::string host, uint16_t port);

  // Sends `request` (this sets its Host header and keep-alive) and reads the
  // whole response. A transport error closes the connection and is returned
  // as kIoError; HTTP error statuses are replies, not errors.
  Result<HttpReply> Exchange(Request& request);
  Result<HttpReply> Get(std::string_view target);

 private:
  Status Connect();
  void Close();

  std::string host_;
  uint16_t port_;
  std::string host_header_;
  boost::asio::io_context io_;
  boost::asio::ip::tcp::socket socket_;
  boost::beast::flat_buffer buffer_;  // bytes read past the last response
  bool open_ = false;
};

}  // namespace dashcam::bench
