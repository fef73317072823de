#include "api/search_handler.h"

#include <limits>
#include <optional>

#include <fmt/format.h>
#include <boost/beast/http/field.hpp>

#include "api/event_format.h"
#include "api/highlighter.h"
#include "api/json_writer.h"
#include "api/query_params.h"
#include "api/query_parser.h"
#include "storage/async.h"
#include "storage/document_reader.h"

namespace dashcam::api {
namespace {

constexpr std::size_t kDefaultLimit = 100;
constexpr std::size_t kMaxLimit = 10'000;
constexpr std::size_t kDefaultCountLimit = 10'000;

struct SearchParams {
  std::string q;
  TimeMs from = kMinEventTime, to = kMaxEventTime;
  std::size_t limit = kDefaultLimit;
  std::optional<storage::EventKey> cursor;
  bool track_total = false;
  bool text = false;  // format=text
};

// Applies one of search's own parameters; a reason when it is bad.
std::optional<std::string> ApplyParam(std::string_view key, std::string_view value,
                                      SearchParams& p) {
  if (key == "limit") {
    auto n = ParseCount(value, 0, kMaxLimit);
    if (!n) return fmt::format("[limit] must be an integer from 0 to {}", kMaxLimit);
    p.limit = *n;
  } else if (key == "cursor") {
    if (!value.empty()) {
      p.cursor = storage::ParseEventKey(value);
      if (!p.cursor) return "[cursor] is not a cursor returned by this server";
    }
  } else if (key == "track_total_hits") {
    p.track_total = value == "true" || value == "1" || value.empty();
  } else if (key == "format") {
    if (value != "json" && value != "text") return "[format] must be json or text";
    p.text = value == "text";
  }
  return std::nullopt;
}

// The parameters, or the reason they are bad (for a 400 illegal_argument).
std::variant<SearchParams, std::string> ParseParams(std::string_view target, TimeMs now) {
  SearchParams p;
  auto common = ParseQueryParams(target, now, [&](std::string_view key, std::string_view value) {
    return ApplyParam(key, value, p);
  });
  if (auto* reason = std::get_if<std::string>(&common)) return std::move(*reason);
  QueryParams& q = std::get<QueryParams>(common);
  p.q = std::move(q.q);
  p.from = q.from.value_or(kMinEventTime);
  p.to = q.to.value_or(kMaxEventTime);
  return p;
}

std::string SearchBody(const storage::SearchPage& page, std::int64_t took_ms,
                       const Highlighter& highlighter) {
  storage::DocumentReader reader;
  storage::DocumentView view;
  JsonWriter w;
  w.BeginObject();
  w.Key("took_ms").Int(took_ms);
  w.Key("total").Uint(page.total);
  w.Key("total_relation").String(page.total_exact ? "eq" : "gte");
  // Only a backend that may skip data that does not answer sets it
  // (--allow-partial); the answer then lacks what it skipped.
  if (page.partial) w.Key("partial").Bool(true);
  w.Key("hits").BeginArray();
  for (const storage::StoredEvent& ev : page.hits) {
    w.BeginObject();
    w.Key("_id").String(ev.id);
    w.Key("_index").String(ev.index);
    w.Key("@timestamp").String(FormatRfc3339Ms(ev.ts_ms));
    w.Key("_source").Raw(ev.source);
    if (!highlighter.empty() && reader.ReadUnpadded(ev.source, view).ok() && view.message) {
      if (auto marked = highlighter.Highlight(*view.message)) {
        w.Key("highlight").BeginObject().Key("message").BeginArray().String(*marked);
        w.EndArray().EndObject();
      }
    }
    w.EndObject();
  }
  w.EndArray();
  w.Key("next_cursor");
  if (page.next)
    w.String(storage::FormatEventKey(*page.next));
  else
    w.Null();
  w.EndObject();
  return w.Release();
}

HttpResponse TextResponse(const HttpRequest& req, const storage::SearchPage& page) {
  std::string body;
  EventFormatter lines(EventFormat::kText, {});
  for (const storage::StoredEvent& ev : page.hits) lines.Append(ev, body);
  HttpResponse res{http::status::ok, req.version()};
  res.set(http::field::content_type, "text/plain; charset=utf-8");
  res.set("X-Dashcam-Total", fmt::format("{}{}", page.total, page.total_exact ? "" : "+"));
  if (page.next) res.set("X-Dashcam-Next-Cursor", storage::FormatEventKey(*page.next));
  if (page.partial) res.set("X-Dashcam-Partial", "true");
  res.body() = std::move(body);
  res.prepare_payload();
  return res;
}

}  // namespace

HttpResponse StorageErrorResponse(const HttpRequest& req, const Status& s) {
  if (s.code() == StatusCode::kDeadlineExceeded) {
    return MakeErrorResponse(req, http::status::service_unavailable, "query_timeout",
                             "the query ran past its time budget");
  }
  if (s.code() == StatusCode::kInvalidArgument) {
    return MakeErrorResponse(req, http::status::bad_request, "illegal_argument", s.message());
  }
  if (s.code() == StatusCode::kUnavailable) {  // e.g. a partition dropped by retention mid-query
    auto res =
        MakeErrorResponse(req, http::status::service_unavailable, "unavailable", s.message());
    res.set(http::field::retry_after, "1");
    return res;
  }
  if (s.code() == StatusCode::kNoSpace) {  // a big sort spilled to a full temp directory
    auto res = MakeErrorResponse(req, http::status::service_unavailable, "no_space", s.message());
    res.set(http::field::retry_after, "5");
    return res;
  }
  return MakeErrorResponse(req, http::status::internal_server_error, "storage_error", s.message());
}

HttpResponse MakeJsonResponse(const HttpRequest& req, http::status status, std::string body) {
  HttpResponse res{status, req.version()};
  res.set(http::field::content_type, "application/json");
  res.body() = std::move(body);
  res.prepare_payload();
  return res;
}

HttpResponse MakeErrorResponse(const HttpRequest& req, http::status status, std::string_view type,
                               std::string_view reason) {
  JsonWriter w;
  w.BeginObject().Key("error").BeginObject();
  w.Key("type").String(type).Key("reason").String(reason);
  w.EndObject().EndObject();
  return MakeJsonResponse(req, status, w.Release());
}

boost::asio::awaitable<HttpResponse> HandleSearch(HttpRequest req, ApiContext& ctx) {
  const auto start = storage::Clock::now();
  const TimeMs now = ctx.now();
  auto params = ParseParams(req.target(), now);
  if (auto* reason = std::get_if<std::string>(&params)) co_return BadParamResponse(req, *reason);
  const SearchParams& p = std::get<SearchParams>(params);
  auto parsed = ParseRequestQuery(p.q, now);
  if (auto* err = std::get_if<QueryError>(&parsed)) co_return QueryErrorResponse(req, *err);
  const query::Node& root = std::get<query::Node>(parsed);
  storage::SearchRequest sreq;
  sreq.query = &root;
  sreq.from = p.from;
  sreq.to = p.to;
  sreq.limit = p.limit;
  sreq.before = p.cursor;
  sreq.count_limit = p.track_total ? std::numeric_limits<std::size_t>::max() : kDefaultCountLimit;
  sreq.deadline = start + ctx.query_timeout;
  auto page = co_await storage::RunBlocking(ctx.workers, [&] { return ctx.store.Search(sreq); });
  if (!page.ok()) co_return StorageErrorResponse(req, page.status());
  if (p.text) co_return TextResponse(req, *page);
  const auto took =
      std::chrono::duration_cast<std::chrono::milliseconds>(storage::Clock::now() - start).count();
  co_return MakeJsonResponse(req, http::status::ok, SearchBody(*page, took, Highlighter(root)));
}

}  // namespace dashcam::api
