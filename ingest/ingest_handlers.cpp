#include "ingest/ingest_handlers.h"

#include <algorithm>
#include <chrono>

#include <fmt/format.h>
#include <boost/beast/http/field.hpp>
#include <boost/json.hpp>

#include "ingest/gzip.h"
#include "ingest/ingest_metrics.h"
#include "ingest/ndjson_decoder.h"
#include "storage/async.h"

namespace dashcam::ingest {
namespace {

namespace json = boost::json;
using storage::RecordOutcome;

// Records per part of a _bulk body queued as it is decoded (HandleBulk):
// the writer waits for the first part only, ~2.5 ms of decoding at this size.
constexpr std::size_t kBulkPartRecords = 256;

int HttpStatusFor(const Status& s) {
  switch (s.code()) {
    case StatusCode::kOk:
      return 200;
    case StatusCode::kInvalidArgument:
      return 400;
    case StatusCode::kTooLarge:
      return 413;
    case StatusCode::kOverloaded:
      return 429;
    case StatusCode::kUnavailable:
    case StatusCode::kDeadlineExceeded:
    case StatusCode::kNoSpace:
      return 503;
    default:
      return 500;
  }
}

// A bulk item that was not stored. A full disk gives 429, not the request's
// 503: Filebeat retries items of 429 and >= 500 forever, but the
// Elasticsearch JavaScript bulk helper retries only 429 and drops the rest
// (PROTOCOLS.md 1.3, 3); Elasticsearch itself answers 429 for writes blocked
// at its flood-stage disk watermark.
int ItemStatusFor(const Status& s) {
  return s.code() == StatusCode::kNoSpace ? 429 : HttpStatusFor(s);
}

std::string_view ErrorTypeFor(const Status& s) {
  switch (s.code()) {
    case StatusCode::kInvalidArgument:
      return "parse_exception";
    case StatusCode::kTooLarge:
      return "content_too_long_exception";
    case StatusCode::kOverloaded:
      return "es_rejected_execution_exception";
    case StatusCode::kUnavailable:
      return "unavailable_shards_exception";
    case StatusCode::kNoSpace:
      return "disk_full_exception";
    default:
      return "exception";
  }
}

HttpResponse JsonResponse(const HttpRequest& req, int status, std::string body) {
  HttpResponse res{static_cast<http::status>(status), req.version()};
  res.set(http::field::content_type, "application/json");
  if (status == 429) res.set(http::field::retry_after, "1");
  // A full disk pauses ingestion for at least a probe interval (storage/writer.h).
  if (status == 503) res.set(http::field::retry_after, "5");
  res.body() = std::move(body);
  res.prepare_payload();
  return res;
}

// Elasticsearch's error shape.
HttpResponse ErrorResponse(const HttpRequest& req, const Status& s) {
  const int status = HttpStatusFor(s);
  json::object err{{"type", ErrorTypeFor(s)}, {"reason", s.message()}};
  json::object body{
      {"error",
       {{"root_cause", json::array{err}}, {"type", err["type"]}, {"reason", err["reason"]}}},
      {"status", status}};
  return JsonResponse(req, status, json::serialize(body));
}

// The body, inflated when encoded, with simdjson padding after `size` bytes.
struct PaddedBody {
  std::string bytes;
  std::size_t size = 0;
};

Result<PaddedBody> ReadBody(HttpRequest& req, std::size_t max_bytes) {
  const auto encoding = req[http::field::content_encoding];
  PaddedBody body;
  if (encoding.empty() || encoding == "identity") {
    body.bytes = std::move(req.body());
  } else if (encoding == "gzip" || encoding == "x-gzip" || encoding == "deflate") {
    auto inflated = Inflate(req.body(), max_bytes);
    if (!inflated.ok()) return inflated.status();
    body.bytes = std::move(*inflated);
  } else {
    return Status::InvalidArgument(fmt::format("unsupported Content-Encoding '{}'", encoding));
  }
  body.size = body.bytes.size();
  body.bytes.append(simdjson::SIMDJSON_PADDING, ' ');
  return body;
}

std::int64_t ElapsedMs(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                               start)
      .count();
}

// Sets each stored item's status from the writer's outcome.
void ApplyOutcomes(std::vector<BulkItem>& items, const storage::AppendResult& r) {
  for (BulkItem& item : items) {
    if (item.status != 0 || item.record == static_cast<std::size_t>(-1)) continue;
    const RecordOutcome o = r.outcomes[item.record];
    if (o == RecordOutcome::kCreated) item.status = 201;
    if (o == RecordOutcome::kUpdated) item.status = 200;
    if (o == RecordOutcome::kFailed) {
      item.status = ItemStatusFor(r.status);
      item.error_type = std::string(ErrorTypeFor(r.status));
      item.error_reason = r.status.message();
    }
    if (o == RecordOutcome::kDuplicate) {
      item.status = 409;
      item.error_type = "version_conflict_engine_exception";
      item.error_reason = fmt::format("[{}]: version conflict, document already exists", item.id);
    }
    if (o != RecordOutcome::kFailed && o != RecordOutcome::kDuplicate) item.id = r.ids[item.record];
  }
}

// The batch was taken, but the disk filled up: answered like a refusal
// (503 and Retry-After) since not one event was stored.
bool NothingStoredForLackOfSpace(const storage::AppendResult& r) {
  return r.status.code() == StatusCode::kNoSpace &&
         std::all_of(r.outcomes.begin(), r.outcomes.end(),
                     [](RecordOutcome o) { return o == RecordOutcome::kFailed; });
}

std::string BulkResponseBody(const std::vector<BulkItem>& items, std::int64_t took) {
  json::array out;
  out.reserve(items.size());
  bool errors = false;
  for (const BulkItem& item : items) {
    json::object v{{"_index", item.index}};
    if (!item.id.empty()) v["_id"] = item.id;
    v["status"] = item.status;
    if (item.status == 201 || item.status == 200) {
      v["_version"] = 1;
      v["result"] = item.status == 201 ? "created" : "updated";
    } else {
      errors = true;
      v["error"] = {{"type", item.error_type}, {"reason", item.error_reason}};
    }
    out.push_back(json::object{{item.op, std::move(v)}});
  }
  return json::serialize(
      json::object{{"took", took}, {"errors", errors}, {"items", std::move(out)}});
}

HttpResponse Refuse(const HttpRequest& req, const Status& s, Metrics& m) {
  HttpResponse res = ErrorResponse(req, s);
  m.GetCounter("dashcam_ingest_refused_requests_total", "Ingest requests refused whole, by status.",
               fmt::format("status=\"{}\"", res.result_int()))
      .Add();
  return res;
}

// Logs the decode rejections (400s: Filebeat drops those, so the reason must
// be visible here) and counts every item that was not stored.
void ReportItems(const Log& log, Metrics& m, const std::vector<BulkItem>& items) {
  for (const BulkItem& item : items) {
    if (item.status == 400) {
      log.Warn("bulk_item_rejected", {{"index", item.index}, {"reason", item.error_reason}});
    }
    if (item.status >= 300) CountRejected(m, item.error_type);
  }
}

std::uint64_t Stored(const std::vector<BulkItem>& items) {
  std::uint64_t n = 0;
  for (const BulkItem& item : items) n += item.status == 200 || item.status == 201 ? 1 : 0;
  return n;
}

}  // namespace

