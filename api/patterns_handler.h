// GET /api/v1/patterns?q=&from=&to=&limit=&sample=
//
// The most frequent message templates (message_template.h: numbers, hex,
// ids, paths, UUIDs, IPs, times, durations and sizes masked) among the
// events matching the query, each with a count series over the range and
// whether it is new compared with the previous range of the same length.
//   limit   templates listed (default 50, 1..1000)
//   sample  events read at most per range (default 50 000, 1..200 000)
// from/to resolve as the histogram's (histogram_handler.h), and the series
// share its buckets (`auto` interval): ~60-120 of them.
//
// Answer (200):
//   {"patterns":[{"template":"step <num> loss=<num>","count":1200,"new":false,
//                 "series":[20,20,...],"example":"step 1200 loss=0.43"}, ...],
//    "buckets":["2026-11-29T10:00:00.000Z", ...],"interval_ms":60000,
//    "from":t,"to":t,"events_read":1234,"complete":true,
//    "previous":{"from":t,"to":t,"events_read":987,"complete":true},
//    "other_events":0,"took_ms":12}
// Templates are most frequent first (ties: template text order); `series`
// is aligned with `buckets` and sums to `count`; `example` is the newest
// message read with that template (cut at 500 bytes). Events without a
// message have the template "".
//
// Sampling: at most `sample` events are read per range, spread over the
// buckets (each bucket gets an equal share, newest events first, and what a
// bucket leaves unused goes to the others), so a busy day is seen across
// the whole day rather than as its last minutes. When a bucket holds more
// matching events than were read from it, `complete` is false and that
// bucket's counts are estimates: each template's sampled count scaled by the
// bucket's exact total (a histogram count) over the events read from it,
// rounded. `events_read` says how many events the answer rests on.
//
// `new`: the template occurs in none of the events read from the previous
// range [from - (to - from), from). That range is read with the same bound,
// so when previous.complete is false a template that occurred there only
// among the unread events is reported new (it was rare there).
//
// Memory is bounded: at most 5 000 distinct templates are tracked per
// request; events whose template comes after the table is full are counted
// in `other_events` only.
//
// Errors: 400 illegal_argument, 400 query_parse_error, 503 query_timeout.
#pragma once

#include <boost/asio/awaitable.hpp>

#include "api/search_handler.h"

namespace dashcam::api {

boost::asio::awaitable<HttpResponse> HandlePatterns(HttpRequest req, ApiContext& ctx);

}  // namespace dashcam::api
