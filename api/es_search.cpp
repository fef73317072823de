#include "api/es_search.h"

#include <charconv>
#include <limits>
#include <map>
#include <optional>

#include <fmt/format.h>
#include <boost/json.hpp>
#include <boost/url/parse.hpp>

#include "api/es_query_dsl.h"
#include "api/json_writer.h"
#include "storage/async.h"

namespace dashcam::api {
namespace {

namespace json = boost::json;

constexpr std::size_t kMaxResultWindow = 10'000;
constexpr std::size_t kTermsScanLimit = 100'000;

struct Agg {
  std::string name;
  bool histogram = false;  // else terms
  std::string field;
  TimeMs interval = 0;
  std::size_t min_doc_count = 0;
  std::size_t size = 10;
};

struct EsRequest {
  query::Node query = query::Node::MatchAll();
  std::size_t size = 10, from = 0;
  std::optional<storage::EventKey> search_after;
  std::size_t count_limit = 10'000;  // 0: do not count
  bool total_as_int = false;
  json::value source_filter;  // null: whole source; false; or includes/excludes
  std::vector<Agg> aggs;
};

HttpResponse EsError(const HttpRequest& req, http::status status, std::string_view type,
                     std::string_view reason) {
  JsonWriter w;
  w.BeginObject().Key("error").BeginObject();
  w.Key("root_cause").BeginArray().BeginObject();
  w.Key("type").String(type).Key("reason").String(reason);
  w.EndObject().EndArray();
  w.Key("type").String(type).Key("reason").String(reason);
  w.EndObject().Key("status").Int(static_cast<int>(status)).EndObject();
  return MakeJsonResponse(req, status, w.Release());
}

Result<std::size_t> ToSize(const json::value& v, std::string_view name) {
  if (v.is_int64() && v.as_int64() >= 0) return static_cast<std::size_t>(v.as_int64());
  if (v.is_uint64()) return static_cast<std::size_t>(v.as_uint64());
  if (v.is_string()) {
    std::size_t n = 0;
    const auto& s = v.as_string();
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
    if (ec == std::errc() && p == s.data() + s.size()) return n;
  }
  return Status::InvalidArgument(fmt::format("[{}] must be a non-negative integer", name));
}

Result<TimeMs> ParseInterval(std::string_view s) {
  static const std::map<std::string_view, TimeMs> kNamed = {
      {"second", 1000}, {"minute", 60'000}, {"hour", 3'600'000}, {"day", kMsPerDay}};
  if (auto it = kNamed.find(s); it != kNamed.end()) return it->second;
  TimeMs n = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
  const std::string_view unit(p, static_cast<std::size_t>(s.data() + s.size() - p));
  static const std::map<std::string_view, TimeMs> kUnits = {
      {"ms", 1}, {"s", 1000}, {"m", 60'000}, {"h", 3'600'000}, {"d", kMsPerDay}};
  auto u = kUnits.find(unit);
  if (ec != std::errc() || n <= 0 || u == kUnits.end()) {
    return Status::InvalidArgument(
        fmt::format("interval [{}] is not supported (use e.g. 30s, 1m, 1h, 1d)", s));
  }
  return n * u->second;
}

Result<Agg> ParseAgg(const std::string& name, const json::value& spec) {
  const json::object* o = spec.if_object();
  if (!o) return Status::InvalidArgument(fmt::format("aggregation [{}] must be an object", name));
  Agg agg;
  agg.name = name;
  for (const auto& [type, body] : *o) {
    if (type == "meta") continue;
    if (type == "aggs" || type == "aggregations") {
      return Status::InvalidArgument("sub-aggregations are not supported by dashcam");
    }
    const json::object* b = body.if_object();
    if (!b || !b->contains("field") || !b->at("field").is_string()) {
      return Status::InvalidArgument(fmt::format("aggregation [{}] needs a [field]", name));
    }
    agg.field = std::string(b->at("field").as_string());
    if (agg.field.ends_with(".keyword")) agg.field.resize(agg.field.size() - 8);
    if (type == "date_histogram") {
      agg.histogram = true;
      if (agg.field != query::kTimestampField) {
        return Status::InvalidArgument("date_histogram is supported on @timestamp only");
      }
      const json::value* iv = b->if_contains("fixed_interval");
      if (!iv) iv = b->if_contains("calendar_interval");
      if (!iv) iv = b->if_contains("interval");
      if (!iv || !iv->is_string()) {
        return Status::InvalidArgument("date_histogram needs [fixed_interval]");
      }
      auto interval = ParseInterval(iv->as_string());
      if (!interval.ok()) return interval.status();
      agg.interval = *interval;
      if (const json::value* m = b->if_contains("min_doc_count")) {
        auto n = ToSize(*m, "min_doc_count");
        if (!n.ok()) return n.status();
        agg.min_doc_count = *n;
      }
    } else if (type == "terms") {
      if (const json::value* s = b->if_contains("size")) {
        auto n = ToSize(*s, "size");
        if (!n.ok()) return n.status();
        agg.size = *n;
      }
    } else {
      return Status::InvalidArgument(
          fmt::format("aggregation type [{}] is not supported by dashcam", std::string_view(type)));
    }
  }
  return agg;
}

Status ParseSort(const json::value& sort) {
  auto check = [](std::string_view field, std::string_view order) -> Status {
    if (field == "_score" || field == "_doc") return Status::Ok();
    if (field != query::kTimestampField) {
      return Status::InvalidArgument(
          fmt::format("sorting by [{}] is not supported: hits are newest first", field));
    }
    if (order == "asc") return Status::InvalidArgument("ascending sort is not supported yet");
    return Status::Ok();
  };
  const json::array* arr = sort.if_array();
  json::array single;
  if (!arr) {
    single.push_back(sort);
    arr = &single;
  }
  for (const json::value& s : *arr) {
    Status st;
    if (s.is_string()) {
      std::string_view text = s.as_string();
      const auto colon = text.find(':');
      st = check(text.substr(0, colon),
                 colon == std::string_view::npos ? "desc" : text.substr(colon + 1));
    } else if (const json::object* o = s.if_object(); o && o->size() == 1) {
      const json::value& v = o->begin()->value();
      std::string_view order = "desc";
      if (v.is_string()) order = v.as_string();
      if (const json::object* vo = v.if_object();
          vo && vo->contains("order") && vo->at("order").is_string()) {
        order = vo->at("order").as_string();
      }
      st = check(o->begin()->key(), order);
    } else {
      st = Status::InvalidArgument("malformed [sort]");
    }
    if (!st.ok()) return st;
  }
  return Status::Ok();
}

Status ApplyTrackTotal(const json::value& v, EsRequest& r) {
  if (v.is_bool())
    r.count_limit = v.as_bool() ? std::numeric_limits<std::size_t>::max() : 0;
  else if (v.is_string()) {
    const auto& s = v.as_string();
    if (s == "true")
      r.count_limit = std::numeric_limits<std::size_t>::max();
    else if (s == "false")
      r.count_limit = 0;
    else {
      auto n = ToSize(v, "track_total_hits");
      if (!n.ok()) return n.status();
      r.count_limit = *n;
    }
  } else {
    auto n = ToSize(v, "track_total_hits");
    if (!n.ok()) return n.status();
    r.count_limit = *n;
  }
  return Status::Ok();
}

Status ApplyBody(const json::object& body, TimeMs now, EsRequest& r) {
  for (const auto& [key, v] : body) {
    Status s;
    if (key == "query") {
      auto q = TranslateEsQuery(v, now);
      if (!q.ok()) return q.status();
      r.query = std::move(*q);
    } else if (key == "size" || key == "from") {
      auto n = ToSize(v, key);
      if (!n.ok()) return n.status();
      (key == "size" ? r.size : r.from) = *n;
    } else if (key == "sort") {
      s = ParseSort(v);
    } else if (key == "_source") {
      r.source_filter = v;
    } else if (key == "track_total_hits") {
      s = ApplyTrackTotal(v, r);
    } else if (key == "search_after") {
      const json::array* a = v.if_array();
      std::optional<storage::EventKey> k;
      if (a && a->size() == 2 && (*a)[1].is_string())
        k = storage::ParseEventKey((*a)[1].as_string());
      if (!k) return Status::InvalidArgument("[search_after] must be the [sort] of a hit");
      r.search_after = k;
    } else if (key == "aggs" || key == "aggregations") {
      if (!v.is_object()) return Status::InvalidArgument("[aggs] must be an object");
      for (const auto& [name, spec] : v.as_object()) {
        auto agg = ParseAgg(std::string(name), spec);
        if (!agg.ok()) return agg.status();
        r.aggs.push_back(std::move(*agg));
      }
    } else if (key != "timeout" && key != "track_scores" && key != "version" &&
               key != "seq_no_primary_term" && key != "stored_fields" && key != "highlight" &&
               key != "fields" && key != "docvalue_fields" && key != "script_fields" &&
               key != "min_score" && key != "terminate_after") {
      return Status::InvalidArgument(
          fmt::format("request body key [{}] is not supported by dashcam", std::string_view(key)));
    }
    if (!s.ok()) return s;
  }
  return Status::Ok();
}

Status ApplyUrl(std::string_view target, TimeMs now, EsRequest& r) {
  auto url = boost::urls::parse_origin_form(target);
  if (!url) return Status::InvalidArgument("malformed request target");
  std::optional<std::string> q;
  std::string df;
  bool default_or = true;
  json::array includes, excludes;
  for (auto p : url->params(boost::urls::encoding_opts(true))) {
    const json::value v(p.value);
    Status s;
    if (p.key == "q")
      q = p.value;
    else if (p.key == "df")
      df = p.value;
    else if (p.key == "default_operator")
      default_or = !(p.value == "AND" || p.value == "and");
    else if (p.key == "size" || p.key == "from") {
      auto n = ToSize(v, p.key);
      if (!n.ok()) return n.status();
      (p.key == "size" ? r.size : r.from) = *n;
    } else if (p.key == "sort")
      s = ParseSort(v);
    else if (p.key == "track_total_hits")
      s = ApplyTrackTotal(p.value.empty() ? json::value("true") : v, r);
    else if (p.key == "rest_total_hits_as_int")
      r.total_as_int = p.value != "false";
    else if (p.key == "_source")
      r.source_filter =
          p.value == "false" ? json::value(false) : json::value(json::array{json::value(p.value)});
    else if (p.key == "_source_includes")
      includes.push_back(json::value(p.value));
    else if (p.key == "_source_excludes")
      excludes.push_back(json::value(p.value));
    if (!s.ok()) return s;
  }
  if (!includes.empty() || !excludes.empty()) {
    r.source_filter = json::object{{"includes", includes}, {"excludes", excludes}};
  }
  if (q) {
    auto node = TranslateQueryString(*q, df, default_or, now);
    if (!node.ok()) return node.status();
    r.query = std::move(*node);
  }
  return Status::Ok();
}

// Whether a dotted path is selected by a pattern list ("host", "host.*", "log.file.path").
bool Selected(const std::string& path, const json::array& patterns) {
  for (const json::value& p : patterns) {
    if (!p.is_string()) continue;
    std::string_view pat = p.as_string();
    if (pat == "*" || pat == path) return true;
    if (pat.ends_with(".*") || pat.ends_with("*")) {
      pat.remove_suffix(pat.ends_with(".*") ? 2 : 1);
      if (path.starts_with(pat)) return true;
    }
    if (path.starts_with(std::string(pat) + ".")) return true;  // a parent was selected
    if (std::string(pat).starts_with(path + ".")) return true;  // keep parents of selected
  }
  return false;
}

void FilterObject(json::object& obj, const std::string& prefix, const json::array& inc,
                  const json::array& exc) {
  for (auto it = obj.begin(); it != obj.end();) {
    const std::string path =
        prefix.empty() ? std::string(it->key()) : prefix + "." + std::string(it->key());
    const bool excluded = !exc.empty() && [&] {
      for (const json::value& p : exc) {
        if (!p.is_string()) continue;
        std::string_view pat = p.as_string();
        if (pat == path || path.starts_with(std::string(pat) + ".")) return true;
        if (pat.ends_with("*") && path.starts_with(pat.substr(0, pat.size() - 1))) return true;
      }
      return false;
    }();
    if (excluded || (!inc.empty() && !Selected(path, inc))) {
      it = obj.erase(it);
      continue;
    }
    if (it->value().is_object()) FilterObject(it->value().as_object(), path, inc, exc);
    ++it;
  }
}

// The hit's _source as the request asked for it; nullopt: omit.
std::optional<std::string> FilteredSource(const std::string& source, const json::value& filter) {
  if (filter.is_null() || (filter.is_bool() && filter.as_bool())) return source;
  if (filter.is_bool()) return std::nullopt;
  json::array inc, exc;
  if (filter.is_string())
    inc.push_back(filter);
  else if (filter.is_array())
    inc = filter.as_array();
  else if (const json::object* o = filter.if_object()) {
    if (auto* i = o->if_contains("includes"); i && i->is_array()) inc = i->as_array();
    if (auto* e = o->if_contains("excludes"); e && e->is_array()) exc = e->as_array();
  }
  boost::system::error_code ec;
  json::value doc = json::parse(source, ec);
  if (ec || !doc.is_object()) return source;
  FilterObject(doc.as_object(), "", inc, exc);
  return json::serialize(doc);
}

struct EsResult {
  storage::SearchPage page;
  std::vector<std::pair<const Agg*, std::vector<storage::HistogramBucket>>> histograms;
  std::vector<std::pair<const Agg*, storage::TermsResult>> terms;
};

Result<EsResult> Run(storage::EventStore& store, const EsRequest& r, bool count,
                     storage::Clock::time_point deadline) {
  storage::SearchRequest sreq;
  sreq.query = &r.query;
  sreq.limit = count ? 0 : r.from + r.size;
  sreq.before = r.search_after;
  sreq.count_limit = count ? std::numeric_limits<std::size_t>::max() : r.count_limit;
  sreq.deadline = deadline;
  EsResult out;
  auto page = store.Search(sreq);
  if (!page.ok()) return page.status();
  out.page = std::move(*page);
  if (r.from > 0) {
    auto& hits = out.page.hits;
    hits.erase(hits.begin(),
               hits.begin() + static_cast<std::ptrdiff_t>(std::min(r.from, hits.size())));
  }
  for (const Agg& agg : r.aggs) {
    if (agg.histogram) {
      auto h = store.Histogram(sreq, agg.interval);
      if (!h.ok()) return h.status();
      out.histograms.emplace_back(&agg, std::move(*h));
    } else {
      auto t = store.TopValues(sreq, agg.field, agg.size, kTermsScanLimit);
      if (!t.ok()) return t.status();
      out.terms.emplace_back(&agg, std::move(*t));
    }
  }
  return out;
}

// One shard, as Elasticsearch counts them; a partial answer (storage
// skipped part of its data that did not answer) reports it failed, as
// Elasticsearch does when some shards fail.
void WriteShards(JsonWriter& w, bool partial) {
  w.Key("_shards").BeginObject();
  w.Key("total").Int(1).Key("successful").Int(partial ? 0 : 1).Key("skipped").Int(0);
  w.Key("failed").Int(partial ? 1 : 0);
  w.EndObject();
}

void WriteHistogram(JsonWriter& w, const Agg& agg, const std::vector<storage::HistogramBucket>& b) {
  w.Key(agg.name).BeginObject().Key("buckets").BeginArray();
  auto bucket = [&](TimeMs start, std::uint64_t n) {
    w.BeginObject().Key("key_as_string").String(FormatRfc3339Ms(start));
    w.Key("key").Int(start).Key("doc_count").Uint(n).EndObject();
  };
  for (std::size_t i = 0; i < b.size(); ++i) {
    if (b[i].count >= agg.min_doc_count) bucket(b[i].start, b[i].count);
    if (agg.min_doc_count == 0 && i + 1 < b.size()) {
      for (TimeMs t = b[i].start + agg.interval; t < b[i + 1].start; t += agg.interval)
        bucket(t, 0);
    }
  }
  w.EndArray().EndObject();
}

void WriteTerms(JsonWriter& w, const Agg& agg, const storage::TermsResult& t) {
  w.Key(agg.name).BeginObject();
  w.Key("doc_count_error_upper_bound").Int(0);
  w.Key("sum_other_doc_count").Uint(t.other_count);
  w.Key("buckets").BeginArray();
  for (const auto& b : t.buckets)
    w.BeginObject().Key("key").String(b.value).Key("doc_count").Uint(b.count).EndObject();
  w.EndArray();
  if (!t.complete) w.Key("dashcam_sampled_events").Uint(t.events_read);
  w.EndObject();
}

std::string SearchBody(const EsRequest& r, const EsResult& res, std::int64_t took) {
  JsonWriter w;
  w.BeginObject().Key("took").Int(took).Key("timed_out").Bool(false);
  WriteShards(w, res.page.partial);
  w.Key("hits").BeginObject();
  if (r.count_limit > 0) {
    if (r.total_as_int) {
      w.Key("total").Uint(res.page.total);
    } else {
      w.Key("total").BeginObject().Key("value").Uint(res.page.total);
      w.Key("relation").String(res.page.total_exact ? "eq" : "gte").EndObject();
    }
  }
  w.Key("max_score").Null().Key("hits").BeginArray();
  for (const storage::StoredEvent& ev : res.page.hits) {
    w.BeginObject().Key("_index").String(ev.index).Key("_id").String(ev.id).Key("_score").Null();
    if (auto src = FilteredSource(ev.source, r.source_filter)) w.Key("_source").Raw(*src);
    w.Key("sort").BeginArray().Int(ev.ts_ms).String(storage::FormatEventKey(ev.key)).EndArray();
    w.EndObject();
  }
  w.EndArray().EndObject();
  if (!r.aggs.empty()) {
    w.Key("aggregations").BeginObject();
    for (const auto& [agg, buckets] : res.histograms) WriteHistogram(w, *agg, buckets);
    for (const auto& [agg, terms] : res.terms) WriteTerms(w, *agg, terms);
    w.EndObject();
  }
  w.EndObject();
  return w.Release();
}

Result<EsRequest> BuildRequest(const HttpRequest& req, const std::string& index, bool count,
                               TimeMs now) {
  EsRequest r;
  if (!req.body().empty()) {
    boost::system::error_code ec;
    json::value body = json::parse(req.body(), ec);
    if (ec || !body.is_object()) {
      return Status::InvalidArgument("request body is not a JSON object: " + ec.message());
    }
    if (auto s = ApplyBody(body.as_object(), now, r); !s.ok()) return s;
  }
  if (auto s = ApplyUrl(req.target(), now, r); !s.ok()) return s;
  if (!count && r.from + r.size > kMaxResultWindow) {
    return Status::InvalidArgument(
        fmt::format("Result window is too large, from + size must be less than or equal to: [{}]",
                    kMaxResultWindow));
  }
  if (!index.empty()) {
    auto filter = TranslateIndexExpression(index);
    if (!filter.ok()) return filter.status();
    if (filter->kind != query::NodeKind::kMatchAll) {
      std::vector<query::Node> both;
      both.push_back(std::move(r.query));
      both.push_back(std::move(*filter));
      r.query = query::Node{query::NodeKind::kAnd, 0, std::move(both), {}, {}};
    }
  }
  return r;
}

}  // namespace

boost::asio::awaitable<HttpResponse> HandleEsSearch(HttpRequest req, std::string index, bool count,
                                                    ApiContext& ctx) {
  const auto start = storage::Clock::now();
  auto built = BuildRequest(req, index, count, ctx.now());
  if (!built.ok()) {
    co_return EsError(req, http::status::bad_request, "parse_exception", built.status().message());
  }
  const EsRequest& r = *built;
  auto result = co_await storage::RunBlocking(
      ctx.workers, [&] { return Run(ctx.store, r, count, start + ctx.query_timeout); });
  if (!result.ok()) {
    const Status& s = result.status();
    if (s.code() == StatusCode::kDeadlineExceeded) {
      co_return EsError(req, http::status::service_unavailable, "query_timeout", s.message());
    }
    if (s.code() == StatusCode::kUnavailable) {  // e.g. a ClickHouse shard down
      co_return EsError(req, http::status::service_unavailable, "unavailable_shards_exception",
                        s.message());
    }
    const bool bad = s.code() == StatusCode::kInvalidArgument;
    co_return EsError(req, bad ? http::status::bad_request : http::status::internal_server_error,
                      bad ? "illegal_argument_exception" : "exception", s.message());
  }
  const auto took =
      std::chrono::duration_cast<std::chrono::milliseconds>(storage::Clock::now() - start).count();
  if (count) {
    JsonWriter w;
    w.BeginObject().Key("count").Uint(result->page.total);
    WriteShards(w, result->page.partial);
    w.EndObject();
    co_return MakeJsonResponse(req, http::status::ok, w.Release());
  }
  co_return MakeJsonResponse(req, http::status::ok, SearchBody(r, *result, took));
}

}  // namespace dashcam::api
