// ByteStream: the connected byte stream a protocol session reads and writes,
// whatever carries it: TcpByteStream here, or TLS over TCP (server/
// tls_byte_stream.h), so that sessions need not know about TLS.
//
// Contract: at most one ReadSome and one Write in flight at a time, both on
// executor() (a strand). Close() cancels them (they complete with an error)
// and is idempotent. An orderly end of the stream reads as
// boost::asio::error::eof, whichever transport.
#pragma once

#include <cstddef>
#include <string>

#include <fmt/format.h>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/system/error_code.hpp>

namespace dashcam::ingest {

class ByteStream {
 public:
  virtual ~ByteStream() = default;

  virtual boost::asio::any_io_executor executor() = 0;
  // "address:port" of the peer; "unknown" if the socket had none.
  virtual const std::string& peer() const = 0;
  virtual boost::asio::awaitable<std::size_t> ReadSome(boost::asio::mutable_buffer into,
                                                       boost::system::error_code& ec) = 0;
  // Writes all of `bytes` or fails.
  virtual boost::asio::awaitable<void> Write(boost::asio::const_buffer bytes,
                                             boost::system::error_code& ec) = 0;
  virtual void Close() = 0;
};

// "address:port" of a connected socket's peer, or "unknown".
inline std::string PeerOf(const boost::asio::ip::tcp::socket& socket) {
  boost::system::error_code ec;
  const auto ep = socket.remote_endpoint(ec);
  if (ec) return "unknown";
  return fmt::format("{}:{}", ep.address().to_string(), ep.port());
}

// Plain TCP.
class TcpByteStream final : public ByteStream {
 public:
  explicit TcpByteStream(boost::asio::ip::tcp::socket socket)
      : socket_(std::move(socket)), peer_(PeerOf(socket_)) {}

  boost::asio::any_io_executor executor() override { return socket_.get_executor(); }
  const std::string& peer() const override { return peer_; }
  boost::asio::awaitable<std::size_t> ReadSome(boost::asio::mutable_buffer into,
                                               boost::system::error_code& ec) override {
    co_return co_await socket_.async_read_some(
        into, boost::asio::redirect_error(boost::asio::use_awaitable, ec));
  }
  boost::asio::awaitable<void> Write(boost::asio::const_buffer bytes,
                                     boost::system::error_code& ec) override {
    co_await boost::asio::async_write(socket_, bytes,
                                      boost::asio::redirect_error(boost::asio::use_awaitable, ec));
  }
  void Close() override {
    boost::system::error_code ec;
    socket_.shutdown(boost::asio::ip::tcp::socket::shutdown_both, ec);
    socket_.close(ec);
  }

 private:
  boost::asio::ip::tcp::socket socket_;
  const std::string peer_;
};

}  // namespace dashcam::ingest
