// GET /api/v1/export?q=&from=&to=&format=ndjson|csv|text&fields=&order=desc|asc
//
// Streams every event matching q in [from, to) (HTTP/1.1 chunked), newest
// first or with order=asc oldest first, in the format asked
// (api/event_format.h): ndjson (application/x-ndjson, the default), csv
// (text/csv, with a header row) or text (text/plain). There is no row limit
// and memory stays constant: the events are read one page at a time (a key
// range scan resumed past the last key sent), on the worker pool, and the
// next page is read only once the previous one has been written to the
// client, so a slow client slows the export instead of filling memory.
// Events committed while an export runs may or may not be included; none is
// sent twice.
//
// Errors before the first byte are answers: 400 for bad parameters or a
// malformed query (with its position), 503 query_timeout when the first page
// runs past --query-timeout. Later (each page has that time budget), a
// failure ends the connection without the terminating chunk, so the client
// sees an incomplete transfer rather than a short export. A client that
// disconnects stops the export within a page.
#pragma once

#include <boost/asio/awaitable.hpp>

#include "api/body_stream.h"
#include "api/search_handler.h"

namespace dashcam::api {

boost::asio::awaitable<HttpAnswer> HandleExport(HttpRequest req, ApiContext& ctx);

}  // namespace dashcam::api
