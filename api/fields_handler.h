// GET /api/v1/fields?q=&from=&to=&top=&sample=
//
// The facets of the events matching the query: every field they have (dotted
// names, plus `message` and `_index`), how many of them have it, and its
// most frequent values.
//   top     values listed per field (default 10, 1..100)
//   sample  events read at most, newest first (default 10 000, 1..200 000)
//
// Answer (200):
//   {"took_ms":35,"sampled":false,"sample_size":1234,
//    "fields":[{"field":"host.name","count":1234,"ratio":1.0,
//               "types":["string"],"distinct":16,"distinct_exact":true,
//               "top":[{"value":"gpu-node-07","count":101}, ...]}, ...]}
// Fields are most common first. `sampled` is true when more events match
// than `sample` and only the newest `sample_size` were read; counts and
// ratios are then of that sample. Values are text (numbers in canonical
// form). `distinct_exact` is false when a field has so many distinct values
// that the memory budget stopped tracking new ones (its top values are then
// those among the tracked), and "fields_truncated":true appears when the
// events have more than 1000 distinct field names.
//
// Errors: 400 illegal_argument, 400 query_parse_error, 503 query_timeout.
#pragma once

#include <boost/asio/awaitable.hpp>

#include "api/search_handler.h"

namespace dashcam::api {

boost::asio::awaitable<HttpResponse> HandleFields(HttpRequest req, ApiContext& ctx);

}  // namespace dashcam::api
