#include "api/histogram_handler.h"

#include <array>
#include <charconv>

#include <fmt/format.h>

#include "api/json_writer.h"
#include "api/query_params.h"
#include "storage/async.h"

namespace dashcam::api {
namespace {

constexpr std::size_t kMaxBuckets = 10'000;
constexpr std::size_t kDefaultTop = 10, kMaxTop = 100;
constexpr TimeMs kSecond = 1000, kMinute = 60 * kSecond, kHour = 60 * kMinute, kDay = 24 * kHour;

// Round widths for `auto`; consecutive ones differ by at most ~2x, so the
// chosen one gives between ~60 and 120 buckets once the range is long enough.
constexpr std::array<TimeMs, 36> kAutoLadder = {1,
                                                2,
                                                5,
                                                10,
                                                20,
                                                50,
                                                100,
                                                200,
                                                500,
                                                kSecond,
                                                2 * kSecond,
                                                3 * kSecond,
                                                5 * kSecond,
                                                10 * kSecond,
                                                15 * kSecond,
                                                30 * kSecond,
                                                kMinute,
                                                2 * kMinute,
                                                3 * kMinute,
                                                5 * kMinute,
                                                10 * kMinute,
                                                15 * kMinute,
                                                30 * kMinute,
                                                kHour,
                                                2 * kHour,
                                                3 * kHour,
                                                6 * kHour,
                                                12 * kHour,
                                                kDay,
                                                2 * kDay,
                                                3 * kDay,
                                                5 * kDay,
                                                7 * kDay,
                                                14 * kDay,
                                                30 * kDay,
                                                60 * kDay};

enum class ValueOp { kNone, kAvg, kMax, kMin, kSum };

struct HistogramParams {
  std::optional<TimeMs> interval;  // nullopt: auto
  std::string by;
  std::size_t top = kDefaultTop;
  ValueOp op = ValueOp::kNone;
  std::string value_field;
  std::string value_text;  // as given, echoed back
};

std::optional<TimeMs> ParseHistogramInterval(std::string_view s) {
  TimeMs n = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
  const std::string_view unit(p, static_cast<std::size_t>(s.data() + s.size() - p));
  static constexpr std::pair<std::string_view, TimeMs> kUnits[] = {
      {"ms", 1}, {"s", kSecond}, {"m", kMinute}, {"h", kHour}, {"d", kDay}, {"w", 7 * kDay}};
  if (ec != std::errc() || n <= 0) return std::nullopt;
  for (const auto& [name, ms] : kUnits) {
    if (unit == name && n <= kMaxEventTime / ms) return n * ms;
  }
  return std::nullopt;
}

std::optional<std::string> ReadParam(std::string_view key, std::string_view value,
                                     HistogramParams& p) {
  if (key == "interval") {
    if (value.empty() || value == "auto") {
      p.interval.reset();
      return std::nullopt;
    }
    p.interval = ParseHistogramInterval(value);
    if (!p.interval) {
      return fmt::format(
          "[interval] must be auto or <n><unit> with unit ms, s, m, h, d or w (30s, 1m, 1h, "
          "1d), got '{}'",
          value.substr(0, 64));
    }
  } else if (key == "by") {
    p.by = std::string(value);
  } else if (key == "top") {
    auto n = ParseCount(value, 1, kMaxTop);
    if (!n) return fmt::format("[top] must be an integer from 1 to {}", kMaxTop);
    p.top = *n;
  } else if (key == "value") {
    static constexpr std::pair<std::string_view, ValueOp> kOps[] = {{"avg", ValueOp::kAvg},
                                                                    {"max", ValueOp::kMax},
                                                                    {"min", ValueOp::kMin},
                                                                    {"sum", ValueOp::kSum}};
    const auto colon = value.find(':');
    const std::string_view op = value.substr(0, colon);
    p.op = ValueOp::kNone;
    for (const auto& [name, v] : kOps) {
      if (op == name) p.op = v;
    }
    if (p.op == ValueOp::kNone || colon == std::string_view::npos || colon + 1 == value.size()) {
      return fmt::format(
          "[value] must be avg:<field>, max:<field>, min:<field> or sum:<field>, got '{}'",
          value.substr(0, 64));
    }
    p.value_field = std::string(value.substr(colon + 1));
    p.value_text = std::string(value);
  }
  return std::nullopt;
}

// The aggregate `op` asks for, or nullopt (JSON null) when there are no values.
std::optional<double> Aggregate(const storage::NumericStats& s, ValueOp op) {
  if (s.count == 0) return std::nullopt;
  switch (op) {
    case ValueOp::kAvg:
      return s.sum / static_cast<double>(s.count);
    case ValueOp::kMax:
      return s.max;
    case ValueOp::kMin:
      return s.min;
    case ValueOp::kSum:
      return s.sum;
    case ValueOp::kNone:
      break;
  }
  return std::nullopt;
}

void WriteValue(JsonWriter& w, const storage::HistogramCell& c, ValueOp op) {
  if (op == ValueOp::kNone) return;
  w.Key("value");
  if (auto v = Aggregate(c.value, op))
    w.Double(*v);
  else
    w.Null();
}

void WriteCell(JsonWriter& w, std::string_view key, const storage::HistogramCell& c, ValueOp op) {
  w.Key(key).BeginObject().Key("count").Uint(c.count);
  WriteValue(w, c, op);
  w.EndObject();
}

struct Range {
  TimeMs from = 0, to = 0;
};

std::string Body(const HistogramParams& p, const Range& r, TimeMs interval,
                 const storage::HistogramTable& t, std::int64_t took_ms) {
  JsonWriter w;
  w.BeginObject().Key("took_ms").Int(took_ms);
  w.Key("from").Int(r.from).Key("to").Int(r.to);
  w.Key("interval").String(FormatInterval(interval)).Key("interval_ms").Int(interval);
  const bool split = !p.by.empty();
  if (split) {
    w.Key("by").String(p.by).Key("keys").BeginArray();
    for (const std::string& k : t.keys) w.String(k);
    w.EndArray().Key("keys_sampled").Bool(t.keys_sampled);
  }
  if (p.op != ValueOp::kNone) w.Key("value").String(p.value_text);
  std::uint64_t total = 0;
  for (const auto& b : t.buckets) total += b.total.count;
  w.Key("total").Uint(total);
  w.Key("buckets").BeginArray();
  const storage::HistogramCell empty;
  const std::vector<storage::HistogramCell> empty_keys(t.keys.size());
  std::size_t next = 0;  // the next non-empty bucket of t
  if (r.from < r.to) {
    const TimeMs first = r.from / interval * interval, last = (r.to - 1) / interval * interval;
    for (TimeMs start = first; start <= last; start += interval) {
      const bool have = next < t.buckets.size() && t.buckets[next].start == start;
      const auto& b = have ? t.buckets[next] : storage::HistogramTable::Bucket{};
      if (have) ++next;
      w.BeginObject().Key("t").Int(start).Key("count").Uint(b.total.count);
      WriteValue(w, b.total, p.op);
      if (split) {
        w.Key("by").BeginObject();
        for (std::size_t k = 0; k < t.keys.size(); ++k)
          WriteCell(w, t.keys[k], have ? b.by_key[k] : empty, p.op);
        w.EndObject();
        WriteCell(w, "other", b.other, p.op);
        WriteCell(w, "missing", b.missing, p.op);
      }
      w.EndObject();
    }
  }
  w.EndArray().EndObject();
  return w.Release();
}

// The range the buckets cover: as given, else the stored events' extent
// (see the header).
Result<Range> ResolveRange(const QueryParams& p, storage::EventStore& store, TimeMs now,
                           storage::Clock::time_point deadline) {
  Range r;
  std::optional<storage::TimeExtent> extent;
  if (!p.from || !p.to) {
    auto stored = store.Extent(deadline);
    if (!stored.ok()) return stored.status();
    extent = *stored;
  }
  if (p.from && p.to) {
    r = Range{*p.from, *p.to};
  } else if (extent) {
    r.from = p.from.value_or(extent->first);
    r.to = p.to.value_or(std::max(now, extent->last + 1));
  } else {
    r.to = p.to.value_or(now);
    r.from = p.from.value_or(r.to - kHour);
  }
  // Events exist only in [kMinEventTime, kMaxEventTime): so do buckets.
  r.from = std::clamp(r.from, kMinEventTime, kMaxEventTime);
  r.to = std::clamp(r.to, r.from, kMaxEventTime);
  return r;
}

}  // namespace

TimeMs AutoInterval(TimeMs span) {
  // The widest round width that still gives 60 buckets: the coarser the
  // buckets, the cheaper (whole minutes and seconds come from the level
  // counts, not from the events).
  TimeMs best = kAutoLadder.front();
  for (TimeMs w : kAutoLadder) {
    if ((span + w - 1) / w >= 60) best = w;
  }
  if ((span + best - 1) / best <= 120) return best;
  // Past the ladder (decades): whole multiples of its widest width.
  const TimeMs top = kAutoLadder.back();
  return ((span + 120 * top - 1) / (120 * top)) * top;
}

std::string FormatInterval(TimeMs interval) {
  static constexpr std::pair<TimeMs, const char*> kUnits[] = {
      {7 * kDay, "w"}, {kDay, "d"}, {kHour, "h"}, {kMinute, "m"}, {kSecond, "s"}};
  for (const auto& [ms, unit] : kUnits) {
    if (interval % ms == 0) return fmt::format("{}{}", interval / ms, unit);
  }
  return fmt::format("{}ms", interval);
}

Result<HistogramRange> ResolveHistogramRange(std::optional<TimeMs> from, std::optional<TimeMs> to,
                                             storage::EventStore& store, TimeMs now,
                                             storage::Clock::time_point deadline) {
  QueryParams p;
  p.from = from;
  p.to = to;
  auto r = ResolveRange(p, store, now, deadline);
  if (!r.ok()) return r.status();
  return HistogramRange{r->from, r->to};
}

boost::asio::awaitable<HttpResponse> HandleHistogram(HttpRequest req, ApiContext& ctx) {
  const auto start = storage::Clock::now();
  HistogramParams hp;
  const TimeMs now = ctx.now();
  auto parsed_params = ParseQueryParams(
      req.target(), now, [&](auto key, auto value) { return ReadParam(key, value, hp); });
  if (auto* err = std::get_if<std::string>(&parsed_params)) co_return BadParamResponse(req, *err);
  const QueryParams& p = std::get<QueryParams>(parsed_params);
  auto parsed = ParseRequestQuery(p.q, now);
  if (auto* err = std::get_if<QueryError>(&parsed)) co_return QueryErrorResponse(req, *err);
  const query::Node& root = std::get<query::Node>(parsed);

  std::optional<HttpResponse> refusal;
  Range range;
  TimeMs interval = 0;
  auto result =
      co_await storage::RunBlocking(ctx.workers, [&]() -> Result<storage::HistogramTable> {
        auto r = ResolveRange(p, ctx.store, now, start + ctx.query_timeout);
        if (!r.ok()) return r.status();
        range = *r;
        interval = hp.interval.value_or(AutoInterval(std::max<TimeMs>(range.to - range.from, 1)));
        const std::uint64_t buckets =
            range.from < range.to ? static_cast<std::uint64_t>(
                                        ((range.to - 1) / interval - range.from / interval) + 1)
                                  : 0;
        if (buckets > kMaxBuckets) {
          refusal = BadParamResponse(
              req, fmt::format("[interval] {} gives {} buckets over the range; at most {} are "
                               "allowed (use a wider interval or auto)",
                               FormatInterval(interval), buckets, kMaxBuckets));
          return storage::HistogramTable{};
        }
        storage::SearchRequest sreq;
        sreq.query = &root;
        sreq.from = range.from;
        sreq.to = range.to;
        sreq.deadline = start + ctx.query_timeout;
        storage::HistogramSpec spec;
        spec.interval = interval;
        spec.split_field = hp.by;
        spec.split_size = hp.top;
        spec.value_field = hp.value_field;
        return ctx.store.Histogram(sreq, spec);
      });
  if (refusal) co_return std::move(*refusal);
  if (!result.ok()) co_return StorageErrorResponse(req, result.status());
  const auto took =
      std::chrono::duration_cast<std::chrono::milliseconds>(storage::Clock::now() - start).count();
  co_return MakeJsonResponse(req, http::status::ok, Body(hp, range, interval, *result, took));
}

}  // namespace dashcam::api
