// The Elasticsearch search API subset (PROTOCOLS.md 4):
//   GET|POST /_search, /{index}/_search    hits, totals, aggregations
//   GET|POST /_count,  /{index}/_count     counts
// URL parameters: q, df, default_operator (OR by default, as in
// Elasticsearch), size (10), from, sort (@timestamp:desc or _score),
// _source / _source_includes / _source_excludes, track_total_hits,
// rest_total_hits_as_int. Body: query (es_query_dsl.h), size, from, sort,
// _source, search_after ([epoch_ms, "<id key>"], as returned in each hit's
// `sort`), track_total_hits, aggs/aggregations with `date_histogram` (on
// @timestamp; fixed_interval/calendar_interval up to 1d) and `terms` (field,
// size; counted over at most 100 000 matching events, newest first).
// Hits are always newest first; `_score` is null. Errors use Elasticsearch's
// error shape; anything unsupported is a 400 that names it.
#pragma once

#include <string>
#include <vector>

#include "api/search_handler.h"

namespace dashcam::api {

// `index` is the path's index expression ("" for /_search); `count` selects
// the _count answer.
boost::asio::awaitable<HttpResponse> HandleEsSearch(HttpRequest req, std::string index, bool count,
                                                    ApiContext& ctx);

}  // namespace dashcam::api
