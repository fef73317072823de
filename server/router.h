// Router: the route table. Maps each request to its handler in ingest/ or
// api/ (or to an embedded web asset) and reads like an index of the HTTP API:
//
//   GET  /                      the web page (browsers), or the Elasticsearch
//                               info document (clients asking for JSON)
//   GET  /index.html /app.js ...  embedded web assets
//   GET  /healthz               liveness: the process answers
//   GET  /readyz                readiness: storage writable, not overloaded
//   GET  /metrics               counters and histograms, Prometheus text format
//   GET  /api/v1/status         version, uptime, partitions, ingest rate, config
//   POST /_bulk                 Elasticsearch bulk ingest
//   POST /{index}/_bulk         same, with a default index
//   POST /api/v1/ingest         NDJSON ingest
//   GET  /api/v1/search         search
//   GET  /api/v1/histogram      event counts over time (api/histogram_handler.h)
//   GET  /api/v1/fields         facets: fields and their top values (api/fields_handler.h)
//   GET  /api/v1/context        an event's neighbours in its source (api/context_handler.h)
//   GET  /api/v1/export         every match, streamed (ndjson, csv, text)
//   GET  /api/v1/tail           new matches as they are committed (SSE, text)
//   GET  /api/v1/insights       failures folded into incidents (api/insights_handler.h)
//   GET  /api/v1/runs           training runs and their status (api/runs_handler.h)
//   GET  /api/v1/runs/{id}/metrics  a run's train.* series (api/runs_handler.h)
//   GET  /api/v1/redaction/rules  the redaction rules in force
//   GET|POST /_search, /{index}/_search, /_count, /{index}/_count
//                               Elasticsearch search API (api/es_search.h)
//   /_license, /_ilm, /_index_template, /_data_stream, /_ingest/pipeline,
//   /_cluster/health, /_refresh  Elasticsearch management (api/es_handlers.h)
//
// With an AuthGate (--auth-file), every request is first admitted by it
// (server/auth_gate.h: 401/403/429), and a read key with a row filter is
// routed with a ScopedApiContext (api/scoped_context.h) so that whatever its
// request reads is filtered.
//
// Handle is a pure function of the request (plus the services it calls). It
// answers a complete response, or a stream (api/body_stream.h). Any complete
// JSON answer is indented when the request asks `?pretty`.
#pragma once

#include <array>
#include <functional>
#include <string>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/address.hpp>

#include "api/body_stream.h"
#include "api/search_handler.h"
#include "ingest/ingest_handlers.h"
#include "server/auth_gate.h"
#include "storage/metrics.h"

namespace dashcam::server {

using HttpRequest = ingest::HttpRequest;
using HttpResponse = ingest::HttpResponse;

// What GET /readyz answers: 200 when ready, else 503; `body` is JSON.
struct Readiness {
  bool ready = true;
  std::string body;
};

// The operational endpoints besides /metrics, rendered by the server
// (server/server_status.h). A null function: its endpoint answers 404.
struct OpsEndpoints {
  std::function<Readiness()> readiness;      // GET /readyz; quick, called on an I/O thread
  std::function<std::string()> status_json;  // GET /api/v1/status; may block (run on workers)
  // Where the query endpoints' latency is observed
  // (dashcam_query_duration_seconds{endpoint}); null: nowhere.
  Metrics* metrics = nullptr;
};

// The query endpoints whose latency is measured, as their `endpoint` label.
inline constexpr const char* kQueryEndpoints[] = {"search", "histogram", "fields",    "context",
                                                  "export", "tail",      "es_search", "es_count"};

class Router {
 public:
  // `metrics_text` renders GET /metrics (Prometheus text format). `auth`
  // null: every request is let through (no --auth-file).
  Router(ingest::IngestContext& ingest, api::ApiContext& api,
         std::function<std::string()> metrics_text, OpsEndpoints ops = {},
         AuthGate* auth = nullptr);

  // `peer`: the client's address, for the AuthGate's failure rate limit.
  boost::asio::awaitable<api::HttpAnswer> Handle(HttpRequest req,
                                                 const boost::asio::ip::address& peer = {});

  // Whether the request target's body is parsed whole into JSON (the
  // Elasticsearch search API), which takes several times its size in
  // memory, so the session bounds it more tightly (HttpLimits). Ingest bodies
  // are decoded line by line and are not.
  static bool ParsesBodyWhole(std::string_view target);

 private:
  boost::asio::awaitable<api::HttpAnswer> Admit(HttpRequest req,
                                                const boost::asio::ip::address& peer);
  boost::asio::awaitable<api::HttpAnswer> Route(HttpRequest req);

  ingest::IngestContext& ingest_;
  api::ApiContext& api_;
  const std::function<std::string()> metrics_text_;
  const OpsEndpoints ops_;
  // One per kQueryEndpoints entry; null without ops_.metrics.
  std::array<HistogramMetric*, std::size(kQueryEndpoints)> latency_{};
  AuthGate* const auth_;
};

}  // namespace dashcam::server
