// StreamClient: a blocking HTTP/1.x client over a plain socket for reading
// streamed answers (export, live tail) bit by bit, with a deadline on every
// wait. Unlike HttpClient it can stop reading (a slow client), shrink its
// receive buffer, hang up mid-body, and tell a body that ended with its
// terminating chunk from a connection that was cut.
//
// Thread-safety: none; one client per thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>

namespace dashcam::testing {

struct StreamClientOptions {
  int receive_buffer = 0;  // SO_RCVBUF before connecting; 0: the system's
  int http_minor = 1;      // HTTP/1.<minor>
};

class StreamClient {
 public:
  // Connects to 127.0.0.1:port; ok() says whether it worked.
  explicit StreamClient(std::uint16_t port, StreamClientOptions options = {});
  ~StreamClient();
  StreamClient(const StreamClient&) = delete;
  StreamClient& operator=(const StreamClient&) = delete;

  bool ok() const { return fd_ >= 0; }
  // Sends `GET target` (keep-alive). Resets the state of the previous answer
  // (bytes already read past it are kept). `extra_headers`: "Name: value\r\n"
  // lines to add.
  bool SendGet(std::string_view target, std::string_view extra_headers = {});
  // Waits for the status line and headers. False on timeout or close.
  bool ReadHeader(std::chrono::milliseconds timeout);
  // Reads until `done(body())` holds, the body ends, or the timeout passes.
  // Returns done(body()).
  bool ReadUntil(const std::function<bool(const std::string&)>& done,
                 std::chrono::milliseconds timeout);
  // Reads until the body ends (complete() or closed()) or the timeout passes.
  bool ReadToEnd(std::chrono::milliseconds timeout);
  // Reads whatever is available within `timeout` once; false on close/error.
  bool ReadSome(std::chrono::milliseconds timeout);
  // Closes the socket at once (a client hanging up).
  void Close();

  int status() const { return status_; }
  // Lowercase header names.
  const std::map<std::string, std::string>& headers() const { return headers_; }
  // The body so far, with chunk framing removed.
  const std::string& body() const { return body_; }
  std::string TakeBody() { return std::move(body_); }
  // The body ended properly: the terminating chunk (chunked), or the
  // declared length.
  bool complete() const { return complete_; }
  // The server closed the connection (or it broke).
  bool closed() const { return closed_; }
  std::uint64_t raw_bytes_read() const { return raw_bytes_; }

 private:
  bool Fill(std::chrono::milliseconds timeout);  // false on timeout, close or error
  bool ParseHeader();
  void DecodeBody();

  int fd_ = -1;
  StreamClientOptions options_;
  std::string in_;  // raw bytes not yet consumed
  bool header_done_ = false;
  int status_ = 0;
  std::map<std::string, std::string> headers_;
  bool chunked_ = false;
  std::int64_t content_length_ = -1;
  std::uint64_t chunk_left_ = 0;  // bytes left of the current chunk
  bool in_chunk_ = false;
  std::string body_;
  bool complete_ = false;
  bool closed_ = false;
  std::uint64_t raw_bytes_ = 0;
};

}  // namespace dashcam::testing
