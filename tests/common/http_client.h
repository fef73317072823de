// HttpClient: a small blocking HTTP/1.1 client over one keep-alive
// connection (Boost.Beast), for tests and benchmarks. Reconnects when the
// server closed the connection. Not thread-safe: one client per thread.
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
  std::string error;  // transport error, when status == 0
};

class HttpClient {
 public:
  HttpClient(std::string host, std::uint16_t port);
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

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

// Percent-encodes a query-string value.
std::string UrlEncode(std::string_view s);
// gzip-compresses `data` (level 1, like Filebeat).
std::string Gzip(std::string_view data, int level = 1);

}  // namespace dashcam::testing
