#include "server/tls_byte_stream.h"

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/ssl/stream_base.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include "server/tls_context.h"

namespace dashcam::server {

namespace asio = boost::asio;
namespace beast = boost::beast;

namespace {

auto Awaitable(boost::system::error_code& ec) {
  return asio::redirect_error(asio::use_awaitable, ec);
}

// TCP closed without close_notify: the end of the stream, as for plain TCP.
void MapTruncation(boost::system::error_code& ec) {
  if (ec == asio::ssl::error::stream_truncated) ec = asio::error::eof;
}

}  // namespace

TlsByteStream::TlsByteStream(asio::ip::tcp::socket socket, const TlsSetup& tls)
    : stream_(std::move(socket), *tls.context),
      tls_(tls),
      peer_(ingest::PeerOf(beast::get_lowest_layer(stream_).socket())) {}

asio::awaitable<bool> TlsByteStream::Handshake() {
  auto& tcp = beast::get_lowest_layer(stream_);
  boost::system::error_code ec;
  tcp.expires_after(tls_.handshake_timeout);
  co_await stream_.async_handshake(asio::ssl::stream_base::server, Awaitable(ec));
  // The session keeps its own deadlines (keepalives, idle timeout).
  tcp.expires_never();
  if (tls_.report != nullptr) {
    boost::system::error_code ignored;
    const auto address = tcp.socket().remote_endpoint(ignored).address();
    tls_.report->Done(ec, address, ec ? std::string() : PeerSubject(stream_.native_handle()));
  }
  co_return !ec;
}

asio::awaitable<std::size_t> TlsByteStream::ReadSome(asio::mutable_buffer into,
                                                     boost::system::error_code& ec) {
  const std::size_t n = co_await stream_.async_read_some(into, Awaitable(ec));
  MapTruncation(ec);
  co_return n;
}

asio::awaitable<void> TlsByteStream::Write(asio::const_buffer bytes,
                                           boost::system::error_code& ec) {
  co_await asio::async_write(stream_, bytes, Awaitable(ec));
  MapTruncation(ec);
}

void TlsByteStream::Close() {
  // No close_notify: Close also ends streams whose peer is gone or stalled,
  // and a session closes only after its last ACK was written.
  auto& socket = beast::get_lowest_layer(stream_).socket();
  boost::system::error_code ec;
  socket.shutdown(asio::ip::tcp::socket::shutdown_both, ec);
  socket.close(ec);
}

}  // namespace dashcam::server
