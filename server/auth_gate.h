// AuthGate: with --auth-file, decides before a request is routed whether its
// caller may make it, and answers the refusals:
//   401 {"error":{"type":"security_exception",..}} with WWW-Authenticate
//       (ApiKey, Basic and Bearer challenges; only ApiKey for a request
//       with `X-Dashcam-Client: web`, the page's own fetches, so that
//       browsers do not open their Basic dialog): no key, a malformed
//       Authorization header, an unknown id or a wrong key (the same reason
//       for the last two, so ids cannot be probed);
//   403 security_exception: a valid key whose role may not call the endpoint
//       (server/endpoint_access.h);
//   429 too_many_requests with Retry-After: the client address has failed
//       too often (server/failure_limiter.h).
// Every refusal counts in dashcam_auth_failures_total{reason=missing|
// malformed|unknown_key|bad_key|forbidden|rate_limited}. A key is verified
// on the worker pool (PBKDF2), or from ApiKeySet's cache on the I/O thread.
//
// Thread-safety: Check may be called concurrently from any thread. The gate
// must outlive every request it checks.
#pragma once

#include <memory>
#include <string>
#include <variant>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/address.hpp>

#include "api/search_handler.h"
#include "server/api_keys.h"
#include "server/endpoint_access.h"
#include "server/failure_limiter.h"
#include "storage/log.h"
#include "storage/metrics.h"

namespace dashcam::server {

// Sent as `X-Dashcam-Client: web` by web/static/app.js on every API request.
inline constexpr const char* kPageClientHeader = "X-Dashcam-Client";

// A request allowed through. `key` is null for an open endpoint.
struct Admission {
  const ApiKey* key = nullptr;  // lives as long as the gate
  const query::Node* row_filter() const {
    return key != nullptr && key->filter ? &*key->filter : nullptr;
  }
};

class AuthGate {
 public:
  AuthGate(std::unique_ptr<ApiKeySet> keys, FailureLimiterOptions limits, Metrics& metrics,
           boost::asio::any_io_executor workers, const Log& log);

  // `seg` and `wants_html` as the router sees the request.
  boost::asio::awaitable<std::variant<Admission, api::HttpResponse>> Check(
      const api::HttpRequest& req, const std::vector<std::string>& seg, bool wants_html,
      const boost::asio::ip::address& peer);

 private:
  api::HttpResponse Unauthorized(const api::HttpRequest& req, const char* reason_label,
                                 std::string_view reason, const boost::asio::ip::address& peer);
  api::HttpResponse RateLimited(const api::HttpRequest& req, std::chrono::seconds retry_after);
  api::HttpResponse Forbidden(const api::HttpRequest& req, const ApiKey& key);

  // Constant after construction.
  const std::unique_ptr<ApiKeySet> keys_;
  const boost::asio::any_io_executor workers_;
  const Log& log_;
  Metrics& metrics_;
  FailureLimiter limiter_;
};

}  // namespace dashcam::server
