// GET /api/v1/histogram?q=&from=&to=&interval=&by=&top=&value=
//
//   interval  auto (default: the widest round width giving at least 60
//             buckets, so ~60-120: 1ms ... 1s 2s 3s 5s 10s 15s 30s 1m 2m 3m 5m
//             ... 1h 2h 3h 6h 12h 1d 2d 3d 5d 7d 14d 30d 60d)
//             or <n><unit>, unit ms s m h d w (`30s`, `1m`, `1h`, `1d`).
//             At most 10 000 buckets.
//   by        split each bucket by this field's most frequent values over the
//             range (`level`: the event's level; `_index`; any field)
//   top       how many values get their own series with `by` (default 10, 1..100)
//   value     avg:<field> | max:<field> | min:<field> | sum:<field>: aggregate a
//             numeric field instead of only counting
// The range is [from, to); a missing end is the oldest event's time (from)
// or just after the newest event's (to); with no events at all, the last hour.
//
// Answer (200):
//   {"took_ms":4,"from":<ms>,"to":<ms>,"interval":"1m","interval_ms":60000,
//    "total":1234,
//    "buckets":[{"t":<bucket start ms>,"count":12}, ...]}
// Buckets cover the whole range, empty ones included (count 0), in time
// order; t is a multiple of interval_ms since the epoch, so the first bucket
// may start before `from`. With `by`, also "by":"<field>","keys":[..] (most
// frequent first) and "keys_sampled":bool (keys chosen from the newest
// 100 000 matching events because the field has very many values; counts
// are exact either way), and per bucket
//   "by":{"<key>":{"count":n},...},"other":{"count":n},"missing":{"count":n}
// (`other`: values not among the keys, `missing`: events without the field;
// an event with several values counts once under each). With `value`,
// "value":"avg:gpu_util" and every {count} above also has "value": the
// aggregate of the field's numeric values there, null when it has none.
//
// Errors: 400 illegal_argument (bad interval, too many buckets, unknown
// value op, ...), 400 query_parse_error, 503 query_timeout.
#pragma once

#include <boost/asio/awaitable.hpp>

#include "api/search_handler.h"

namespace dashcam::api {

boost::asio::awaitable<HttpResponse> HandleHistogram(HttpRequest req, ApiContext& ctx);

// The bucket width `auto` picks for a range of `span` ms. Exposed for tests.
TimeMs AutoInterval(TimeMs span);

// "30s", "1m", "1h", "1d", "250ms": the shortest exact spelling.
std::string FormatInterval(TimeMs interval);

// The range [from, to) a histogram covers for these from/to parameters (see
// above: a missing end comes from the stored events' extent), clamped to the
// times events may have. Exposed so that other endpoints' time series
// (/api/v1/patterns) line up with the histogram's buckets. Blocks (reads
// the extent): call it on the worker pool. Errors: DeadlineExceeded.
struct HistogramRange {
  TimeMs from = 0, to = 0;
};
Result<HistogramRange> ResolveHistogramRange(std::optional<TimeMs> from, std::optional<TimeMs> to,
                                             storage::EventStore& store, TimeMs now,
                                             storage::Clock::time_point deadline);

}  // namespace dashcam::api
