#include "api/context_handler.h"

#include <algorithm>

#include <fmt/format.h>

#include "api/json_writer.h"
#include "api/query_params.h"
#include "storage/async.h"
#include "storage/document_reader.h"

namespace dashcam::api {
namespace {

constexpr std::size_t kMaxSide = 1000;

struct ContextParams {
  std::string id;
  bool has_id = false;
  storage::NeighborsSpec spec;
};

std::optional<std::string> ReadParam(std::string_view key, std::string_view value,
                                     ContextParams& p) {
  if (key == "id") {
    p.id = std::string(value);
    p.has_id = true;
  } else if (key == "before" || key == "after") {
    auto n = ParseCount(value, 0, kMaxSide);
    if (!n) return fmt::format("[{}] must be an integer from 0 to {}", key, kMaxSide);
    (key == "before" ? p.spec.before : p.spec.after) = *n;
  }
  return std::nullopt;
}

// The anchor's values of `field` (its index for "_index"), in document order.
std::vector<std::string> ValuesOf(const std::string& field, const storage::DocumentView& doc,
                                  const storage::StoredEvent& ev) {
  std::vector<std::string> out;
  if (field == storage::kIndexField) {
    if (!ev.index.empty()) out.push_back(ev.index);
    return out;
  }
  for (const storage::Field& f : doc.fields) {
    if (f.name == field) out.push_back(f.text);
  }
  return out;
}

// The scope of `anchor` under `rules` (see the header).
std::vector<storage::ScopeField> ScopeOf(const std::vector<std::vector<std::string>>& rules,
                                         const storage::StoredEvent& anchor) {
  storage::DocumentReader reader;
  storage::DocumentView doc;
  if (!reader.ReadUnpadded(anchor.source, doc).ok()) doc = {};
  std::vector<storage::ScopeField> scope;
  auto named = [&](const std::string& name) {
    return std::any_of(scope.begin(), scope.end(), [&](const auto& s) { return s.name == name; });
  };
  for (const auto& rule : rules) {
    std::vector<storage::ScopeField> fields;
    for (const std::string& name : rule) {
      auto values = ValuesOf(name, doc, anchor);
      if (values.empty()) break;
      fields.push_back({name, std::move(values)});
    }
    if (fields.size() == rule.size()) {
      scope = std::move(fields);
      break;
    }
  }
  for (const auto& rule : rules) {
    for (const std::string& name : rule) {
      if (!named(name) && ValuesOf(name, doc, anchor).empty()) scope.push_back({name, {}});
    }
  }
  return scope;
}

struct ContextResult {
  storage::StoredEvent anchor;
  std::vector<storage::ScopeField> scope;
  storage::Neighbors neighbors;
};

void WriteEvent(JsonWriter& w, const storage::StoredEvent& ev, bool anchor) {
  w.BeginObject();
  w.Key("_id").String(ev.id).Key("_index").String(ev.index);
  w.Key("@timestamp").String(FormatRfc3339Ms(ev.ts_ms));
  w.Key("_source").Raw(ev.source);
  if (anchor) w.Key("anchor").Bool(true);
  w.EndObject();
}

std::string Body(const ContextResult& r, std::int64_t took_ms) {
  JsonWriter w;
  w.BeginObject().Key("took_ms").Int(took_ms).Key("anchor").String(r.anchor.id);
  w.Key("scope").BeginArray();
  for (const storage::ScopeField& s : r.scope) {
    w.BeginObject().Key("field").String(s.name).Key("value");
    if (s.values.empty()) {
      w.Null();
    } else if (s.values.size() == 1) {
      w.String(s.values[0]);
    } else {
      w.BeginArray();
      for (const std::string& v : s.values) w.String(v);
      w.EndArray();
    }
    w.EndObject();
  }
  w.EndArray().Key("events").BeginArray();
  for (const auto& ev : r.neighbors.before) WriteEvent(w, ev, false);
  WriteEvent(w, r.anchor, true);
  for (const auto& ev : r.neighbors.after) WriteEvent(w, ev, false);
  w.EndArray();
  w.Key("has_more_before").Bool(r.neighbors.more_before);
  w.Key("has_more_after").Bool(r.neighbors.more_after);
  w.EndObject();
  return w.Release();
}

}  // namespace

std::variant<std::vector<std::vector<std::string>>, std::string> ParseContextScopes(
    std::string_view text) {
  std::vector<std::vector<std::string>> rules;
  if (text.empty()) return rules;  // no scoping: neighbours in time
  auto valid_char = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-' || c == '@';
  };
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string_view rule = text.substr(start, comma - start);
    std::vector<std::string> fields;
    std::size_t f = 0;
    while (f <= rule.size()) {
      const std::size_t plus = std::min(rule.find('+', f), rule.size());
      const std::string_view name = rule.substr(f, plus - f);
      if (name.empty() || !std::all_of(name.begin(), name.end(), valid_char)) {
        return fmt::format(
            "--context-scope: '{}' is not a field name (rules are separated by ',', the fields "
            "of a rule joined by '+')",
            name);
      }
      fields.emplace_back(name);
      f = plus + 1;
    }
    rules.push_back(std::move(fields));
    start = comma + 1;
  }
  return rules;
}

boost::asio::awaitable<HttpResponse> HandleContext(HttpRequest req, ApiContext& ctx) {
  const auto start = storage::Clock::now();
  ContextParams cp;
  const TimeMs now = ctx.now();
  auto parsed_params = ParseQueryParams(
      req.target(), now, [&](auto key, auto value) { return ReadParam(key, value, cp); });
  if (auto* err = std::get_if<std::string>(&parsed_params)) co_return BadParamResponse(req, *err);
  if (!cp.has_id || cp.id.empty()) co_return BadParamResponse(req, "[id] is required");
  const QueryParams& p = std::get<QueryParams>(parsed_params);
  auto parsed = ParseRequestQuery(p.q, now);
  if (auto* err = std::get_if<QueryError>(&parsed)) co_return QueryErrorResponse(req, *err);
  storage::SearchRequest sreq;
  sreq.query = &std::get<query::Node>(parsed);
  sreq.from = p.from.value_or(kMinEventTime);
  sreq.to = p.to.value_or(kMaxEventTime);
  sreq.deadline = start + ctx.query_timeout;

  auto result = co_await storage::RunBlocking(ctx.workers, [&]() -> Result<ContextResult> {
    auto anchor = ctx.store.Get(cp.id);
    if (!anchor.ok()) return anchor.status();
    if (!*anchor) return Status::NotFound(fmt::format("no event with id [{}]", cp.id));
    ContextResult r;
    r.anchor = std::move(**anchor);
    r.scope = ScopeOf(ctx.context_scopes, r.anchor);
    cp.spec.anchor = r.anchor.key;
    cp.spec.scope = r.scope;
    auto neighbors = ctx.store.FindNeighbors(sreq, cp.spec);
    if (!neighbors.ok()) return neighbors.status();
    r.neighbors = std::move(*neighbors);
    return r;
  });
  if (!result.ok()) {
    if (result.status().code() == StatusCode::kNotFound) {
      co_return MakeErrorResponse(req, http::status::not_found, "not_found",
                                  fmt::format("no event with id [{}]", cp.id.substr(0, 200)));
    }
    co_return StorageErrorResponse(req, result.status());
  }
  const auto took =
      std::chrono::duration_cast<std::chrono::milliseconds>(storage::Clock::now() - start).count();
  co_return MakeJsonResponse(req, http::status::ok, Body(*result, took));
}

}  // namespace dashcam::api
