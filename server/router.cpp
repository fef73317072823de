#include "server/router.h"

#include <charconv>
#include <chrono>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/field.hpp>
#include <boost/beast/http/rfc7230.hpp>
#include <boost/url/parse.hpp>

#include "api/context_handler.h"
#include "api/es_handlers.h"
#include "api/es_search.h"
#include "api/export_handler.h"
#include "api/fields_handler.h"
#include "api/histogram_handler.h"
#include "api/insights_handler.h"
#include "api/json_pretty.h"
#include "api/patterns_handler.h"
#include "api/query_params.h"
#include "api/runs_handler.h"
#include "api/scoped_context.h"
#include "api/tail_handler.h"
#include "storage/async.h"
#include "web/assets.h"

namespace dashcam::server {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;

HttpResponse ErrorResponse(const HttpRequest& req, http::status status, std::string_view type,
                           std::string_view reason) {
  return api::MakeErrorResponse(req, status, type, reason);
}

// Whether an Accept-Encoding value admits gzip: listed (or "*") without
// q=0. Beast's ext_list parses the RFC 9110 grammar (codings with
// `;`-parameters, blanks allowed).
bool AcceptsGzip(std::string_view accept) {
  bool star = false;
  for (const auto& [coding, params] :
       http::ext_list(beast::string_view(accept.data(), accept.size()))) {
    double q = 1;
    for (const auto& [name, value] : params) {
      if (beast::iequals(name, "q")) std::from_chars(value.data(), value.data() + value.size(), q);
    }
    const bool refused = q <= 0;
    if (beast::iequals(coding, "gzip") || beast::iequals(coding, "x-gzip")) return !refused;
    if (coding == "*") star = !refused;
  }
  return star;
}

// Whether If-None-Match names `etag` (a list, or "*"; weak comparison, as
// RFC 9110 section 13.1.2 asks for).
bool Matches(std::string_view if_none_match, std::string_view etag) {
  if (if_none_match.empty()) return false;
  if (if_none_match == "*") return true;
  std::size_t at = 0;
  while ((at = if_none_match.find(etag, at)) != std::string_view::npos) {
    const std::size_t end = at + etag.size();
    if (end == if_none_match.size() || if_none_match[end] == ',' || if_none_match[end] == ' ') {
      return true;
    }
    at = end;
  }
  return false;
}

// A page asset, gzip-compressed when the client accepts it, with its ETag
// (304 when the client has it) and the page's security headers.
HttpResponse AssetResponse(const HttpRequest& req, const web::Asset& asset) {
  HttpResponse res{http::status::ok, req.version()};
  const bool gzip = !asset.gzip_body.empty() && AcceptsGzip(req[http::field::accept_encoding]);
  const std::string_view body = gzip ? asset.gzip_body : asset.body;
  const std::string_view etag = gzip ? asset.gzip_etag : asset.etag;
  res.set(http::field::content_type, asset.content_type);
  res.set(http::field::etag, etag);
  // Revalidated on every load (a 304 is cheap), so a new binary's page is
  // never mixed with an old one's cached modules.
  res.set(http::field::cache_control, "no-cache");
  if (!asset.gzip_body.empty()) res.set(http::field::vary, "Accept-Encoding");
  if (gzip) res.set(http::field::content_encoding, "gzip");
  res.set("Content-Security-Policy", web::kContentSecurityPolicy);
  res.set("X-Content-Type-Options", "nosniff");
  res.set("X-Frame-Options", "DENY");
  res.set("Referrer-Policy", "no-referrer");
  res.set("Cross-Origin-Opener-Policy", "same-origin");
  if (Matches(req[http::field::if_none_match], etag)) {
    res.result(http::status::not_modified);
  } else if (req.method() != http::verb::head) {
    res.body() = std::string(body);
  }
  res.prepare_payload();
  if (req.method() == http::verb::head) res.content_length(body.size());
  return res;
}

bool IsEsSearchPath(const std::vector<std::string>& seg) {
  return (seg.size() == 1 || seg.size() == 2) &&
         (seg.back() == "_search" || seg.back() == "_count");
}

bool WantsHtml(const HttpRequest& req) {
  return req[http::field::accept].find("text/html") != std::string_view::npos;
}

std::vector<std::string> PathSegments(std::string_view target) {
  std::vector<std::string> out;
  auto url = boost::urls::parse_origin_form(target);
  if (!url) return out;
  for (auto seg : url->segments()) out.push_back(seg);
  return out;
}

bool IsRead(http::verb v) {
  return v == http::verb::get || v == http::verb::head;
}
bool IsWrite(http::verb v) {
  return v == http::verb::post || v == http::verb::put;
}

using SteadyClock = std::chrono::steady_clock;

void ObserveSince(HistogramMetric& h, SteadyClock::time_point start) {
  h.Observe(std::chrono::duration<double>(SteadyClock::now() - start).count());
}

// The kQueryEndpoints index of the handler Route picks for this request; -1
// when it is not a query endpoint. Mirrors Route's conditions.
int QueryEndpointIndex(http::verb method, const std::vector<std::string>& seg) {
  auto index_of = [](std::string_view name) {
    for (std::size_t i = 0; i < std::size(kQueryEndpoints); ++i) {
      if (name == kQueryEndpoints[i]) return static_cast<int>(i);
    }
    return -1;
  };
  if (seg.size() == 3 && seg[0] == "api" && seg[1] == "v1") {
    const bool get_only = seg[2] == "export" || seg[2] == "tail";
    return (get_only ? method == http::verb::get : IsRead(method)) ? index_of(seg[2]) : -1;
  }
  if (!seg.empty() && seg.size() <= 2 && (IsRead(method) || method == http::verb::post)) {
    if (seg.back() == "_search") return index_of("es_search");
    if (seg.back() == "_count") return index_of("es_count");
  }
  return -1;
}

// An export's latency is its whole length: observed when the body completes
// (not when it fails or the client leaves).
class TimedBodyStream final : public api::BodyStream {
 public:
  TimedBodyStream(std::unique_ptr<api::BodyStream> inner, HistogramMetric& latency,
                  SteadyClock::time_point start)
      : inner_(std::move(inner)), latency_(latency), start_(start) {}

