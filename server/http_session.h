// HttpSession: one HTTP/1.1 connection, as a coroutine on its own strand.
// It moves bytes: read a request (deadline and size limits on every read),
// hand it to the Router, write the answer, repeat while keep-alive holds. It
// never looks inside requests beyond the headers that govern the transport.
//
// Every response gets `X-Elastic-Product: Elasticsearch` (the Elasticsearch
// clients check it). A request whose declared body is over the limit gets 413
// without its body being read, and the connection is closed; a chunked body
// is cut off with a 413 when it passes the limit. The limit is
// HttpLimits::max_body_bytes, or max_search_body_bytes for a target the
// Router parses whole. After such a 413 a plain session reads and drops the
// rest of the body (at most 64 MiB, for at most 2 s) before closing, so that
// a client still sending it reads the answer rather than a reset.
//
// A streaming answer (api/body_stream.h) is written as chunks, one piece in
// flight at a time, each under the stream's write deadline. While it streams
// the session watches the socket: a client that hangs up cancels the stream at
// once, even while it waits for data. A drain asks the stream to end.
//
// The session is a template over its stream: plain TCP (PlainHttpSession) or
// TLS over TCP (TlsHttpSession), which first completes the TLS handshake
// under the read deadline. Both are instantiated in http_session.cpp.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string_view>
#include <type_traits>
#include <vector>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>

#include "server/router.h"
#include "server/tls_handshake.h"
#include "storage/log.h"

namespace dashcam::server {

struct HttpLimits {
  std::size_t max_body_bytes = 100u << 20;
  // For the targets the Router parses whole (Router::ParsesBodyWhole); at
  // most max_body_bytes.
  std::size_t max_search_body_bytes = 1u << 20;
  // Room for the request line of a query at the query language's own
  // limit (16 KiB, which percent-encodes to up to 48 KiB), so that a query
  // over it gets the parser's 400 rather than a 431.
  std::size_t max_header_bytes = 64u << 10;
  std::chrono::seconds read_timeout{60};
  std::chrono::seconds write_timeout{60};
};

class SessionRegistry;

// What the registry needs of a session, whatever its stream.
class HttpConnection {
 public:
  virtual ~HttpConnection() = default;
  // For a drain: closes the connection if it is waiting for a request, and
  // asks a stream in progress to end. Call on its strand.
  virtual void OnDrain() = 0;
  virtual boost::asio::any_io_executor executor() = 0;
};

template <class Stream>
class HttpSession final : public HttpConnection,
                          public std::enable_shared_from_this<HttpSession<Stream>> {
 public:
  static constexpr bool kTls = !std::is_same_v<Stream, boost::beast::tcp_stream>;

  // `tls` is required for a TLS session and ignored otherwise; it must
  // outlive the session.
  HttpSession(boost::asio::ip::tcp::socket socket, const TlsSetup* tls, Router& router,
              const HttpLimits& limits, SessionRegistry& registry, const Log& log);

  boost::asio::awaitable<void> Run();
  void OnDrain() override;
  boost::asio::any_io_executor executor() override { return stream_.get_executor(); }

 private:
  boost::beast::tcp_stream& tcp() { return boost::beast::get_lowest_layer(stream_); }
  boost::asio::ip::tcp::socket& socket() { return tcp().socket(); }
  boost::asio::awaitable<bool> Handshake(boost::beast::flat_buffer& buffer);
  boost::asio::awaitable<void> Shutdown();
  boost::asio::awaitable<bool> ServeOne(boost::beast::flat_buffer& buffer);
  boost::asio::awaitable<void> FailRead(const boost::beast::error_code& read_error,
                                        unsigned version, std::string_view body_limit_flag);
  boost::asio::awaitable<void> DiscardUnreadBody();
  boost::asio::awaitable<api::HttpAnswer> Dispatch(HttpRequest req);
  boost::asio::awaitable<bool> WriteResponse(HttpResponse& res, bool keep_alive);
  // `path`: the request's, for the log.
  boost::asio::awaitable<bool> WriteStream(api::StreamingResponse& sr, bool keep_alive,
                                           std::string_view path);
  boost::asio::awaitable<bool> WriteStreamBody(api::StreamingResponse& sr, bool chunked,
                                               std::string_view path);
  boost::asio::awaitable<void> WatchForHangUp(std::uint64_t stream_id);

  Stream stream_;
  const TlsSetup* tls_;
  boost::asio::ip::address peer_;  // the client's address (unspecified if unknown)
  Router& router_;
  const HttpLimits& limits_;
  SessionRegistry& registry_;
  const Log& log_;
  // On the strand only.
  bool busy_ = false;
  api::BodyStream* body_ = nullptr;  // the stream being written, if any
  std::uint64_t stream_id_ = 0;      // counts the streams of this connection
  bool hung_up_ = false;             // the client left during the current stream
};

// The live sessions, so that a drain can close idle ones.
// Thread-safety: all methods may be called from any thread.
class SessionRegistry {
 public:
  void Add(const std::shared_ptr<HttpConnection>& s);
  void Remove(HttpConnection* s);
  // Stops keep-alive everywhere, closes the sessions that are idle and asks
  // streams to end.
  void Drain();
  bool draining() const { return draining_.load(); }
  std::size_t size() const;

 private:
  mutable std::mutex mu_;
  std::vector<std::weak_ptr<HttpConnection>> sessions_;  // guarded by mu_
  std::atomic<bool> draining_{false};
};

using PlainHttpSession = HttpSession<boost::beast::tcp_stream>;
using TlsHttpSession = HttpSession<boost::beast::ssl_stream<boost::beast::tcp_stream>>;
extern template class HttpSession<boost::beast::tcp_stream>;
extern template class HttpSession<boost::beast::ssl_stream<boost::beast::tcp_stream>>;

}  // namespace dashcam::server