boost::asio::awaitable<HttpResponse> HandleBulk(HttpRequest req, std::string default_index,
                                                IngestContext& ctx) {
  const auto start = std::chrono::steady_clock::now();
  std::size_t body_bytes = 0, sent = 0;
  // A large body goes to the store in parts as it is decoded, when the
  // store takes parts: the writer starts on the first while the rest are
  // decoded (writer.h).
  const std::uint64_t stream = ctx.store.NewAppendStream();
  storage::PartedAppend parted(ctx.store, stream);
  const BulkParts parts{kBulkPartRecords, [&](std::vector<storage::Record> records) {
                          sent += records.size();
                          parted.Send(std::move(records), /*more=*/true);
                        }};
  auto decoded = co_await storage::RunBlocking(ctx.workers, [&]() -> Result<DecodedBulk> {
    auto body = ReadBody(req, ctx.options.max_body_bytes);
    if (!body.ok()) return body.status();
    body_bytes = body->size;
    auto parser = ctx.parsers.Acquire();
    return DecodeBulk(body->bytes, body->size, default_index, ctx.now(), ctx.options.bulk, *parser,
                      stream != 0 ? &parts : nullptr);
  });
  if (!decoded.ok()) co_return Refuse(req, decoded.status(), ctx.metrics);  // no part was sent
  if (parted.parts() > 0 || !decoded->records.empty()) {
    sent += decoded->records.size();
    storage::AppendResult r;
    if (parted.parts() == 0) {
      r = co_await storage::AsyncAppend(ctx.store, std::move(decoded->records));
    } else {
      parted.Send(std::move(decoded->records), /*more=*/false);
      r = co_await parted.Wait();
    }
    if (r.outcomes.empty() && r.status.code() == StatusCode::kOverloaded) {
      // A full queue refuses every item with 429 inside a 200, as
      // Elasticsearch's write pool does: the JavaScript bulk helper resends
      // 429 items but gives up on a whole-request 429 (PROTOCOLS.md 3), and
      // Filebeat backs off and resends either way.
      r.outcomes.assign(sent, RecordOutcome::kFailed);
    }
    if (r.outcomes.empty()) co_return Refuse(req, r.status, ctx.metrics);  // refused whole: retry
    if (NothingStoredForLackOfSpace(r)) co_return Refuse(req, r.status, ctx.metrics);
    ApplyOutcomes(decoded->items, r);
  }
  ReportItems(ctx.log, ctx.metrics, decoded->items);
  CountIngested(ctx.metrics, "bulk", Stored(decoded->items), body_bytes);
  co_return JsonResponse(req, 200, BulkResponseBody(decoded->items, ElapsedMs(start)));
}

