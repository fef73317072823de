#include "api/fields_handler.h"

#include <fmt/format.h>

#include "api/json_writer.h"
#include "api/query_params.h"
#include "storage/async.h"

namespace dashcam::api {
namespace {

constexpr std::size_t kMaxFieldsTop = 100;
constexpr std::size_t kMaxSample = 200'000;

std::optional<std::string> ReadParam(std::string_view key, std::string_view value,
                                     storage::FieldsSpec& spec) {
  if (key == "top") {
    auto n = ParseCount(value, 1, kMaxFieldsTop);
    if (!n) return fmt::format("[top] must be an integer from 1 to {}", kMaxFieldsTop);
    spec.top = *n;
  } else if (key == "sample") {
    auto n = ParseCount(value, 1, kMaxSample);
    if (!n) return fmt::format("[sample] must be an integer from 1 to {}", kMaxSample);
    spec.max_events = *n;
  }
  return std::nullopt;
}

std::string Body(const storage::FieldsSummary& s, std::int64_t took_ms) {
  JsonWriter w;
  w.BeginObject().Key("took_ms").Int(took_ms);
  w.Key("sampled").Bool(!s.complete).Key("sample_size").Uint(s.events_read);
  if (s.fields_truncated) w.Key("fields_truncated").Bool(true);
  w.Key("fields").BeginArray();
  for (const storage::FieldSummary& f : s.fields) {
    w.BeginObject().Key("field").String(f.name).Key("count").Uint(f.events);
    w.Key("ratio").Double(
        s.events_read ? static_cast<double>(f.events) / static_cast<double>(s.events_read) : 0.0);
    w.Key("types").BeginArray();
    if (f.has_string) w.String("string");
    if (f.has_number) w.String("number");
    if (f.has_bool) w.String("boolean");
    w.EndArray();
    w.Key("distinct").Uint(f.distinct).Key("distinct_exact").Bool(f.distinct_exact);
    w.Key("top").BeginArray();
    for (const auto& v : f.top)
      w.BeginObject().Key("value").String(v.text).Key("count").Uint(v.events).EndObject();
    w.EndArray().EndObject();
  }
  w.EndArray().EndObject();
  return w.Release();
}

}  // namespace

boost::asio::awaitable<HttpResponse> HandleFields(HttpRequest req, ApiContext& ctx) {
  const auto start = storage::Clock::now();
  storage::FieldsSpec spec;
  const TimeMs now = ctx.now();
  auto parsed_params = ParseQueryParams(
      req.target(), now, [&](auto key, auto value) { return ReadParam(key, value, spec); });
  if (auto* err = std::get_if<std::string>(&parsed_params)) co_return BadParamResponse(req, *err);
  const QueryParams& p = std::get<QueryParams>(parsed_params);
  auto parsed = ParseRequestQuery(p.q, now);
  if (auto* err = std::get_if<QueryError>(&parsed)) co_return QueryErrorResponse(req, *err);
  storage::SearchRequest sreq;
  sreq.query = &std::get<query::Node>(parsed);
  sreq.from = p.from.value_or(kMinEventTime);
  sreq.to = p.to.value_or(kMaxEventTime);
  sreq.deadline = start + ctx.query_timeout;
  auto summary = co_await storage::RunBlocking(
      ctx.workers, [&] { return ctx.store.SummarizeFields(sreq, spec); });
  if (!summary.ok()) co_return StorageErrorResponse(req, summary.status());
  const auto took =
      std::chrono::duration_cast<std::chrono::milliseconds>(storage::Clock::now() - start).count();
  co_return MakeJsonResponse(req, http::status::ok, Body(*summary, took));
}

}  // namespace dashcam::api
