#include "api/insights_handler.h"

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>

#include <fmt/format.h>

#include "api/insight_explanations.h"
#include "api/json_writer.h"
#include "api/query_params.h"
#include "api/training_options.h"
#include "storage/async.h"
#include "storage/document_reader.h"

namespace dashcam::api {
namespace {

constexpr std::size_t kInsightsMaxLimit = 1000;
constexpr std::size_t kMaxEventsRead = 100'000;
constexpr std::size_t kMaxIncidents = 10'000;  // tracked while reading
constexpr std::size_t kMaxListed = 1000;       // values per hosts/users/ranks/gpus
constexpr std::size_t kInsightsPageEvents = 1000;
constexpr std::size_t kInsightsPageBytes = 8u << 20;
// An incident keeps its first event's message for the answer; a client can
// make messages megabytes long, and up to kMaxIncidents are held at once.
constexpr std::size_t kMaxSubjectMessageBytes = 4096;
constexpr std::size_t kMaxSubjectFacts = 32;
constexpr std::size_t kMaxFactBytes = 1024;

// `text` cut to at most `max` bytes on a UTF-8 character boundary.
void CutUtf8(std::string& text, std::size_t max) {
  if (text.size() <= max) return;
  std::size_t n = max;
  while (n > 0 && (static_cast<unsigned char>(text[n]) & 0xC0) == 0x80) --n;
  text.resize(n);
  text += "…";
}

// A set that stops growing at kMaxListed values.
template <typename T>
void AddCapped(std::set<T>& set, const T& v) {
  if (set.size() < kMaxListed || set.count(v)) set.insert(v);
}

struct Incident {
  std::string kind, severity, run_id;
  std::uint64_t count = 0;
  TimeMs first_seen = 0, last_seen = 0;
  std::set<std::string> hosts, users;
  std::set<std::int64_t> ranks, gpus;
  // The oldest event read so far: events are read newest first.
  storage::StoredEvent first;
  InsightEvent subject;
};

struct Folded {
  std::vector<Incident> incidents;
  std::uint64_t events_read = 0;
  bool complete = true;
};

// Folds events read newest first: an event joins the open incident of its
// key when it is within `gap` of that incident's oldest event so far.
class IncidentFolder {
 public:
  explicit IncidentFolder(TimeMs gap) : gap_(gap) {}

  // False when no more incidents can be tracked.
  bool Add(const storage::StoredEvent& ev, InsightEvent e) {
    // Names are client text: held per incident and in the key, so bounded.
    for (std::string* name : {&e.kind, &e.run_id, &e.host, &e.user}) CutUtf8(*name, kMaxFactBytes);
    std::string key = e.kind + '\x1f' + (e.run_id.empty() ? "h:" + e.host : "r:" + e.run_id);
    auto it = open_.find(key);
    Incident* inc = it == open_.end() ? nullptr : &incidents_[it->second];
    if (inc == nullptr || inc->first_seen - ev.ts_ms > gap_) {
      if (incidents_.size() >= kMaxIncidents) return false;
      open_[key] = incidents_.size();
      inc = &incidents_.emplace_back();
      inc->kind = e.kind;
      inc->run_id = e.run_id;
      inc->last_seen = ev.ts_ms;
    }
    ++inc->count;
    inc->first_seen = ev.ts_ms;
    if (!e.host.empty()) AddCapped(inc->hosts, e.host);
    if (!e.user.empty()) AddCapped(inc->users, e.user);
    if (e.rank) AddCapped(inc->ranks, *e.rank);
    if (e.gpu) AddCapped(inc->gpus, *e.gpu);
    if (SeverityRank(e.severity) > SeverityRank(inc->severity)) inc->severity = e.severity;
    inc->first = ev;
    inc->first.source.clear();  // not needed: the subject has what is shown
    inc->subject = std::move(e);
    InsightEvent& kept = inc->subject;
    CutUtf8(kept.message, kMaxSubjectMessageBytes);
    if (kept.facts.size() > kMaxSubjectFacts) kept.facts.resize(kMaxSubjectFacts);
    for (auto& f : kept.facts) CutUtf8(f.text, kMaxFactBytes);
    return true;
  }

  std::vector<Incident> Take() { return std::move(incidents_); }

