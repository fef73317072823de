#include "api/patterns_handler.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <unordered_map>

#include <fmt/format.h>

#include "api/histogram_handler.h"
#include "api/json_writer.h"
#include "api/message_template.h"
#include "api/query_params.h"
#include "storage/async.h"
#include "storage/field_extractor.h"
#include "storage/partition.h"

namespace dashcam::api {
namespace {

constexpr std::size_t kPatternsDefaultLimit = 50, kPatternsMaxLimit = 1000;
constexpr std::size_t kDefaultSample = 50'000, kPatternsMaxSample = 200'000;
constexpr std::size_t kMaxTemplates = 5'000;
constexpr std::size_t kMaxExampleBytes = 500;
// A scan page: at most this many events or bytes of documents in memory.
constexpr std::size_t kPatternsPageEvents = 1000;
constexpr std::size_t kPatternsPageBytes = 4u << 20;
// Rounds of handing a range's unused budget to the buckets that want more.
constexpr int kSampleRounds = 4;

struct PatternParams {
  std::size_t limit = kPatternsDefaultLimit;
  std::size_t sample = kDefaultSample;
};

std::optional<std::string> ReadParam(std::string_view key, std::string_view value,
                                     PatternParams& p) {
  if (key == "limit") {
    auto n = ParseCount(value, 1, kPatternsMaxLimit);
    if (!n) return fmt::format("[limit] must be an integer from 1 to {}", kPatternsMaxLimit);
    p.limit = *n;
  } else if (key == "sample") {
    auto n = ParseCount(value, 1, kPatternsMaxSample);
    if (!n) return fmt::format("[sample] must be an integer from 1 to {}", kPatternsMaxSample);
    p.sample = *n;
  }
  return std::nullopt;
}

// Reads a document's message as DocumentReader does (storage::MessageOf),
// skipping every other member unread.
class MessageReader {
 public:
  // False when the document has no message.
  bool Read(std::string_view json, std::string& out) {
    if (!extractor_.Extract(json).ok()) return false;
    const auto message = storage::MessageOf(extractor_, 0);
    if (!message) return false;
    out.assign(*message);
    return true;
  }

 private:
  storage::FieldExtractor extractor_{std::vector<std::string>(storage::kMessageSourceNames.begin(),
                                                              storage::kMessageSourceNames.end())};
};

// The start of the bucket holding t, and the buckets of [from, to).
struct Buckets {
  TimeMs first = 0, interval = 1;
  std::size_t count = 0;

