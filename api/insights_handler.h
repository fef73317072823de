// GET /api/v1/insights?q=&from=&to=&limit=
//
// The failures the detectors recognised (events with insight.kind), folded
// into incidents: events of the same kind and run (run.id; without one, the
// same host) within TrainingOptions::incident_gap_ms of the incident's
// previous event are one incident. The first event of an incident (the
// oldest, usually the root cause) gives its facts and explanation.
//   limit  incidents returned, newest first by first_seen (default 100, 1..1000)
//
// Answer (200):
//   {"incidents":[{"id":"<first event id>","kind":"cuda_oom","severity":"error",
//     "run_id":"r-42"|null,"count":512,"first_seen":"2026-11-29T10:23:15.123Z",
//     "last_seen":..,"hosts":[..],"users":[..],"ranks":[0,1,..],"gpus":[0,..],
//     "first_event":{"id":..,"_index":..,"@timestamp":..,"message":..},
//     "context":"/api/v1/context?id=<first event id>",
//     "facts":{"bytes_requested":2254857830,"gpu":0,..},
//     "title":"CUDA out of memory on gpu-node-07 GPU 0","explanation":"..",
//     "fixes":[".."],"run_link":"https://..."|null}],
//    "complete":true,"events_read":512}
// The newest insight events are read first, at most 100 000 of them
// ("complete":false beyond: older incidents are missing and the oldest ones
// read may lack their start). severity is the highest of the incident's
// events; hosts, users, ranks and gpus list at most 1000 values each.
//
// Errors: 400 illegal_argument, 400 query_parse_error, 503 query_timeout.
#pragma once

#include <boost/asio/awaitable.hpp>

#include "api/search_handler.h"

namespace dashcam::api {

boost::asio::awaitable<HttpResponse> HandleInsights(HttpRequest req, ApiContext& ctx);

}  // namespace dashcam::api
