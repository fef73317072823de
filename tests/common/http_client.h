// HttpClient: a small blocking HTTP/1.1 client over one keep-alive
// connection (Boost.Beast), for tests and benchmarks. It connects on first
// use and again after a transport error or a response that did not allow
// keep-alive, so a caller just sends requests in a loop.
//
// Blocking calls have no timeout of their own: a server that accepts and
// never answers blocks the caller until the server dies (dashcam_bench
// guards against that with a watchdog that kills a stalled server).
//
// Thread-safety: none; use one client per thread.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>

namespace dashcam::testing {

struct HttpResult {
  int status = 0;                              // 0: the request could not be sent or no answer came
  std::map<std::string, std::string> headers;  // lowercase names
  std::string body;
  // Transport error, when status == 0: "connect 127.0.0.1:9200: Connection
  // refused", "write: ...", "read: end of stream", "bad address ...".
  std::string error;
};

struct HttpClientOptions {
  // When an exchange fails, send the request once more on a new connection
  // (the server may have closed an idle keep-alive connection). Off for
  // callers that count transport errors and decide about resending.
  bool retry_once = true;
};

class HttpClient {
 public:
  HttpClient(std::string host, std::uint16_t port, HttpClientOptions options = {});
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // HTTP error statuses are results like any other; only transport errors
  // give status 0.
  HttpResult Request(std::string_view method, std::string_view target, std::string_view body = {},
                     const std::map<std::string, std::string>& headers = {});
  HttpResult Get(std::string_view target) { return Request("GET", target); }
  HttpResult Post(std::string_view target, std::string_view body,
                  const std::map<std::string, std::string>& headers = {}) {
    return Request("POST", target, body, headers);
  }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Percent-encodes a query-string value: everything but RFC 3986 unreserved
// characters.
std::string UrlEncode(std::string_view s);
// gzip-compresses `data` (level 1, like Filebeat). REQUIRES: 0 <= level <= 9.
// Throws std::runtime_error if zlib fails (it cannot allocate its state).
std::string Gzip(std::string_view data, int level = 1);
// zlib-wrapped deflate (RFC 1950), as `Content-Encoding: deflate` and Beats'
// compressed frames send it. `level` -1 is zlib's default (6); otherwise
// REQUIRES: 0 <= level <= 9. Throws std::runtime_error if zlib fails.
std::string Zlib(std::string_view data, int level = -1);

}  // namespace dashcam::testing
