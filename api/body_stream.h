// Streaming answers: a handler that cannot hold its whole body in memory
// (export, tail) returns a StreamingResponse, headers plus a BodyStream that
// produces the body piece by piece. The HTTP session writes the headers with
// chunked transfer encoding, then asks for one piece, writes it, and only
// then asks for the next, so a stream never runs ahead of its client.
//
// Contract between the session and a BodyStream (all calls on the session's
// strand, one at a time):
//   * Next() is awaited repeatedly until it yields an empty string (the body
//     is complete: the session writes the last chunk and the connection may
//     serve another request) or an error (the session closes the connection
//     without the last chunk, so the client sees an incomplete transfer:
//     nothing sent so far can be taken back, and a truncated export must not
//     look complete).
//   * Cancel(): the client is gone. Work in progress should stop soon; a
//     pending Next() may finish with an error. Next() is not called again.
//   * Drain(): the server is shutting down. A stream that ends by itself
//     (export) may ignore it and finish; one that never ends (tail) should
//     end cleanly soon. May come before the first Next().
// The stream is destroyed on the session's strand after the last call.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <variant>

#include <boost/asio/awaitable.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

#include "storage/status.h"

namespace dashcam::api {

class BodyStream {
 public:
  virtual ~BodyStream() = default;
  virtual boost::asio::awaitable<Result<std::string>> Next() = 0;
  virtual void Cancel() = 0;
  virtual void Drain() = 0;
};

struct StreamingResponse {
  // Status and headers. The session adds the transfer framing (chunked for
  // HTTP/1.1; for HTTP/1.0 the body ends when the connection closes).
  boost::beast::http::response<boost::beast::http::empty_body> header;
  std::unique_ptr<BodyStream> body;
  // How long writing one piece may take before the client is given up on.
  std::chrono::seconds write_timeout{60};
};

// What a route answers: a complete response or a stream.
using HttpAnswer =
    std::variant<boost::beast::http::response<boost::beast::http::string_body>, StreamingResponse>;

}  // namespace dashcam::api
