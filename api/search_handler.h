// GET /api/v1/search?q=&from=&to=&limit=&cursor=&track_total_hits=&format=
//
// Answer (200):
//   {"took_ms":3,"total":12,"total_relation":"eq",
//    "hits":[{"_id":"..","_index":"..","@timestamp":"2026-11-29T10:23:15.123Z",
//             "_source":{...the stored document...},
//             "highlight":{"message":["CUDA <mark>out of memory</mark>"]}}],
//    "next_cursor":"0019a1c2b3d4e5f6" | null}
// Hits are newest first. `highlight` (highlighter.h) is there when the
// query's message terms matched the hit's message. With format=text the
// answer is text/plain, one line per hit (event_text.h), and the cursor and
// total are in the X-Dashcam-Next-Cursor and X-Dashcam-Total headers. `total` counts every match in
// [from, to) up to 10000 ("total_relation":"gte" beyond), or exactly with track_total_hits=true.
// `next_cursor` pages through all hits with no duplicates or gaps.
//
// Errors: 400 {"error":{"type":"query_parse_error","reason":..,"position":N}}
// for a malformed query, 400 {"error":{"type":"illegal_argument",..}} for a bad
// parameter, 503 {"error":{"type":"query_timeout",..}} past the time budget.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

#include "api/training_options.h"
#include "storage/event_store.h"
#include "storage/log.h"

namespace dashcam::api {

namespace http = boost::beast::http;
using HttpRequest = http::request<http::string_body>;
using HttpResponse = http::response<http::string_body>;

class TailHub;

// What the API handlers need. Owned by the server; outlives every request.
struct ApiContext {
  storage::EventStore& store;
  boost::asio::any_io_executor workers;  // searches run here
  const Log& log;
  std::chrono::milliseconds query_timeout{10'000};
  std::string es_version = "8.17.0";  // reported to Elasticsearch clients
  std::function<TimeMs()> now;
  // What makes two events come from the same source, for
  // GET /api/v1/context (context_handler.h): the first rule whose fields the
  // anchor event has all of applies.
  std::vector<std::vector<std::string>> context_scopes = {
      {"host.name", "log.file.path"}, {"container.id"}, {"agent.id"}, {"host.name"}, {"_index"}};
  TailHub* tails = nullptr;  // live tail (api/tail_hub.h); null: GET /api/v1/tail answers 404
  // Set only in a request's ScopedApiContext (scoped_context.h), where
  // `store` already applies it: the row filter, for readers that bypass the
  // store (the live tail hub). Null: every event is visible.
  const query::Node* row_filter = nullptr;
  TrainingOptions training;  // insights and runs (insights_handler.h, runs_handler.h)
};

boost::asio::awaitable<HttpResponse> HandleSearch(HttpRequest req, ApiContext& ctx);

// A JSON answer with the right headers (shared by the API handlers).
HttpResponse MakeJsonResponse(const HttpRequest& req, http::status status, std::string body);
// {"error":{"type":..,"reason":..}} with `status`.
HttpResponse MakeErrorResponse(const HttpRequest& req, http::status status, std::string_view type,
                               std::string_view reason);
// The answer to a failed storage call: 503 query_timeout past the deadline,
// 400 illegal_argument for InvalidArgument, else 500 storage_error.
HttpResponse StorageErrorResponse(const HttpRequest& req, const Status& s);

}  // namespace dashcam::api
