// TlsByteStream: an ingest::ByteStream over TLS over TCP, for the Beats
// listener. Handshake() must succeed before the stream is handed to a
// session. A peer that closes TCP without TLS's close_notify (Filebeat does
// when it reconnects) reads as an orderly end, like plain TCP's EOF.
#pragma once

#include <chrono>
#include <string>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>

#include "ingest/byte_stream.h"
#include "server/tls_handshake.h"

namespace dashcam::server {

class TlsByteStream final : public ingest::ByteStream {
 public:
  TlsByteStream(boost::asio::ip::tcp::socket socket, const TlsSetup& tls);

  // The server side of the handshake, under tls.handshake_timeout; reports
  // it to tls.report. Returns whether the stream may be used.
  boost::asio::awaitable<bool> Handshake();

  boost::asio::any_io_executor executor() override { return stream_.get_executor(); }
  const std::string& peer() const override { return peer_; }
  boost::asio::awaitable<std::size_t> ReadSome(boost::asio::mutable_buffer into,
                                               boost::system::error_code& ec) override;
  boost::asio::awaitable<void> Write(boost::asio::const_buffer bytes,
                                     boost::system::error_code& ec) override;
  void Close() override;

 private:
  boost::beast::ssl_stream<boost::beast::tcp_stream> stream_;
  const TlsSetup& tls_;
  const std::string peer_;
};

}  // namespace dashcam::server
