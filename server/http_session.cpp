#include "server/http_session.h"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <optional>
#include <string_view>

#include <fmt/format.h>
#include <boost/asio/buffer.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/ssl/stream_base.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/detect_ssl.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/chunk_encode.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>

namespace dashcam::server {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

namespace {

bool IsExpectedClose(const beast::error_code& ec) {
  return ec == http::error::end_of_stream || ec == asio::error::operation_aborted ||
         ec == asio::error::connection_reset || ec == asio::error::eof ||
         ec == beast::error::timeout || ec == asio::error::bad_descriptor ||
         ec == asio::ssl::error::stream_truncated;
}

HttpResponse TransportError(unsigned version, http::status status, std::string_view type,
                            std::string_view reason) {
  HttpRequest dummy;
  dummy.version(version);
  return api::MakeErrorResponse(dummy, status, type, reason);
}

}  // namespace

namespace {

template <class Stream>
Stream MakeStream(asio::ip::tcp::socket socket, const TlsSetup* tls) {
  if constexpr (std::is_same_v<Stream, beast::tcp_stream>) {
    return Stream(std::move(socket));
  } else {
    return Stream(std::move(socket), *tls->context);
  }
}

}  // namespace

template <class Stream>
HttpSession<Stream>::HttpSession(asio::ip::tcp::socket socket, const TlsSetup* tls, Router& router,
                                 const HttpLimits& limits, SessionRegistry& registry,
                                 const Log& log)
    : stream_(MakeStream<Stream>(std::move(socket), tls)),
      tls_(tls),
      router_(router),
      limits_(limits),
      registry_(registry),
      log_(log) {
  beast::error_code ec;
  peer_ = this->socket().remote_endpoint(ec).address();
}

template <class Stream>
void HttpSession<Stream>::OnDrain() {
  if (body_ != nullptr) {
    body_->Drain();
    return;
  }
  if (!busy_) {
    beast::error_code ec;
    socket().shutdown(asio::ip::tcp::socket::shutdown_both, ec);
    socket().close(ec);
  }
}

template <class Stream>
asio::awaitable<void> HttpSession<Stream>::Run() {
  beast::flat_buffer buffer;
  if (!co_await Handshake(buffer)) {
    registry_.Remove(this);
    co_return;
  }
  for (;;) {
    bool keep_going = false;
    try {
      keep_going = co_await ServeOne(buffer);
    } catch (const std::exception& e) {
      log_.Error("session_failed", {{"error", e.what()}});
    }
    if (!keep_going || registry_.draining()) break;
  }
  co_await Shutdown();
  beast::error_code ec;
  socket().shutdown(asio::ip::tcp::socket::shutdown_send, ec);
  socket().close(ec);
  registry_.Remove(this);
}

namespace {

// The answer to a failed read, or nullopt when the peer just went away.
// `body_limit_flag`: the option whose limit the body was held to.
std::optional<HttpResponse> ReadErrorResponse(const beast::error_code& ec, unsigned version,
                                              std::string_view body_limit_flag) {
  if (IsExpectedClose(ec) || ec == http::error::partial_message) return std::nullopt;
  if (ec == http::error::body_limit) {
    // Also raised while reading the header, for a declared Content-Length.
    return TransportError(version, http::status::payload_too_large, "content_too_long_exception",
                          fmt::format("request body is larger than {}", body_limit_flag));
  }
  if (ec == http::error::header_limit) {
    return TransportError(version, http::status::request_header_fields_too_large, "bad_request",
                          "request headers are too large");
  }
  return TransportError(version, http::status::bad_request, "bad_request", ec.message());
}

}  // namespace

// The TLS handshake, under the read deadline (a client that trickles it is
// cut off like one that trickles headers); a plain session has none. A
// client that speaks plain HTTP to the TLS port gets a plain 400 saying so,
// rather than a connection closed without a word. Returns whether the
// connection may be served.
template <class Stream>
asio::awaitable<bool> HttpSession<Stream>::Handshake(beast::flat_buffer& buffer) {
  if constexpr (!kTls) {
    co_return true;
  } else {
    beast::error_code ec;
    tcp().expires_after(std::min(limits_.read_timeout, tls_->handshake_timeout));
    const bool tls = co_await beast::async_detect_ssl(
        tcp(), buffer, asio::redirect_error(asio::use_awaitable, ec));
    if (!ec && !tls) {
      auto res = TransportError(11, http::status::bad_request, "bad_request",
                                "this port speaks HTTPS: use https://");
      res.keep_alive(false);
      co_await http::async_write(tcp(), res, asio::redirect_error(asio::use_awaitable, ec));
      ec = asio::ssl::error::make_error_code(asio::ssl::error::unspecified_system_error);
      if (tls_->report != nullptr) tls_->report->Done(ec, peer_, {}, "plain HTTP request");
      co_return false;
    }
    if (!ec) {
      const std::size_t used =
          co_await stream_.async_handshake(asio::ssl::stream_base::server, buffer.data(),
                                           asio::redirect_error(asio::use_awaitable, ec));
      buffer.consume(used);
    }
    if (tls_->report != nullptr) tls_->report->Done(ec, peer_);
    co_return !ec;
  }
}

// Ends TLS with close_notify, so that a client reading a body up to the
// close can tell the end from a cut; bounded, since the peer may be gone.
template <class Stream>
asio::awaitable<void> HttpSession<Stream>::Shutdown() {
  if constexpr (kTls) {
    beast::error_code ec;
    tcp().expires_after(std::chrono::seconds(1));
    co_await stream_.async_shutdown(asio::redirect_error(asio::use_awaitable, ec));
  }
  co_return;
}

// Writes a final answer after a failed read; the connection then closes.
template <class Stream>
asio::awaitable<void> HttpSession<Stream>::FailRead(const beast::error_code& read_error,
                                                    unsigned version,
                                                    std::string_view body_limit_flag) {
  auto res = ReadErrorResponse(read_error, version, body_limit_flag);
  if (!res) co_return;
  res->set("X-Elastic-Product", "Elasticsearch");
  res->keep_alive(false);
  beast::error_code ec;
  tcp().expires_after(limits_.write_timeout);
  co_await http::async_write(stream_, *res, asio::redirect_error(asio::use_awaitable, ec));
  if (!ec && read_error == http::error::body_limit) co_await DiscardUnreadBody();
}

// A client that sends its whole body before reading the answer (Python's
// urllib and requests do) would get a reset instead of the 413 if the
// connection closed while its body was still arriving. So, as web servers'
// lingering close does, the session stops sending and reads what comes, up
// to a bound, before it closes. A TLS session closes at once.
template <class Stream>
asio::awaitable<void> HttpSession<Stream>::DiscardUnreadBody() {
  if constexpr (!kTls) {
    constexpr std::size_t kMaxBytes = 64u << 20;
    beast::error_code ec;
    socket().shutdown(asio::ip::tcp::socket::shutdown_send, ec);
    tcp().expires_after(std::chrono::seconds(2));
    std::vector<char> sink(64u << 10);
    for (std::size_t read = 0; !ec && read < kMaxBytes;) {
      read += co_await tcp().async_read_some(asio::buffer(sink),
                                             asio::redirect_error(asio::use_awaitable, ec));
    }
  }
  co_return;
}

// Serves one request; returns whether the connection stays open.
template <class Stream>
asio::awaitable<bool> HttpSession<Stream>::ServeOne(beast::flat_buffer& buffer) {
  beast::error_code ec;
  http::request_parser<http::string_body> parser;
  parser.header_limit(static_cast<std::uint32_t>(limits_.max_header_bytes));
  parser.body_limit(limits_.max_body_bytes);

  tcp().expires_after(limits_.read_timeout);
  co_await http::async_read_header(stream_, buffer, parser,
                                   asio::redirect_error(asio::use_awaitable, ec));
  if (ec) {
    co_await FailRead(ec, 11, "--max-body-bytes");
    co_return false;
  }
  busy_ = true;
  const unsigned version = parser.get().version();
  // Beast compares a declared Content-Length with the limit in force while
  // the header is read, so a tighter one is checked here; a chunked body is
  // held to it as it is read. A 413 names the limit that applied.
  std::string_view limit_flag = "--max-body-bytes";
  if (limits_.max_search_body_bytes < limits_.max_body_bytes &&
      Router::ParsesBodyWhole(parser.get().target())) {
    limit_flag = "--max-search-body-bytes";
    if (parser.content_length().value_or(0) > limits_.max_search_body_bytes) {
      co_await FailRead(http::error::body_limit, version, limit_flag);
      co_return false;
    }
    parser.body_limit(limits_.max_search_body_bytes);
  }
  if (beast::iequals(parser.get()[http::field::expect], "100-continue")) {
    http::response<http::empty_body> cont{http::status::continue_, version};
    co_await http::async_write(stream_, cont, asio::redirect_error(asio::use_awaitable, ec));
    if (ec) co_return false;
  }
  tcp().expires_after(limits_.read_timeout);
  co_await http::async_read(stream_, buffer, parser, asio::redirect_error(asio::use_awaitable, ec));
  if (ec) {
    co_await FailRead(ec, version, limit_flag);
    co_return false;
  }
  HttpRequest req = parser.release();
  const bool keep_alive = req.keep_alive();
  // For the log of a stream; without the query string, which may hold keys.
  const std::string path(req.target().substr(0, req.target().find('?')));
  tcp().expires_never();
  api::HttpAnswer answer = co_await Dispatch(std::move(req));
  bool keep_going = false;
  if (auto* res = std::get_if<HttpResponse>(&answer)) {
    keep_going = co_await WriteResponse(*res, keep_alive);
  } else {
    keep_going = co_await WriteStream(std::get<api::StreamingResponse>(answer), keep_alive, path);
  }
  busy_ = false;
  co_return keep_going;
}

// Returns whether the connection stays open.
template <class Stream>
asio::awaitable<bool> HttpSession<Stream>::WriteResponse(HttpResponse& res, bool keep_alive) {
  res.set("X-Elastic-Product", "Elasticsearch");
  res.keep_alive(keep_alive && !registry_.draining());
  beast::error_code ec;
  tcp().expires_after(limits_.write_timeout);
  co_await http::async_write(stream_, res, asio::redirect_error(asio::use_awaitable, ec));
  co_return !ec && res.keep_alive();
}

// Writes the header, then the body piece by piece; returns whether the
// connection stays open (only after a complete body).
template <class Stream>
asio::awaitable<bool> HttpSession<Stream>::WriteStream(api::StreamingResponse& sr, bool keep_alive,
                                                       std::string_view path) {
  auto& res = sr.header;
  res.set("X-Elastic-Product", "Elasticsearch");
  // HTTP/1.0 has no chunked encoding: the body ends when the connection does.
  const bool chunked = res.version() >= 11;
  res.keep_alive(chunked && keep_alive && !registry_.draining());
  res.chunked(chunked);
  body_ = sr.body.get();
  // body_ must not outlive the stream, even when this frame unwinds.
  struct Unset {
    api::BodyStream*& body;
    ~Unset() { body = nullptr; }
  } unset{body_};
  const std::uint64_t id = ++stream_id_;
  hung_up_ = false;
  if (registry_.draining()) body_->Drain();

  beast::error_code ec;
  http::response_serializer<http::empty_body> serializer(res);
  tcp().expires_after(sr.write_timeout);
  co_await http::async_write_header(stream_, serializer,
                                    asio::redirect_error(asio::use_awaitable, ec));
  bool complete = false;
  if (!ec) {
    asio::co_spawn(
        stream_.get_executor(),
        [self = this->shared_from_this(), id] { return self->WatchForHangUp(id); }, asio::detached);
    complete = co_await WriteStreamBody(sr, chunked, path);
  } else {
    body_->Cancel();
  }
  tcp().expires_never();
  const bool keep_alive_after = complete && res.keep_alive();
  co_return keep_alive_after;
}

// Returns whether the whole body, with its last chunk, was written.
template <class Stream>
asio::awaitable<bool> HttpSession<Stream>::WriteStreamBody(api::StreamingResponse& sr, bool chunked,
                                                           std::string_view path) {
  beast::error_code ec;
  for (;;) {
    Result<std::string> piece = co_await body_->Next();
    if (!piece.ok()) {
      if (!hung_up_) log_.Warn("stream_failed", {{"error", piece.status().ToString()}});
      co_return false;
    }
    tcp().expires_after(sr.write_timeout);
    if (piece->empty()) {
      if (!chunked) co_return true;
      // Named, not a temporary of the co_await expression (see storage/async.h).
      const http::chunk_last<> last = http::make_chunk_last();
      co_await asio::async_write(stream_, last, asio::redirect_error(asio::use_awaitable, ec));
      co_return !ec;
    }
    if (chunked) {
      const http::chunk_body<asio::const_buffer> chunk =
          http::make_chunk(asio::const_buffer(piece->data(), piece->size()));
      co_await asio::async_write(stream_, chunk, asio::redirect_error(asio::use_awaitable, ec));
    } else {
      co_await asio::async_write(stream_, asio::const_buffer(piece->data(), piece->size()),
                                 asio::redirect_error(asio::use_awaitable, ec));
    }
    if (ec) {
      // The client left, or did not take a piece within the deadline.
      if (!hung_up_) body_->Cancel();
      if (ec == beast::error::timeout) {
        log_.Warn(
            "stream_write_timeout",
            {{"path", path}, {"timeout_s", static_cast<std::uint64_t>(sr.write_timeout.count())}});
      }
      co_return false;
    }
  }
}

// Whether the peer has closed its side (or the connection failed), even
// with bytes it sent before still unread: POLLRDHUP reports the FIN itself.
// That also catches a TLS client's close_notify followed by its FIN, whose
// alert bytes would look like data to a peek.
namespace {
bool PeerClosed(int fd) {
  pollfd p{fd, POLLRDHUP, 0};
  return ::poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
}
}  // namespace

// Runs beside a stream: when the client hangs up, cancels the stream and any
// write in flight, so a departed client leaves no work behind even while
// the stream waits for data. Bytes a client sends meanwhile (a pipelined
// request, a TLS record) are left for the next read, and the watch goes on
// checking for a close once a second.
template <class Stream>
asio::awaitable<void> HttpSession<Stream>::WatchForHangUp(std::uint64_t stream_id) {
  asio::steady_timer recheck(stream_.get_executor());
  for (;;) {
    beast::error_code ec;
    co_await socket().async_wait(asio::ip::tcp::socket::wait_read,
                                 asio::redirect_error(asio::use_awaitable, ec));
    if (stream_id != stream_id_ || body_ == nullptr) co_return;  // that stream is over
    if (ec || PeerClosed(socket().native_handle())) break;
    recheck.expires_after(std::chrono::seconds(1));
    co_await recheck.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    if (stream_id != stream_id_ || body_ == nullptr) co_return;
  }
  hung_up_ = true;
  body_->Cancel();
  beast::error_code ignored;
  socket().cancel(ignored);
}

template <class Stream>
asio::awaitable<api::HttpAnswer> HttpSession<Stream>::Dispatch(HttpRequest req) {
  const unsigned version = req.version();
  std::string error;
  try {
    co_return co_await router_.Handle(std::move(req), peer_);
  } catch (const std::exception& e) {
    error = e.what();
  }
  log_.Error("handler_failed", {{"error", error}});
  co_return TransportError(version, http::status::internal_server_error, "internal_error",
                           "the server failed to handle this request");
}

void SessionRegistry::Add(const std::shared_ptr<HttpConnection>& s) {
  std::lock_guard lock(mu_);
  sessions_.push_back(s);
}

void SessionRegistry::Remove(HttpConnection* s) {
  std::lock_guard lock(mu_);
  sessions_.erase(std::remove_if(sessions_.begin(), sessions_.end(),
                                 [s](const std::weak_ptr<HttpConnection>& w) {
                                   auto p = w.lock();
                                   return !p || p.get() == s;
                                 }),
                  sessions_.end());
}

void SessionRegistry::Drain() {
  draining_ = true;
  std::vector<std::shared_ptr<HttpConnection>> live;
  {
    std::lock_guard lock(mu_);
    for (auto& w : sessions_) {
      if (auto p = w.lock()) live.push_back(std::move(p));
    }
  }
  for (auto& s : live) {
    asio::post(s->executor(), [s] { s->OnDrain(); });
  }
}

std::size_t SessionRegistry::size() const {
  std::lock_guard lock(mu_);
  return sessions_.size();
}

template class HttpSession<beast::tcp_stream>;
template class HttpSession<beast::ssl_stream<beast::tcp_stream>>;

}  // namespace dashcam::server