  boost::asio::awaitable<Result<std::string>> Next() override {
    Result<std::string> piece = co_await inner_->Next();
    if (piece.ok() && piece->empty() && !observed_) {
      observed_ = true;
      ObserveSince(latency_, start_);
    }
    co_return piece;
  }
  void Cancel() override { inner_->Cancel(); }
  void Drain() override { inner_->Drain(); }

 private:
  std::unique_ptr<api::BodyStream> inner_;
  HistogramMetric& latency_;
  const SteadyClock::time_point start_;
  bool observed_ = false;
};

}  // namespace

Router::Router(ingest::IngestContext& ingest, api::ApiContext& api,
               std::function<std::string()> metrics_text, OpsEndpoints ops, AuthGate* auth)
    : ingest_(ingest),
      api_(api),
      metrics_text_(std::move(metrics_text)),
      ops_(std::move(ops)),
      auth_(auth) {
  if (!ops_.metrics) return;
  for (std::size_t i = 0; i < latency_.size(); ++i) {
    latency_[i] = &ops_.metrics->GetHistogram(
        "dashcam_query_duration_seconds",
        "Time to answer a query endpoint; for export, until the whole body is sent; for tail, "
        "until the stream starts.",
        kLatencySecondsBuckets, fmt::format("endpoint=\"{}\"", kQueryEndpoints[i]));
  }
}

boost::asio::awaitable<api::HttpAnswer> Router::Handle(HttpRequest req,
                                                       const boost::asio::ip::address& peer) {
  const bool pretty = api::WantsPretty(req.target());
  const int endpoint = QueryEndpointIndex(req.method(), PathSegments(req.target()));
  HistogramMetric* latency = endpoint < 0 ? nullptr : latency_[static_cast<std::size_t>(endpoint)];
  const auto start = SteadyClock::now();
  api::HttpAnswer answer = co_await Admit(std::move(req), peer);
  if (latency) {
    auto* stream = std::get_if<api::StreamingResponse>(&answer);
    if (stream && kQueryEndpoints[endpoint] == std::string_view("export")) {
      stream->body = std::make_unique<TimedBodyStream>(std::move(stream->body), *latency, start);
    } else {
      ObserveSince(*latency, start);
    }
  }
  // Streams (export, tail) are written as they come; only whole JSON
  // answers are indented.
  if (auto* res = std::get_if<HttpResponse>(&answer);
      res && pretty && !res->body().empty() &&
      (*res)[http::field::content_type].starts_with("application/json")) {
    res->body() = api::IndentJson(res->body());
    res->prepare_payload();
  }
  co_return answer;
}

boost::asio::awaitable<api::HttpAnswer> Router::Admit(HttpRequest req,
                                                      const boost::asio::ip::address& peer) {
  if (auth_ == nullptr) co_return co_await Route(std::move(req));
  std::vector<std::string> seg = PathSegments(req.target());
  if (seg.size() == 1 && seg[0].empty()) seg.clear();  // "/", as Route sees it
  auto checked = co_await auth_->Check(req, seg, WantsHtml(req), peer);
  if (auto* refused = std::get_if<HttpResponse>(&checked)) co_return std::move(*refused);
  const Admission& admitted = std::get<Admission>(checked);
  if (admitted.row_filter() == nullptr) co_return co_await Route(std::move(req));
  // The filter is parsed again for each request so that its dates
  // (`@timestamp:>=now-7d`) mean this request's now, not the server's start.
  auto filter = api::ParseRequestQuery(admitted.key->filter_text, api_.now());
  if (auto* err = std::get_if<api::QueryError>(&filter)) {  // it parsed when loaded
    co_return api::MakeErrorResponse(req, http::status::internal_server_error, "auth_error",
                                     "the API key's filter no longer parses: " + err->reason);
  }
  // The same routes over a filtered view of the store, kept alive as long as
  // the answer's stream.
  auto scoped =
      std::make_shared<api::ScopedApiContext>(api_, std::move(std::get<query::Node>(filter)));
  Router filtered(ingest_, scoped->ctx(), metrics_text_);
  api::HttpAnswer answer = co_await filtered.Route(std::move(req));
  co_return api::KeepAliveWith(std::move(answer), std::move(scoped));
}