  Buckets(TimeMs from, TimeMs to, TimeMs width) : interval(width) {
    first = from / width * width;
    count = from < to ? static_cast<std::size_t>((to - 1) / width - from / width + 1) : 0;
  }
};

// What was read of one bucket of a range.
struct BucketRead {
  storage::EventKey lo = 0, hi = 0;  // still unread: [lo, hi]
  std::uint64_t read = 0;
  bool more = true;  // the scan stopped before the bucket's oldest event
};

// Called per event read with its bucket; false stops the reading.
using EventVisitor = std::function<bool(const storage::StoredEvent&, std::size_t bucket)>;

// Reads at most `budget` events matching `query` in [from, to), newest
// first within each bucket, an equal share per bucket and then what is left
// to the buckets that had more (newest buckets first when the budget is
// smaller than the buckets). Returns what was read of each bucket.
Result<std::vector<BucketRead>> SampleRange(storage::EventStore& store, const query::Node& query,
                                            TimeMs from, TimeMs to, const Buckets& b,
                                            std::size_t budget, storage::Clock::time_point deadline,
                                            const EventVisitor& visit) {
  std::vector<BucketRead> reads(b.count);
  for (std::size_t i = 0; i < b.count; ++i) {
    const TimeMs start = b.first + static_cast<TimeMs>(i) * b.interval;
    reads[i].lo = storage::FirstKeyAt(std::max(start, from));
    reads[i].hi = storage::FirstKeyAt(std::min(start + b.interval, to)) - 1;
  }
  std::size_t remaining = budget;
  for (int round = 0; round < kSampleRounds && remaining > 0; ++round) {
    const auto open = static_cast<std::size_t>(
        std::count_if(reads.begin(), reads.end(), [](const BucketRead& r) { return r.more; }));
    if (open == 0) break;
    const std::size_t quota = std::max<std::size_t>(1, remaining / open);
    for (std::size_t i = b.count; i-- > 0 && remaining > 0;) {
      BucketRead& r = reads[i];
      std::size_t want = std::min(quota, remaining);
      while (r.more && want > 0) {
        storage::ScanRequest req;
        req.query = &query;
        req.lo = r.lo;
        req.hi = r.hi;
        req.limit = std::min(want, kPatternsPageEvents);
        req.max_bytes = kPatternsPageBytes;
        req.deadline = deadline;
        auto page = store.Scan(req);
        if (!page.ok()) return page.status();
        r.more = page->more;
        if (!page->events.empty()) r.hi = page->events.back().key - 1;
        for (const storage::StoredEvent& ev : page->events) {
          ++r.read;
          --remaining;
          --want;
          if (!visit(ev, i)) return reads;
        }
      }
    }
  }
  return reads;
}

// The templates of the events read, with their counts per bucket. Bounded:
// kMaxTemplates templates, examples cut to kMaxExampleBytes.
class PatternTable {
 public:
  struct Entry {
    std::string example;
    std::vector<std::uint64_t> counts;  // per bucket
    std::uint64_t total = 0;            // after Estimate(): sum of counts
    bool seen_before = false;
  };

  explicit PatternTable(std::size_t buckets) : buckets_(buckets) {}

  void Add(const storage::StoredEvent& ev, std::size_t bucket) {
    if (!messages_.Read(ev.source, message_)) message_.clear();
    BuildMessageTemplate(message_, template_);
    auto it = entries_.find(template_);
    if (it == entries_.end()) {
      if (entries_.size() >= kMaxTemplates) {
        ++other_events_;
        return;
      }
      it = entries_.emplace(template_, Entry{}).first;
      it->second.counts.resize(buckets_);
      it->second.example = Cut(message_);
    }
    ++it->second.counts[bucket];
  }

  // For an event of the previous range: marks its template as seen there.
  // False once every tracked template has been seen (nothing left to learn).
  bool MarkSeenBefore(const storage::StoredEvent& ev) {
    if (!messages_.Read(ev.source, message_)) message_.clear();
    BuildMessageTemplate(message_, template_);
    auto it = entries_.find(template_);
    if (it != entries_.end() && !it->second.seen_before) {
      it->second.seen_before = true;
      ++seen_before_;
    }
    return seen_before_ < entries_.size();
  }

  // Scales each bucket's counts by totals[i] / reads[i].read where the
  // bucket was not read whole (totals empty: all were), then sums them.
  void Estimate(const std::vector<BucketRead>& reads, const std::vector<std::uint64_t>& totals) {
    for (auto& [tmpl, e] : entries_) {
      e.total = 0;
      for (std::size_t i = 0; i < buckets_; ++i) {
        if (!totals.empty() && totals[i] > reads[i].read && reads[i].read > 0) {
          e.counts[i] = static_cast<std::uint64_t>(
              std::llround(static_cast<double>(e.counts[i]) * static_cast<double>(totals[i]) /
                           static_cast<double>(reads[i].read)));
        }
        e.total += e.counts[i];
      }
    }
  }

  // The `limit` most frequent, ties by template.
  std::vector<const std::pair<const std::string, Entry>*> Top(std::size_t limit) const {
    std::vector<const std::pair<const std::string, Entry>*> out;
    out.reserve(entries_.size());
    for (const auto& kv : entries_) out.push_back(&kv);
    auto by_count = [](const auto* a, const auto* b) {
      return a->second.total != b->second.total ? a->second.total > b->second.total
                                                : a->first < b->first;
    };
    const std::size_t n = std::min(limit, out.size());
    std::partial_sort(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(n), out.end(),
                      by_count);
    out.resize(n);
    return out;
  }