 private:
  const TimeMs gap_;
  std::vector<Incident> incidents_;
  std::unordered_map<std::string, std::size_t> open_;  // key -> its newest-started incident
};

Result<Folded> FoldIncidents(storage::EventStore& store, const query::Node& query, TimeMs from,
                             TimeMs to, TimeMs gap, storage::Clock::time_point deadline) {
  Folded out;
  IncidentFolder folder(gap);
  storage::DocumentReader reader;
  storage::ScanRequest scan;
  scan.query = &query;
  scan.lo = static_cast<storage::EventKey>(from) << 20;
  scan.hi = (static_cast<storage::EventKey>(to) << 20) - 1;
  scan.ascending = false;
  scan.max_bytes = kInsightsPageBytes;
  scan.deadline = deadline;
  while (scan.lo <= scan.hi) {
    scan.limit = std::min(kInsightsPageEvents, kMaxEventsRead - out.events_read);
    if (scan.limit == 0) {
      out.complete = false;
      break;
    }
    auto page = store.Scan(scan);
    if (!page.ok()) return page.status();
    for (const storage::StoredEvent& ev : page->events) {
      ++out.events_read;
      storage::DocumentView view;
      if (!reader.ReadUnpadded(ev.source, view).ok()) continue;
      auto e = ReadInsightEvent(view);
      if (!e) continue;
      if (!folder.Add(ev, std::move(*e))) {
        out.complete = false;
        out.incidents = folder.Take();
        return out;
      }
    }
    if (!page->more || page->events.empty()) break;
    scan.hi = page->events.back().key - 1;
  }
  out.incidents = folder.Take();
  return out;
}

void WriteFact(JsonWriter& w, const storage::Field& f) {
  w.Key(f.name);
  if (f.type == storage::Field::Type::kNumber) {
    w.Double(f.number);
  } else {
    w.String(f.text);
  }
}

void WriteIncident(JsonWriter& w, const Incident& inc, const TrainingOptions& opts) {
  const Explanation x = Explain(inc.subject, inc.first_seen);
  w.BeginObject().Key("id").String(inc.first.id).Key("kind").String(inc.kind);
  w.Key("severity").String(inc.severity).Key("run_id");
  if (inc.run_id.empty()) {
    w.Null();
  } else {
    w.String(inc.run_id);
  }
  w.Key("count").Uint(inc.count);
  w.Key("first_seen").String(FormatRfc3339Ms(inc.first_seen));
  w.Key("last_seen").String(FormatRfc3339Ms(inc.last_seen));
  w.Key("hosts").BeginArray();
  for (const auto& h : inc.hosts) w.String(h);
  w.EndArray().Key("users").BeginArray();
  for (const auto& u : inc.users) w.String(u);
  w.EndArray().Key("ranks").BeginArray();
  for (auto r : inc.ranks) w.Int(r);
  w.EndArray().Key("gpus").BeginArray();
  for (auto g : inc.gpus) w.Int(g);
  w.EndArray();
  w.Key("first_event").BeginObject().Key("id").String(inc.first.id);
  w.Key("_index").String(inc.first.index);
  w.Key("@timestamp").String(FormatRfc3339Ms(inc.first.ts_ms));
  w.Key("message").String(inc.subject.message).EndObject();
  w.Key("context").String("/api/v1/context?id=" + inc.first.id);
  w.Key("facts").BeginObject();
  for (const auto& f : inc.subject.facts) WriteFact(w, f);
  w.EndObject();
  w.Key("title").String(x.title).Key("explanation").String(x.explanation);
  w.Key("fixes").BeginArray();
  for (const auto& f : x.fixes) w.String(f);
  w.EndArray().Key("run_link");
  const std::string link = inc.run_id.empty() ? "" : RunLink(opts, inc.run_id);
  if (link.empty()) {
    w.Null();
  } else {
    w.String(link);
  }
  w.EndObject();
}

query::Node WithInsightKind(const query::Node& q) {
  query::Node n{query::NodeKind::kAnd, 0, {}, {}, {}};
  n.children.push_back(query::Node::MakeExists("insight.kind", 0));
  n.children.push_back(q);
  return n;
}

}  // namespace

boost::asio::awaitable<HttpResponse> HandleInsights(HttpRequest req, ApiContext& ctx) {
  const auto start = storage::Clock::now();
  std::size_t limit = 100;
  const TimeMs now = ctx.now();
  auto parsed_params = ParseQueryParams(req.target(), now, LimitParam(&limit, kInsightsMaxLimit));
  if (auto* err = std::get_if<std::string>(&parsed_params)) co_return BadParamResponse(req, *err);
  const QueryParams& p = std::get<QueryParams>(parsed_params);
  auto parsed = ParseRequestQuery(p.q, now);
  if (auto* err = std::get_if<QueryError>(&parsed)) co_return QueryErrorResponse(req, *err);
  const query::Node query = WithInsightKind(std::get<query::Node>(parsed));
  const TimeMs from = p.from.value_or(kMinEventTime), to = p.to.value_or(kMaxEventTime);
  auto folded = co_await storage::RunBlocking(ctx.workers, [&] {
    return FoldIncidents(ctx.store, query, from, to, ctx.training.incident_gap_ms,
                         start + ctx.query_timeout);
  });
  if (!folded.ok()) co_return StorageErrorResponse(req, folded.status());
  std::vector<Incident>& incidents = folded->incidents;
  std::sort(incidents.begin(), incidents.end(), [](const Incident& a, const Incident& b) {
    return a.first_seen != b.first_seen ? a.first_seen > b.first_seen : a.first.key > b.first.key;
  });
  if (incidents.size() > limit) incidents.resize(limit);
  JsonWriter w;
  w.BeginObject().Key("incidents").BeginArray();
  for (const Incident& inc : incidents) WriteIncident(w, inc, ctx.training);
  w.EndArray().Key("complete").Bool(folded->complete);
  w.Key("events_read").Uint(folded->events_read).EndObject();
  co_return MakeJsonResponse(req, http::status::ok, w.Release());
}

}  // namespace dashcam::api