boost::asio::awaitable<api::HttpAnswer> Router::Route(HttpRequest req) {
  const http::verb method = req.method();
  std::vector<std::string> seg = PathSegments(req.target());
  if (seg.size() == 1 && seg[0].empty()) seg.clear();  // "/"
  const std::string path = seg.empty() ? "/" : "/" + seg[0];

  if (seg.empty() && IsRead(method) && WantsHtml(req)) {
    co_return AssetResponse(req, *web::FindAsset("/"));
  }
  if (seg.size() == 1 && seg[0] == "metrics" && IsRead(method)) {
    // Rendering reads the partition files' sizes: not on an I/O thread.
    std::string text = co_await storage::RunBlocking(api_.workers, metrics_text_);
    HttpResponse res{http::status::ok, req.version()};
    res.set(http::field::content_type, "text/plain; version=0.0.4; charset=utf-8");
    res.body() = std::move(text);
    res.prepare_payload();
    co_return res;
  }
  if (seg.size() == 1 && seg[0] == "healthz") {
    co_return api::MakeJsonResponse(req, http::status::ok, R"({"status":"ok"})");
  }
  if (seg.size() == 1 && seg[0] == "readyz" && IsRead(method) && ops_.readiness) {
    Readiness r = ops_.readiness();
    co_return api::MakeJsonResponse(
        req, r.ready ? http::status::ok : http::status::service_unavailable, std::move(r.body));
  }
  if (seg.size() == 3 && seg[0] == "api" && seg[1] == "v1" && seg[2] == "status" &&
      IsRead(method) && ops_.status_json) {
    std::string body = co_await storage::RunBlocking(api_.workers, ops_.status_json);
    co_return api::MakeJsonResponse(req, http::status::ok, std::move(body));
  }
  if (seg.size() == 1 && seg[0] == "_bulk" && IsWrite(method)) {
    co_return co_await ingest::HandleBulk(std::move(req), "", ingest_);
  }
  if (seg.size() == 2 && seg[1] == "_bulk" && IsWrite(method)) {
    co_return co_await ingest::HandleBulk(std::move(req), seg[0], ingest_);
  }
  const bool search_verb = IsRead(method) || method == http::verb::post;
  if (IsEsSearchPath(seg) && search_verb) {
    std::string index = seg.size() == 2 ? seg[0] : "";
    const bool count = seg.back() == "_count";
    co_return co_await api::HandleEsSearch(std::move(req), std::move(index), count, api_);
  }
  if (seg.size() == 3 && seg[0] == "api" && seg[1] == "v1") {
    if (seg[2] == "ingest" && IsWrite(method)) {
      co_return co_await ingest::HandleNdjsonIngest(std::move(req), ingest_);
    }
    if (seg[2] == "search" && IsRead(method))
      co_return co_await api::HandleSearch(std::move(req), api_);
    if (seg[2] == "histogram" && IsRead(method))
      co_return co_await api::HandleHistogram(std::move(req), api_);
    if (seg[2] == "fields" && IsRead(method))
      co_return co_await api::HandleFields(std::move(req), api_);
    if (seg[2] == "patterns" && IsRead(method))
      co_return co_await api::HandlePatterns(std::move(req), api_);
    if (seg[2] == "context" && IsRead(method))
      co_return co_await api::HandleContext(std::move(req), api_);
    if (seg[2] == "export" && method == http::verb::get)
      co_return co_await api::HandleExport(std::move(req), api_);
    if (seg[2] == "tail" && method == http::verb::get)
      co_return co_await api::HandleTail(std::move(req), api_);
    if (seg[2] == "insights" && IsRead(method))
      co_return co_await api::HandleInsights(std::move(req), api_);
    if (seg[2] == "runs" && IsRead(method))
      co_return co_await api::HandleRuns(std::move(req), api_);
  }
  if (seg.size() == 5 && seg[0] == "api" && seg[1] == "v1" && seg[2] == "runs" &&
      seg[4] == "metrics" && IsRead(method)) {
    std::string run = seg[3];
    co_return co_await api::HandleRunMetrics(std::move(req), std::move(run), api_);
  }
  if (seg.size() == 4 && seg[0] == "api" && seg[1] == "v1" && seg[2] == "redaction" &&
      seg[3] == "rules" && IsRead(method)) {
    co_return ingest::HandleRedactionRules(req, ingest_);
  }
  if (IsRead(method) && seg.size() == 1) {
    if (const web::Asset* asset = web::FindAsset(path)) co_return AssetResponse(req, *asset);
  }
  if (auto res = api::HandleEsManagement(req, seg, api_)) co_return std::move(*res);
  co_return ErrorResponse(req, http::status::not_found, "not_found",
                          std::string(http::to_string(method)) + " " +
                              std::string(req.target().substr(0, 200)) +
                              " is not an endpoint of dashcam");
}

bool Router::ParsesBodyWhole(std::string_view target) {
  return IsEsSearchPath(PathSegments(target));
}

}  // namespace dashcam::server
