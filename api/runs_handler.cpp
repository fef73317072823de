#include "api/runs_handler.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <optional>

#include <fmt/format.h>

#include "api/insight_explanations.h"
#include "api/json_writer.h"
#include "api/query_params.h"
#include "api/training_options.h"
#include "storage/async.h"
#include "storage/document_reader.h"
#include "storage/exact_value.h"

namespace dashcam::api {
namespace {

constexpr const char* kRunField = "run.id";
constexpr const char* kRunEndField = "run.end";  // "finished" on a run's closing lines
constexpr std::size_t kRunsMaxLimit = 1000;
constexpr std::size_t kSummaryEvents = 2000;
constexpr std::size_t kListed = 50;
constexpr std::size_t kMaxPoints = 2000;
constexpr std::size_t kMaxMetricEvents = 200'000;
constexpr std::array<std::string_view, 9> kMetricNames = {
    "loss",         "grad_norm",     "lr",        "step",   "epoch",
    "tokens_per_s", "samples_per_s", "step_time", "gpu_mem"};

storage::EventKey KeyAt(TimeMs t) {
  return static_cast<storage::EventKey>(t) << 20;
}

query::Node And(std::vector<query::Node> children) {
  query::Node n{query::NodeKind::kAnd, 0, std::move(children), {}, {}};
  return n;
}

query::Node Term(std::string field, std::string text) {
  query::Term t;
  t.field = std::move(field);
  t.text = std::move(text);
  return query::Node::MakeTerm(std::move(t), 0);
}

struct RunIncident {
  std::string id, kind, title;
  TimeMs first_seen = 0;
};

struct RunRow {
  storage::GroupSummary group;
  std::vector<std::string> hosts, users;
  std::vector<std::int64_t> ranks;
  std::optional<RunIncident> incident;
};

std::vector<std::string> TopTexts(const storage::FieldsSummary& s,
                                  std::initializer_list<std::string_view> names) {
  for (std::string_view name : names) {
    for (const auto& f : s.fields) {
      if (f.name != name) continue;
      std::vector<std::string> out;
      for (const auto& v : f.top) out.push_back(v.text);
      std::sort(out.begin(), out.end());
      return out;
    }
  }
  return {};
}

// The run's oldest failure (an insight of severity critical or error).
Result<std::optional<RunIncident>> FirstFailure(storage::EventStore& store,
                                                const storage::GroupSummary& g,
                                                storage::Clock::time_point deadline) {
  query::Node severe{query::NodeKind::kOr, 0, {}, {}, {}};
  severe.children.push_back(Term("insight.severity", "critical"));
  severe.children.push_back(Term("insight.severity", "error"));
  std::vector<query::Node> parts;
  parts.push_back(storage::ExactValueQuery(kRunField, g.key));
  parts.push_back(std::move(severe));
  const query::Node q = And(std::move(parts));
  storage::ScanRequest scan;
  scan.query = &q;
  scan.lo = KeyAt(g.first);
  scan.hi = KeyAt(g.last + 1) - 1;
  scan.ascending = true;
  scan.limit = 1;
  scan.deadline = deadline;
  auto page = store.Scan(scan);
  if (!page.ok()) return page.status();
  if (page->events.empty()) return std::optional<RunIncident>();
  const storage::StoredEvent& ev = page->events.front();
  storage::DocumentReader reader;
  storage::DocumentView view;
  if (!reader.ReadUnpadded(ev.source, view).ok()) return std::optional<RunIncident>();
  auto e = ReadInsightEvent(view);
  if (!e) return std::optional<RunIncident>();
  return std::optional<RunIncident>(
      RunIncident{ev.id, e->kind, Explain(*e, ev.ts_ms).title, ev.ts_ms});
}

Result<std::optional<RunRow>> DescribeRun(storage::EventStore& store, storage::GroupSummary g,
                                          const query::Node* also,
                                          storage::Clock::time_point deadline) {
  const query::Node exact = storage::ExactValueQuery(kRunField, g.key);
  storage::SearchRequest sreq;
  sreq.query = &exact;
  sreq.from = g.first;
  sreq.to = g.last + 1;
  sreq.deadline = deadline;
  if (also) {  // only runs with an event matching q
    std::vector<query::Node> parts{exact, *also};
    const query::Node both = And(std::move(parts));
    storage::SearchRequest r = sreq;
    r.query = &both;
    r.limit = 1;
    r.count_limit = 0;
    auto hit = store.Search(r);
    if (!hit.ok()) return hit.status();
    if (hit->hits.empty()) return std::optional<RunRow>();
  }
  storage::FieldsSpec spec;
  spec.top = kListed;
  spec.max_events = kSummaryEvents;
  auto summary = store.SummarizeFields(sreq, spec);
  if (!summary.ok()) return summary.status();
  RunRow row;
  row.hosts = TopTexts(*summary, {"host.name", "host"});
  row.users = TopTexts(*summary, {"user", "user.name"});
  for (const std::string& r : TopTexts(*summary, {"run.rank"})) {
    std::int64_t n = 0;
    const auto [end, ec] = std::from_chars(r.data(), r.data() + r.size(), n);
    if (ec == std::errc() && end == r.data() + r.size()) row.ranks.push_back(n);
  }
  std::sort(row.ranks.begin(), row.ranks.end());
  auto failure = FirstFailure(store, g, deadline);
  if (!failure.ok()) return failure.status();
  row.incident = std::move(*failure);
  row.group = std::move(g);
  return std::optional<RunRow>(std::move(row));
}

std::string_view Status(const RunRow& r, TimeMs now, TimeMs stall_after) {
  if (r.incident) return "failed";
  if (r.group.ended) return "finished";
  if (now - r.group.last > stall_after) return "stalled";
  return "running";
}

void WriteRun(JsonWriter& w, const RunRow& r, TimeMs now, const TrainingOptions& opts) {
  w.BeginObject().Key("id").String(r.group.key);
  w.Key("first_seen").String(FormatRfc3339Ms(r.group.first));
  w.Key("last_seen").String(FormatRfc3339Ms(r.group.last));
  w.Key("events").Uint(r.group.events);
  w.Key("hosts").BeginArray();
  for (const auto& h : r.hosts) w.String(h);
  w.EndArray().Key("users").BeginArray();
  for (const auto& u : r.users) w.String(u);
  w.EndArray().Key("ranks").BeginArray();
  for (auto n : r.ranks) w.Int(n);
  w.EndArray();
  w.Key("status").String(Status(r, now, opts.stall_after_ms));
  w.Key("incident");
  if (r.incident) {
    w.BeginObject().Key("id").String(r.incident->id).Key("kind").String(r.incident->kind);
    w.Key("title").String(r.incident->title);
    w.Key("first_seen").String(FormatRfc3339Ms(r.incident->first_seen)).EndObject();
  } else {
    w.Null();
  }
  const std::string link = RunLink(opts, r.group.key);
  w.Key("link");
  if (link.empty()) {
    w.Null();
  } else {
    w.String(link);
  }
  w.EndObject();
}

struct Point {
  TimeMs t = 0;
  std::optional<double> step;
  double value = 0;
};

struct Series {
  std::vector<Point> points;
  bool sampled = false;
  bool run_exists = true;
};

Result<Series> ReadSeries(storage::EventStore& store, const std::string& run,
                          const std::string& field, TimeMs from, TimeMs to,
                          storage::Clock::time_point deadline) {
  Series out;
  const query::Node exact = storage::ExactValueQuery(kRunField, run);
  {
    storage::SearchRequest any;
    any.query = &exact;
    any.limit = 1;
    any.count_limit = 0;
    any.deadline = deadline;
    auto hit = store.Search(any);
    if (!hit.ok()) return hit.status();
    if (hit->hits.empty()) {
      out.run_exists = false;
      return out;
    }
  }
  // The run's events, not `AND _exists_:<field>`: that row check would parse
  // every stored document once more than the loop below, which skips the
  // events without the field anyway.
  storage::DocumentReader reader;
  reader.KeepOnlyFields(std::vector<std::string>{field, "train.step"});  // all the loop reads
  storage::ScanRequest scan;
  scan.query = &exact;
  scan.lo = KeyAt(from);
  scan.hi = KeyAt(to) - 1;
  scan.ascending = true;
  scan.max_bytes = 8u << 20;
  scan.deadline = deadline;
  std::size_t read = 0;
  while (scan.lo <= scan.hi) {
    scan.limit = std::min<std::size_t>(1000, kMaxMetricEvents - read);
    if (scan.limit == 0) {
      out.sampled = true;
      break;
    }
    auto page = store.Scan(scan);
    if (!page.ok()) return page.status();
    for (const storage::StoredEvent& ev : page->events) {
      ++read;
      storage::DocumentView view;
      if (!reader.ReadUnpadded(ev.source, view).ok()) continue;
      Point p{ev.ts_ms, std::nullopt, 0};
      bool has_value = false;
      for (const auto& f : view.fields) {
        if (f.type != storage::Field::Type::kNumber) continue;
        if (f.name == field && !has_value) {
          p.value = f.number;
          has_value = true;
        } else if (f.name == "train.step" && !p.step) {
          p.step = f.number;
        }
      }
      if (has_value) out.points.push_back(p);
    }
    if (!page->more || page->events.empty()) break;
    scan.lo = page->events.back().key + 1;
  }
  if (out.points.size() > kMaxPoints) {
    // Evenly spaced, keeping the first and the last.
    std::vector<Point> thinned;
    const std::size_t n = out.points.size();
    for (std::size_t i = 0; i < kMaxPoints; ++i) {
      thinned.push_back(out.points[i * (n - 1) / (kMaxPoints - 1)]);
    }
    out.points = std::move(thinned);
    out.sampled = true;
  }
  return out;
}

}  // namespace

boost::asio::awaitable<HttpResponse> HandleRuns(HttpRequest req, ApiContext& ctx) {
  const auto start = storage::Clock::now();
  std::size_t limit = 100;
  const TimeMs now = ctx.now();
  auto parsed_params = ParseQueryParams(req.target(), now, LimitParam(&limit, kRunsMaxLimit));
  if (auto* err = std::get_if<std::string>(&parsed_params)) co_return BadParamResponse(req, *err);
  const QueryParams& p = std::get<QueryParams>(parsed_params);
  auto parsed = ParseRequestQuery(p.q, now);
  if (auto* err = std::get_if<QueryError>(&parsed)) co_return QueryErrorResponse(req, *err);
  const query::Node& q = std::get<query::Node>(parsed);
  const query::Node* also = q.kind == query::NodeKind::kMatchAll ? nullptr : &q;
  const auto deadline = start + ctx.query_timeout;
  struct Answer {
    std::vector<RunRow> rows;
    bool complete = true;
  };
  auto answer = co_await storage::RunBlocking(ctx.workers, [&]() -> Result<Answer> {
    storage::GroupsRequest g;
    g.from = p.from.value_or(kMinEventTime);
    g.to = p.to.value_or(kMaxEventTime);
    // With q, runs are dropped after the rollup: ask for more of them.
    g.limit = also ? kRunsMaxLimit : limit;
    g.group_field = kRunField;
    const query::Node end = storage::ExactValueQuery(kRunEndField, "finished");
    g.end_query = &end;
    g.deadline = deadline;
    auto groups = ctx.store.Groups(g);
    if (!groups.ok()) return groups.status();
    Answer a;
    a.complete = groups->complete;
    for (storage::GroupSummary& group : groups->groups) {
      if (a.rows.size() >= limit) {
        a.complete = false;
        break;
      }
      auto row = DescribeRun(ctx.store, std::move(group), also, deadline);
      if (!row.ok()) return row.status();
      if (*row) a.rows.push_back(std::move(**row));
    }
    return a;
  });
  if (!answer.ok()) co_return StorageErrorResponse(req, answer.status());
  JsonWriter w;
  w.BeginObject().Key("runs").BeginArray();
  for (const RunRow& r : answer->rows) WriteRun(w, r, now, ctx.training);
  w.EndArray().Key("stall_after_s").Int(ctx.training.stall_after_ms / 1000);
  w.Key("complete").Bool(answer->complete).EndObject();
  co_return MakeJsonResponse(req, http::status::ok, w.Release());
}

boost::asio::awaitable<HttpResponse> HandleRunMetrics(HttpRequest req, std::string run_id,
                                                      ApiContext& ctx) {
  const auto start = storage::Clock::now();
  const TimeMs now = ctx.now();
  std::string name;
  auto parsed_params = ParseQueryParams(req.target(), now, [&](auto key, auto value) {
    if (key == "name") name = std::string(value);
    return std::optional<std::string>();
  });
  if (auto* err = std::get_if<std::string>(&parsed_params)) co_return BadParamResponse(req, *err);
  if (std::find(kMetricNames.begin(), kMetricNames.end(), name) == kMetricNames.end()) {
    std::string known;
    for (auto n : kMetricNames) known += (known.empty() ? "" : ", ") + std::string(n);
    co_return BadParamResponse(
        req, fmt::format("[name] must be one of {} (got \"{}\")", known, name.substr(0, 64)));
  }
  const QueryParams& p = std::get<QueryParams>(parsed_params);
  const std::string field = "train." + name;
  auto series = co_await storage::RunBlocking(ctx.workers, [&] {
    return ReadSeries(ctx.store, run_id, field, p.from.value_or(kMinEventTime),
                      p.to.value_or(kMaxEventTime), start + ctx.query_timeout);
  });
  if (!series.ok()) co_return StorageErrorResponse(req, series.status());
  if (!series->run_exists) {
    co_return MakeErrorResponse(req, http::status::not_found, "run_not_found",
                                fmt::format("no event has run.id \"{}\"", run_id.substr(0, 200)));
  }
  JsonWriter w;
  w.BeginObject().Key("run").String(run_id).Key("name").String(name).Key("field").String(field);
  w.Key("points").BeginArray();
  for (const Point& pt : series->points) {
    w.BeginObject().Key("t").String(FormatRfc3339Ms(pt.t)).Key("step");
    if (pt.step) {
      w.Double(*pt.step);
    } else {
      w.Null();
    }
    w.Key("value").Double(pt.value).EndObject();
  }
  w.EndArray().Key("sampled").Bool(series->sampled).EndObject();
  co_return MakeJsonResponse(req, http::status::ok, w.Release());
}

}  // namespace dashcam::api
