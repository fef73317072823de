#include "api/search_handler.h"

#include <charconv>
#include <limits>
#include <optional>

#include <fmt/format.h>
#include <boost/beast/http/field.hpp>
#include <boost/url/parse.hpp>

#include "api/json_writer.h"
#include "api/query_parser.h"
#include "storage/async.h"

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
};

// A parameter problem, reported as 400 illegal_argument.
struct ParamError {
  std::string reason;
};

std::optional<ParamError> ParseParam(std::string_view key, std::string_view value, TimeMs now,
                                     SearchParams& p) {
  if (key == "q") {
    p.q = std::string(value);
  } else if (key == "from" || key == "to") {
    auto t = ParseTimeParam(value, now);
    if (!t) {
      return ParamError{
          fmt::format("[{}] must be RFC 3339, epoch milliseconds or now-<n><s|m|h|d|w>, got '{}'",
                      key, value.substr(0, 64))};
    }
    (key == "from" ? p.from : p.to) = *t;
  } else if (key == "limit") {
    std::size_t n = 0;
    auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
    if (ec != std::errc() || ptr != value.data() + value.size() || n > kMaxLimit) {
      return ParamError{fmt::format("[limit] must be an integer from 0 to {}", kMaxLimit)};
    }
    p.limit = n;
  } else if (key == "cursor") {
    if (!value.empty()) {
      p.cursor = storage::ParseEventKey(value);
      if (!p.cursor) return ParamError{"[cursor] is not a cursor returned by this server"};
    }
  } else if (key == "track_total_hits") {
    p.track_total = value == "true" || value == "1" || value.empty();
  }
  return std::nullopt;
}

std::variant<SearchParams, ParamError> ParseParams(std::string_view target, TimeMs now) {
  SearchParams p;
  auto url = boost::urls::parse_origin_form(target);
  if (!url) return ParamError{"malformed request target"};
  for (auto param : url->params(boost::urls::encoding_opts(true))) {
    if (auto err = ParseParam(param.key, param.value, now, p)) return *err;
  }
  if (p.from > p.to) return ParamError{"[from] is later than [to]"};
  return p;
}

std::string SearchBody(const storage::SearchPage& page, std::int64_t took_ms) {
  JsonWriter w;
  w.BeginObject();
  w.Key("took_ms").Int(took_ms);
  w.Key("total").Uint(page.total);
  w.Key("total_relation").String(page.total_exact ? "eq" : "gte");
  w.Key("hits").BeginArray();
  for (const storage::StoredEvent& ev : page.hits) {
    w.BeginObject();
    w.Key("_id").String(ev.id);
    w.Key("_index").String(ev.index);
    w.Key("@timestamp").String(FormatRfc3339Ms(ev.ts_ms));
    w.Key("_source").Raw(ev.source);
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

HttpResponse StorageError(const HttpRequest& req, const Status& s) {
  if (s.code() == StatusCode::kDeadlineExceeded) {
    return MakeErrorResponse(req, http::status::service_unavailable, "query_timeout",
                             "the query ran past its time budget");
  }
  if (s.code() == StatusCode::kInvalidArgument) {
    return MakeErrorResponse(req, http::status::bad_request, "illegal_argument", s.message());
  }
  return MakeErrorResponse(req, http::status::internal_server_error, "storage_error", s.message());
}

}  // namespace

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
  if (auto* err = std::get_if<ParamError>(&params)) {
    co_return MakeErrorResponse(req, http::status::bad_request, "illegal_argument", err->reason);
  }
  const SearchParams& p = std::get<SearchParams>(params);
  ParseLimits limits;
  limits.now = now;
  auto parsed = ParseQuery(p.q, limits);
  if (auto* err = std::get_if<QueryError>(&parsed)) {
    JsonWriter w;
    w.BeginObject().Key("error").BeginObject();
    w.Key("type").String("query_parse_error").Key("reason").String(err->reason);
    w.Key("position").Uint(err->position);
    w.EndObject().EndObject();
    co_return MakeJsonResponse(req, http::status::bad_request, w.Release());
  }
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
  if (!page.ok()) co_return StorageError(req, page.status());
  const auto took =
      std::chrono::duration_cast<std::chrono::milliseconds>(storage::Clock::now() - start).count();
  co_return MakeJsonResponse(req, http::status::ok, SearchBody(*page, took));
}

}  // namespace dashcam::api
