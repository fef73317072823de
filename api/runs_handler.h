// The training runs (events' run.id, kept in the partitions' group rollup,
// storage/event_store.h GroupSummary) and their metric series.
//
// GET /api/v1/runs?from=&to=&q=&limit=
//   Runs with an event in [from, to), newest last_seen first; with q, only
//   runs having an event that matches q.
//     limit  runs returned (default 100, 1..1000)
//   Answer (200):
//     {"runs":[{"id":"r-42","first_seen":..,"last_seen":..,"events":n,
//               "hosts":[..],"users":[..],"ranks":[0,1,..],
//               "status":"running|finished|failed|stalled",
//               "incident":{"id":..,"kind":..,"title":..,"first_seen":..}|null,
//               "link":"https://..."|null}],
//      "stall_after_s":600,"complete":true}
//   first_seen/last_seen/events come from the rollup of the UTC days the
//   range overlaps. hosts, users (host.name, user) and ranks (run.rank) are
//   read from the run's newest 2000 events (at most 50 of each). status:
//   failed = the run has an insight of severity critical or error (the
//   incident is its oldest); finished = a finishing line (run.end) and no
//   failure; stalled = no event for longer than --stall-after (by the
//   server's clock) without a finishing line; else running.
//
// GET /api/v1/runs/{id}/metrics?name=loss&from=&to=
//   The values of train.<name> in run {id}'s events, oldest first.
//   name: loss, grad_norm, lr, step, epoch, tokens_per_s, samples_per_s,
//   step_time, gpu_mem.
//   Answer (200):
//     {"run":"r-42","name":"loss","field":"train.loss",
//      "points":[{"t":"2026-..Z","step":100|null,"value":0.43}],"sampled":false}
//   At most 2000 points, evenly thinned from the events read (at most
//   200 000); "sampled":true when thinned or cut.
//   Errors: 400 for an unknown name, 404 for a run with no event.
//
// Errors (both): 400 illegal_argument, 400 query_parse_error, 503 query_timeout.
#pragma once

#include <boost/asio/awaitable.hpp>

#include "api/search_handler.h"

namespace dashcam::api {

boost::asio::awaitable<HttpResponse> HandleRuns(HttpRequest req, ApiContext& ctx);

// `run_id`: the path segment, already percent-decoded.
boost::asio::awaitable<HttpResponse> HandleRunMetrics(HttpRequest req, std::string run_id,
                                                      ApiContext& ctx);

}  // namespace dashcam::api
