#include "server/auth_gate.h"

#include <fmt/format.h>
#include <boost/beast/http/field.hpp>

#include "server/credentials.h"
#include "storage/async.h"

namespace dashcam::server {
namespace {

namespace http = boost::beast::http;

constexpr const char* kFailuresName = "dashcam_auth_failures_total";
constexpr const char* kFailuresHelp = "Requests refused by authentication or authorization.";
constexpr const char* kReasons[] = {"missing", "malformed", "unknown_key",
                                    "bad_key", "forbidden", "rate_limited"};

// One header, all challenges: some clients keep only the last of repeated
// WWW-Authenticate fields.
constexpr const char* kChallenge =
    R"(ApiKey realm="dashcam", Basic realm="dashcam", charset="UTF-8", Bearer realm="dashcam")";
// For the page's own scripts: a Basic challenge makes browsers open their
// credentials dialog even for fetch(), over the page's own key form; they do
// not prompt for a scheme they do not know.
constexpr const char* kPageChallenge = R"(ApiKey realm="dashcam")";

// The page sends this header on every fetch. A cross-origin page cannot set a
// custom header without a CORS preflight, which dashcam never grants, so only
// dashcam's own page (or a non-browser client, which has no dialog) sends it.
bool FromPage(const api::HttpRequest& req) {
  return req[kPageClientHeader] == "web";
}

}  // namespace

AuthGate::AuthGate(std::unique_ptr<ApiKeySet> keys, FailureLimiterOptions limits, Metrics& metrics,
                   boost::asio::any_io_executor workers, const Log& log)
    : keys_(std::move(keys)),
      workers_(std::move(workers)),
      log_(log),
      metrics_(metrics),
      limiter_(limits) {
  // Every reason shows in /metrics from the start, at 0.
  for (const char* r : kReasons) {
    metrics_.GetCounter(kFailuresName, kFailuresHelp, fmt::format("reason=\"{}\"", r));
  }
}

api::HttpResponse AuthGate::Unauthorized(const api::HttpRequest& req, const char* reason_label,
                                         std::string_view reason,
                                         const boost::asio::ip::address& peer) {
  metrics_.GetCounter(kFailuresName, kFailuresHelp, fmt::format("reason=\"{}\"", reason_label))
      .Add();
  if (std::string_view(reason_label) != "missing") {
    log_.Warn("auth_failed", {{"reason", reason_label}, {"peer", peer.to_string()}});
  }
  auto res = api::MakeErrorResponse(req, http::status::unauthorized, "security_exception", reason);
  res.set(http::field::www_authenticate, FromPage(req) ? kPageChallenge : kChallenge);
  return res;
}

api::HttpResponse AuthGate::RateLimited(const api::HttpRequest& req,
                                        std::chrono::seconds retry_after) {
  metrics_.GetCounter(kFailuresName, kFailuresHelp, "reason=\"rate_limited\"").Add();
  auto res = api::MakeErrorResponse(
      req, http::status::too_many_requests, "too_many_requests",
      "too many failed authentication attempts from this address; retry later");
  res.set(http::field::retry_after, std::to_string(retry_after.count()));
  return res;
}

api::HttpResponse AuthGate::Forbidden(const api::HttpRequest& req, const ApiKey& key) {
  metrics_.GetCounter(kFailuresName, kFailuresHelp, "reason=\"forbidden\"").Add();
  std::string target(req.target().substr(0, 200));
  if (auto q = target.find('?'); q != std::string::npos) target.resize(q);
  return api::MakeErrorResponse(
      req, http::status::forbidden, "security_exception",
      fmt::format("API key [{}] with role [{}]{} may not call {} {}", key.id, RoleName(key.role),
                  key.filter ? " and a filter" : "", std::string(http::to_string(req.method())),
                  target));
}

boost::asio::awaitable<std::variant<Admission, api::HttpResponse>> AuthGate::Check(
    const api::HttpRequest& req, const std::vector<std::string>& seg, bool wants_html,
    const boost::asio::ip::address& peer) {
  const Access access = RequiredAccess(req.method(), seg, wants_html);
  if (access == Access::kOpen) co_return Admission{};
  auto parsed = ParseAuthorization(req[http::field::authorization]);
  const auto now = std::chrono::steady_clock::now();
  if (auto* problem = std::get_if<CredentialsProblem>(&parsed)) {
    if (problem->error == CredentialsError::kMissing) {
      co_return Unauthorized(req, "missing", problem->reason, peer);
    }
    if (auto wait = limiter_.Charge(peer, now)) co_return RateLimited(req, *wait);
    co_return Unauthorized(req, "malformed", problem->reason, peer);
  }
  const Credentials& c = std::get<Credentials>(parsed);
  auto verdict = keys_->CachedVerify(c.id, c.key);  // only a recent success is cached
  if (!verdict) {
    // A failure is charged before the check, in one step with the test for
    // a lockout, and refunded on success: guesses in flight at once count
    // against the address too (each costs a worker a PBKDF2 run). Only a
    // recently verified key passes a blocked address.
    if (auto wait = limiter_.Charge(peer, now)) co_return RateLimited(req, *wait);
    verdict = co_await storage::RunBlocking(workers_, [&] { return keys_->Verify(c.id, c.key); });
    if (verdict->outcome == ApiKeySet::Outcome::kOk) limiter_.Refund(peer);
  }
  if (verdict->outcome != ApiKeySet::Outcome::kOk) {
    const bool unknown = verdict->outcome == ApiKeySet::Outcome::kUnknownKey;
    co_return Unauthorized(req, unknown ? "unknown_key" : "bad_key", "invalid API key id or key",
                           peer);
  }
  const ApiKey& key = *verdict->key;
  if (!Allows(key.role, key.filter.has_value(), access)) co_return Forbidden(req, key);
  co_return Admission{&key};
}

}  // namespace dashcam::server
