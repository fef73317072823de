// GET /api/v1/tail?q=&from=&to=&format=sse|text&heartbeat=
//
// Live tail: events matching q, pushed as they are committed (TailHub), over
// Server-Sent Events (text/event-stream, the default) or as text lines
// (format=text: `timestamp level host message`, for `curl -N`). Only events
// committed after the request arrives are sent; from/to, when given, also
// bound the event time (resolved once, when the tail starts: `from=now-5m`
// leaves out a backfill of older events).
//
// SSE framing: an opening comment (`: tail q=...`), then per event
//   id: <event key>
//   data: {"_id":..,"_index":..,"@timestamp":..,"_source":{..}}
// a `: heartbeat` comment after `heartbeat` seconds without events, and when
// the server ends the tail a final
//   event: end
//   data: {"reason":"slow_client"|"shutdown"|"lagging"|"error"}
// before the body ends (text: a `-- tail ended: <reason> --` line). A client
// whose queue of unsent events passes --tail-queue-bytes is ended with
// slow_client; a client that takes more than 10 s to accept a write is
// disconnected.
//
// Errors: 400 for bad parameters or a malformed query (with its position),
// 429 when too many tails are connected, 404 when this server runs no hub.
#pragma once

#include <boost/asio/awaitable.hpp>

#include "api/body_stream.h"
#include "api/search_handler.h"

namespace dashcam::api {

boost::asio::awaitable<HttpAnswer> HandleTail(HttpRequest req, ApiContext& ctx);

}  // namespace dashcam::api