boost::asio::awaitable<HttpResponse> HandleNdjsonIngest(HttpRequest req, IngestContext& ctx) {
  std::size_t body_bytes = 0;
  auto decoded = co_await storage::RunBlocking(ctx.workers, [&]() -> Result<DecodedNdjson> {
    auto body = ReadBody(req, ctx.options.max_body_bytes);
    if (!body.ok()) return body.status();
    body_bytes = body->size;
    auto parser = ctx.parsers.Acquire();
    return DecodeNdjson(body->bytes, body->size, ctx.now(), ctx.options.bulk.max_event_bytes,
                        *parser);
  });
  if (!decoded.ok()) co_return Refuse(req, decoded.status(), ctx.metrics);
  std::size_t accepted = 0;
  json::array errors;
  for (const LineError& e : decoded->errors) {
    errors.push_back(json::object{{"line", e.line}, {"reason", e.reason}});
  }
  if (!decoded->records.empty()) {
    storage::AppendResult r = co_await storage::AsyncAppend(ctx.store, std::move(decoded->records));
    if (r.outcomes.empty()) co_return Refuse(req, r.status, ctx.metrics);
    for (RecordOutcome o : r.outcomes) accepted += o != RecordOutcome::kFailed ? 1 : 0;
    if (accepted < r.outcomes.size()) co_return Refuse(req, r.status, ctx.metrics);
  }
  const std::size_t rejected = decoded->errors.size();
  if (rejected > 0) CountRejected(ctx.metrics, "ndjson_line_error", rejected);
  CountIngested(ctx.metrics, "ndjson", accepted, body_bytes);
  co_return JsonResponse(
      req, 200,
      json::serialize(json::object{
          {"accepted", accepted}, {"rejected", rejected}, {"errors", std::move(errors)}}));
}

HttpResponse HandleRedactionRules(const HttpRequest& req, const IngestContext& ctx) {
  json::object body;
  body["enabled"] = ctx.redactor != nullptr;
  json::array rules;
  json::array fields;
  if (ctx.redactor) {
    for (const auto& r : ctx.redactor->Describe()) {
      rules.push_back(json::object{
          {"name", r.name}, {"pattern", r.pattern}, {"group", r.group}, {"builtin", r.builtin}});
    }
    for (const auto& f : ctx.redactor->field_names()) fields.push_back(json::string(f));
  }
  body["rules"] = std::move(rules);
  body["fields"] = std::move(fields);
  return JsonResponse(req, 200, json::serialize(body));
}

}  // namespace dashcam::ingest
