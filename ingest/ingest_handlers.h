// HTTP handlers of the ingest endpoints:
//   POST|PUT /_bulk, /{index}/_bulk   Elasticsearch bulk API (see PROTOCOLS.md 1.2-1.3)
//   POST /api/v1/ingest               NDJSON, one event per line
//   GET  /api/v1/redaction/rules      the redaction rules in force
// Each handler decodes on the worker pool, queues the records and answers
// only after the writer has committed them: a 2xx means durable. Bodies may
// be gzip- or deflate-encoded.
//
// Disk full (storage/writer.h): while ingestion is paused, and for a batch
// of which the full disk let nothing be stored, the request is refused whole
// with 503, Retry-After: 5 and an Elasticsearch error body of type
// "disk_full_exception"; Filebeat then resends the batch. Items of a _bulk
// batch that was partly stored get 429 (see ItemStatusFor), which Filebeat
// and the JavaScript bulk helper both retry. Nothing is ever acknowledged
// that was not committed.
//
// Counted in Metrics: dashcam_ingest_events_total and _bytes_total by
// protocol, dashcam_ingest_rejected_total by reason (every item that was not
// stored, with its error type), dashcam_ingest_refused_requests_total by
// HTTP status. Rejected items are also logged with their reason.
//
// A handler is a function from request to response; it never touches the
// connection. Runs as a coroutine on the connection's strand.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

#include "ingest/bulk_decoder.h"
#include "ingest/document_parser.h"
#include "storage/event_store.h"
#include "storage/log.h"
#include "storage/metrics.h"

namespace dashcam::ingest {

namespace http = boost::beast::http;
using HttpRequest = http::request<http::string_body>;
using HttpResponse = http::response<http::string_body>;

struct IngestOptions {
  std::size_t max_body_bytes = 100u << 20;  // Default: 100 MiB, after decompression too
  BulkLimits bulk;
};

// What the ingest handlers need. Owned by the server; outlives every request.
struct IngestContext {
  storage::EventStore& store;
  boost::asio::any_io_executor workers;  // for decoding
  ParserPool& parsers;
  const Log& log;
  IngestOptions options;
  std::function<TimeMs()> now;  // wall clock, for events without @timestamp
  Metrics& metrics;
  const Redactor* redactor;  // null: redaction is off
};

boost::asio::awaitable<HttpResponse> HandleBulk(HttpRequest req, std::string default_index,
                                                IngestContext& ctx);
boost::asio::awaitable<HttpResponse> HandleNdjsonIngest(HttpRequest req, IngestContext& ctx);

// GET /api/v1/redaction/rules: the active rules (name, pattern, group,
// builtin) and the extra masked field names; never a redacted value.
HttpResponse HandleRedactionRules(const HttpRequest& req, const IngestContext& ctx);

}  // namespace dashcam::ingest