  std::uint64_t other_events() const { return other_events_; }

 private:
  // `s` cut to kMaxExampleBytes on a UTF-8 character boundary.
  static std::string Cut(const std::string& s) {
    if (s.size() <= kMaxExampleBytes) return s;
    std::size_t n = kMaxExampleBytes;
    while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
    return s.substr(0, n) + "…";
  }

  const std::size_t buckets_;
  std::unordered_map<std::string, Entry> entries_;
  std::uint64_t other_events_ = 0;
  std::size_t seen_before_ = 0;
  MessageReader messages_;
  std::string message_, template_;  // reused per event
};

struct RangeSummary {
  TimeMs from = 0, to = 0;
  std::uint64_t events_read = 0;
  bool complete = true;
};

struct PatternsResult {
  HistogramRange range;
  TimeMs interval = 1;
  std::size_t buckets = 0;
  RangeSummary current, previous;
  std::vector<const std::pair<const std::string, PatternTable::Entry>*> top;
  std::uint64_t other_events = 0;
};

RangeSummary Summarize(TimeMs from, TimeMs to, const std::vector<BucketRead>& reads) {
  RangeSummary s{from, to};
  for (const BucketRead& r : reads) {
    s.events_read += r.read;
    s.complete = s.complete && !r.more;
  }
  return s;
}

// Exact per-bucket totals where the sample did not read a bucket whole
// (empty when it read them all). A full last page leaves `more` set even
// when nothing follows: the totals settle it, and `complete` with them.
Result<std::vector<std::uint64_t>> BucketTotals(storage::EventStore& store,
                                                const query::Node& query, const Buckets& b,
                                                const HistogramRange& range,
                                                std::vector<BucketRead>& reads,
                                                storage::Clock::time_point deadline) {
  if (std::none_of(reads.begin(), reads.end(), [](const BucketRead& r) { return r.more; }))
    return std::vector<std::uint64_t>{};
  storage::SearchRequest sreq;
  sreq.query = &query;
  sreq.from = range.from;
  sreq.to = range.to;
  sreq.deadline = deadline;
  storage::HistogramSpec spec;
  spec.interval = b.interval;
  auto table = store.Histogram(sreq, spec);
  if (!table.ok()) return table.status();
  std::vector<std::uint64_t> totals(b.count);
  for (const auto& bucket : table->buckets) {
    const auto i = static_cast<std::size_t>((bucket.start - b.first) / b.interval);
    if (bucket.start >= b.first && i < b.count) totals[i] = bucket.total.count;
  }
  for (std::size_t i = 0; i < b.count; ++i) reads[i].more = totals[i] > reads[i].read;
  return totals;
}

std::string Body(const PatternsResult& r, const Buckets& b, std::int64_t took_ms) {
  JsonWriter w;
  w.BeginObject().Key("patterns").BeginArray();
  for (const auto* kv : r.top) {
    const PatternTable::Entry& e = kv->second;
    w.BeginObject().Key("template").String(kv->first).Key("count").Uint(e.total);
    w.Key("new").Bool(!e.seen_before).Key("series").BeginArray();
    for (std::uint64_t c : e.counts) w.Uint(c);
    w.EndArray().Key("example").String(e.example).EndObject();
  }
  w.EndArray().Key("buckets").BeginArray();
  for (std::size_t i = 0; i < b.count; ++i)
    w.String(FormatRfc3339Ms(b.first + static_cast<TimeMs>(i) * b.interval));
  w.EndArray().Key("interval_ms").Int(r.interval);
  w.Key("from").String(FormatRfc3339Ms(r.range.from)).Key("to").String(FormatRfc3339Ms(r.range.to));
  w.Key("events_read").Uint(r.current.events_read).Key("complete").Bool(r.current.complete);
  w.Key("previous").BeginObject();
  w.Key("from").String(FormatRfc3339Ms(r.previous.from));
  w.Key("to").String(FormatRfc3339Ms(r.previous.to));
  w.Key("events_read").Uint(r.previous.events_read).Key("complete").Bool(r.previous.complete);
  w.EndObject();
  w.Key("other_events").Uint(r.other_events).Key("took_ms").Int(took_ms);
  w.EndObject();
  return w.Release();
}

}  // namespace

boost::asio::awaitable<HttpResponse> HandlePatterns(HttpRequest req, ApiContext& ctx) {
  const auto start = storage::Clock::now();
  const auto deadline = start + ctx.query_timeout;
  PatternParams pp;
  const TimeMs now = ctx.now();
  auto parsed_params = ParseQueryParams(
      req.target(), now, [&](auto key, auto value) { return ReadParam(key, value, pp); });
  if (auto* err = std::get_if<std::string>(&parsed_params)) co_return BadParamResponse(req, *err);
  const QueryParams& p = std::get<QueryParams>(parsed_params);
  auto parsed = ParseRequestQuery(p.q, now);
  if (auto* err = std::get_if<QueryError>(&parsed)) co_return QueryErrorResponse(req, *err);
  const query::Node& root = std::get<query::Node>(parsed);

  // The table lives here, not in the lambda: the answer points into it.
  std::optional<PatternTable> table;
  std::optional<Buckets> buckets;
  auto result = co_await storage::RunBlocking(ctx.workers, [&]() -> Result<PatternsResult> {
    PatternsResult r;
    auto range = ResolveHistogramRange(p.from, p.to, ctx.store, now, deadline);
    if (!range.ok()) return range.status();
    r.range = *range;
    r.interval = AutoInterval(std::max<TimeMs>(r.range.to - r.range.from, 1));
    buckets.emplace(r.range.from, r.range.to, r.interval);
    table.emplace(buckets->count);
    auto reads = SampleRange(ctx.store, root, r.range.from, r.range.to, *buckets, pp.sample,
                             deadline, [&](const storage::StoredEvent& ev, std::size_t i) {
                               table->Add(ev, i);
                               return true;
                             });
    if (!reads.ok()) return reads.status();
    auto totals = BucketTotals(ctx.store, root, *buckets, r.range, *reads, deadline);
    if (!totals.ok()) return totals.status();
    table->Estimate(*reads, *totals);
    r.current = Summarize(r.range.from, r.range.to, *reads);

    // The previous range of the same length, bucketed alike.
    const TimeMs span = r.range.to - r.range.from;
    const TimeMs prev_from = std::max(kMinEventTime, r.range.from - span);
    // Reading stops once every template has been seen there: `new` is then
    // exact whatever remains unread.
    const Buckets prev(prev_from, r.range.from, r.interval);
    bool all_seen = false;
    auto prev_reads = SampleRange(ctx.store, root, prev_from, r.range.from, prev, pp.sample,
                                  deadline, [&](const storage::StoredEvent& ev, std::size_t) {
                                    return !(all_seen = !table->MarkSeenBefore(ev));
                                  });
    if (!prev_reads.ok()) return prev_reads.status();
    r.previous = Summarize(prev_from, r.range.from, *prev_reads);
    r.previous.complete = r.previous.complete || all_seen;
    r.top = table->Top(pp.limit);
    r.other_events = table->other_events();
    return r;
  });
  if (!result.ok()) co_return StorageErrorResponse(req, result.status());
  const auto took =
      std::chrono::duration_cast<std::chrono::milliseconds>(storage::Clock::now() - start).count();
  co_return MakeJsonResponse(req, http::status::ok, Body(*result, *buckets, took));
}

}  // namespace dashcam::api
