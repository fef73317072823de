#include "storage/clickhouse/ch_store.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <random>
#include <unordered_map>

#include <openssl/evp.h>

#include <fmt/format.h>
#include <boost/json.hpp>

#include "storage/attrs_codec.h"
#include "storage/clickhouse/ch_client.h"
#include "storage/clickhouse/ch_literal.h"
#include "storage/clickhouse/ch_query_compiler.h"
#include "storage/clickhouse/ch_row.h"
#include "storage/clickhouse/ch_rows.h"
#include "storage/clickhouse/ch_schema.h"
#include "storage/histogram_accumulator.h"
#include "storage/scan_exploration.h"
#include "storage/scan_ranges.h"
#include "storage/split_key_sampler.h"
#include "storage/time_format.h"
#include "storage/token_pattern.h"

namespace dashcam::storage::clickhouse {
namespace {

namespace json = boost::json;

// The columns a hit is read from, and how the answer is asked for.
constexpr const char* kHitColumns = "key, t, id, idx, level, source";
constexpr const char* kJsonRows = " FORMAT JSONEachRow";
const ChSettings kReadSettings = {{"output_format_json_quote_64bit_integers", "0"}};

// 18.16 reads (and for LIMIT 1 BY, sorts) every matching key of a range
// before ORDER BY ... LIMIT, so a page reads windows of time in turn from
// the end it starts at: the first small, each next one eight times wider
// (a scan's, wider still when its matches so far are sparse: NextScanWindow),
// until it has enough or has reached the range's other end. A window holding
// far more events than the page wants costs a read of them all (an hour of
// a busy fleet: a million); an empty one, a round trip.
constexpr TimeMs kFirstWindow = 60'000;
constexpr TimeMs kMinWindow = 1'000;
constexpr TimeMs kWindowGrowth = 8;

TimeMs NextWindow(TimeMs span) {
  return span > kMaxEventTime / kWindowGrowth ? kMaxEventTime : span * kWindowGrowth;
}

// A scan that has found nothing in its first two windows counts its
// matches over as much time as the window two steps after its next one
// would read (64 times the next), instead of reading the windows up to it:
// one round trip where a sparse query (a run's first failure over its
// hours) took two or three more, and a count needs no sort. (Counting after
// the first window already cost the context view a round trip: its
// neighbours are often in the second.)
constexpr int kWindowsBeforeProbing = 2;
constexpr int kProbeSteps = 2;

TimeMs ProbeWindow(TimeMs span) {
  for (int i = 0; i < kProbeSteps; ++i) span = NextWindow(span);
  return span;
}

// A scan's window: `span` of time (at most all of what is left, [a, b)) at
// the end of [a, b) the scan reads from, and its keys within the request's.
struct ScanWindow {
  TimeMs start = 0, end = 0;
  EventKey lo = 0, hi = 0;
};

ScanWindow WindowOf(const ScanRequest& req, TimeMs a, TimeMs b, TimeMs span) {
  const TimeMs width = std::min(span, b - a);
  ScanWindow w;
  w.start = req.ascending ? a : b - width;
  w.end = req.ascending ? a + width : b;
  w.lo = std::max(req.lo, ChEventKey(w.start, 0));
  w.hi = std::min(req.hi, ChEventKey(w.end, 0) - 1);
  return w;
}

// Takes window `w` off what is left of the scan, [a, b).
void Pass(const ScanRequest& req, const ScanWindow& w, TimeMs& a, TimeMs& b) {
  (req.ascending ? a : b) = req.ascending ? w.end : w.start;
}

// A row can go between the read of its key and the read of the row (a
// merge collapses the copies of a resent event, a day is dropped): the
// window is then read again, up to this many times in all.
constexpr int kReadAttempts = 3;

// "SELECT <columns> FROM (SELECT <key> AS key, <time> AS t, * FROM table
// WHERE <conditions>)": the inner query names the computed columns.
std::string FromEvents(const std::string& table, const std::string& where) {
  return fmt::format("(SELECT {} AS key, {} AS t, * FROM {} WHERE {})", kChEventKey, kChTimeMs,
                     table, where);
}

// Conditions on the time column for events in [from, to): whole seconds, so
// that ClickHouse prunes partitions and reads only the part of the primary
// key it needs, then milliseconds exactly. Seconds are clamped to what a
// DateTime holds (toDateTime would wrap a larger number).
constexpr TimeMs kMaxSeconds = 4294967295;

std::string TimeBounds(TimeMs from, TimeMs to) {
  auto seconds = [](TimeMs t) { return std::clamp<TimeMs>(t / 1000, 0, kMaxSeconds); };
  return fmt::format("ts >= toDateTime({}) AND ts <= toDateTime({}) AND {} >= {} AND {} < {}",
                     seconds(from), seconds(to - 1), kChTimeMs, from, kChTimeMs, to);
}

Result<std::vector<StoredEvent>> ParseHits(const std::string& body) {
  std::vector<StoredEvent> out;
  Status s = ForEachJsonRow(body, [&](const json::object& o) {
    StoredEvent e;
    try {  // a missing column or another type throws
      e.key = json::value_to<std::int64_t>(o.at("key"));
      e.ts_ms = json::value_to<std::int64_t>(o.at("t"));
      e.id = json::value_to<std::string>(o.at("id"));
      e.index = json::value_to<std::string>(o.at("idx"));
      e.level = json::value_to<std::string>(o.at("level"));
      e.source = json::value_to<std::string>(o.at("source"));
    } catch (const std::exception&) {
      return Status::Internal("ClickHouse: unexpected row");
    }
    out.push_back(std::move(e));
    return Status::Ok();
  });
  if (!s.ok()) return s;
  return out;
}

// The one row of the count query below (JSONEachRow).
Result<MatchSummary> ParseMatchSummary(const std::string& body) {
  std::optional<MatchSummary> out;
  Status s = ForEachJsonRow(body, [&](const json::object& o) {
    try {  // a missing column or another type throws
      out = MatchSummary{json::value_to<std::uint64_t>(o.at("n")),
                         json::value_to<std::uint64_t>(o.at("newest")),
                         json::value_to<std::uint64_t>(o.at("oldest"))};
    } catch (const std::exception&) {
      return Status::Internal("ClickHouse: unexpected count row");
    }
    return Status::Ok();
  });
  if (!s.ok()) return s;
  if (!out) return Status::Internal("ClickHouse: no count row");
  return *out;
}

// A search's first window, from the density of its matches: on average
// `wanted` of them four times over (matches bunch in time). The next
// windows widen from there.
TimeMs FirstSearchWindow(const MatchSummary& m, std::size_t wanted) {
  if (m.n == 0 || m.newest < m.oldest) return kFirstWindow;
  const long double span = static_cast<long double>(m.newest - m.oldest + 1) * 4.0L *
                           static_cast<long double>(wanted) / static_cast<long double>(m.n);
  return static_cast<TimeMs>(std::clamp<long double>(span, kMinWindow, kMaxEventTime));
}

// A scan's next window after one that left its page short: wide enough for
// the events still wanted four times over at the density seen so far
// (`found` in `read` ms), and at least the usual growth.
TimeMs NextScanWindow(TimeMs span, TimeMs read, std::size_t found, std::size_t still_wanted) {
  const TimeMs grown = NextWindow(span);
  if (found == 0) return grown;
  const long double fit = static_cast<long double>(read) * 4.0L *
                          static_cast<long double>(still_wanted) / static_cast<long double>(found);
  return std::max(grown, static_cast<TimeMs>(std::min<long double>(fit, kMaxEventTime)));
}

// One string column of each JSONEachRow row of `body`.
Result<std::vector<std::string>> ParseStrings(const std::string& body, std::string_view column) {
  std::vector<std::string> out;
  Status s = ForEachJsonRow(body, [&](const json::object& o) {
    const json::value* cell = o.if_contains(column);
    const json::string* text = cell == nullptr ? nullptr : cell->if_string();
    if (text == nullptr) return Status::Internal("ClickHouse: unreadable row");
    out.emplace_back(*text);
    return Status::Ok();
  });
  if (!s.ok()) return s;
  return out;
}

// Most distinct tokens (or keyword values) one fuzzy leaf may match: each
// becomes part of the query's text.
constexpr std::size_t kMaxFuzzyMatches = 10'000;

}  // namespace

Result<std::unique_ptr<ClickHouseStore>> ClickHouseStore::Open(ChStoreOptions options,
                                                               const Log& log) {
  auto nodes = InitClickHouseSchema(options.cluster);
  if (!nodes.ok()) return nodes.status();
  for (const ChNodeReport& n : *nodes) {
    log.Info("clickhouse_node", {{"host", n.host.host},
                                 {"port", static_cast<std::uint64_t>(n.host.port)},
                                 {"version", n.version},
                                 {"shards", static_cast<std::uint64_t>(n.shards)}});
  }
  std::unique_ptr<ClickHouseStore> store(new ClickHouseStore(std::move(options), log));
  ClickHouseStore* self = store.get();
  store->retention_ = std::make_unique<RetentionEnforcer>(
      self->options_.retention, [self] { return self->Partitions(); },
      [self](std::int64_t day) { return self->DropDay(day); }, self->now_, log,
      self->options_.metrics);
  store->retention_->Start();
  return store;
}

ClickHouseStore::ClickHouseStore(ChStoreOptions options, const Log& log)
    : options_(std::move(options)),
      log_(log),
      table_(ChIdentifier(options_.cluster.database) + "." + ChIdentifier(kDistributedTable)),
      next_seq_(std::random_device{}()),
      now_(options_.now ? options_.now : WallClockMs),
      tail_feed_(table_, now_()),
      commits_(options_.metrics),
      writer_([this] { WriterLoop(); }) {
  if (options_.tail_poll.count() > 0) poller_ = std::thread([this] { PollLoop(); });
}

void ClickHouseStore::PollLoop() {
  std::unique_lock lock(mu_);
  while (!poll_cv_.wait_for(lock, options_.tail_poll, [&] { return closing_; })) {
    lock.unlock();
    bool observed = false;
    {
      std::lock_guard olock(observer_mu_);
      observed = static_cast<bool>(observer_);
    }
    if (observed) {
      auto fresh = tail_feed_.Poll(
          [&](const std::string& sql) {
            return Query(sql, Clock::now() + options_.cluster.timeout);
          },
          now_());
      if (!fresh.ok()) {
        log_.Warn("clickhouse_tail_poll_failed", {{"error", fresh.status().ToString()}});
      } else if (!fresh->empty()) {
        std::lock_guard olock(observer_mu_);
        for (const auto& [day, keys] : *fresh) {
          if (observer_) observer_(CommitNotice{day, keys});
        }
      }
    }
    lock.lock();
  }
}

ClickHouseStore::~ClickHouseStore() {
  Close();
}

void ClickHouseStore::Close() {
  std::call_once(closed_, [this] {
    if (retention_) retention_->Stop();
    {
      std::lock_guard lock(mu_);
      closing_ = true;
    }
    cv_.notify_all();
    poll_cv_.notify_all();
    writer_.join();
    if (poller_.joinable()) poller_.join();
  });
}

namespace {

// An id for an event the client gave none: its time, then a hash of what
// the event is (time, index, document) and of how many identical events
// came before it in the same batch. A client that resends a batch after an
// error (as Filebeat does after a 503 item) so sends the same ids again, and
// reads collapse the copies (ch_schema.h); identical lines within one
// request stay apart. The time (milliseconds, 11 hex digits) lets Get read
// one millisecond instead of every id; the hash only has to tell apart the
// events of one millisecond: 64 bits, 16 hex digits.
constexpr std::size_t kContentIdTimeDigits = 11;
constexpr std::size_t kContentIdDigits = kContentIdTimeDigits + 16;

std::string ContentId(const Record& r, std::uint32_t occurrence) {
  std::string bytes = fmt::format("{}\x1f{}\x1f{}\x1f", r.ts_ms, occurrence, r.index);
  bytes += r.source;
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(bytes.data(), bytes.size(), md, &len, EVP_sha256(), nullptr);
  std::string id = fmt::format("{:0{}x}", r.ts_ms, kContentIdTimeDigits);
  for (unsigned i = 0; i < 8; ++i) fmt::format_to(std::back_inserter(id), "{:02x}", md[i]);
  return id;
}

// The time an id of ContentId's form names; nullopt for any other id. A
// client's own id may have that form too (and another time), so a miss at
// that time is not an answer.
std::optional<TimeMs> ContentIdTime(std::string_view id) {
  if (id.size() != kContentIdDigits) return std::nullopt;
  for (char c : id) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return std::nullopt;
  }
  TimeMs t = 0;
  const char* const time_end = id.data() + kContentIdTimeDigits;
  const auto parsed = std::from_chars(id.data(), time_end, t, 16);
  if (parsed.ec != std::errc() || parsed.ptr != time_end) return std::nullopt;
  if (t < kMinEventTime || t >= kMaxEventTime) return std::nullopt;
  return t;
}

}  // namespace

void ClickHouseStore::Append(std::vector<Record> records, AppendCallback done) {
  std::size_t bytes = 0;
  std::map<std::string, std::uint32_t> seen;  // ids given so far in this batch
  for (Record& r : records) {
    bytes += r.ApproxBytes();
    if (!r.doc_id.empty()) continue;
    std::string id = ContentId(r, 0);
    if (std::uint32_t& n = seen[id]; n++ > 0) id = ContentId(r, n - 1);
    r.doc_id = std::move(id);
  }
  {
    std::unique_lock lock(mu_);
    if (closing_) {
      lock.unlock();
      done(AppendResult{Status::Unavailable("storage is closed"), {}, {}});
      return;
    }
    if (queued_bytes_ > 0 && queued_bytes_ + bytes > options_.max_queued_bytes) {
      lock.unlock();
      done(AppendResult{Status::Overloaded("the ClickHouse write queue is full"), {}, {}});
      return;
    }
    queued_bytes_ += bytes;
    queued_events_ += records.size();
    queue_.push_back(Pending{std::move(records), std::move(done), bytes});
  }
  cv_.notify_one();
}

void ClickHouseStore::WriterLoop() {
  for (;;) {
    std::vector<Pending> batch;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return closing_ || !queue_.empty(); });
      if (queue_.empty()) return;  // closing, and everything written
      std::size_t bytes = 0;
      while (!queue_.empty() &&
             (batch.empty() || bytes + queue_.front().bytes <= options_.insert_bytes)) {
        bytes += queue_.front().bytes;
        batch.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
    }
    std::size_t bytes = 0, events = 0;
    for (const Pending& p : batch) {
      bytes += p.bytes;
      events += p.records.size();
    }
    const auto start = Clock::now();
    const Status s = Insert(std::move(batch));
    commits_.Record(events, std::chrono::duration<double>(Clock::now() - start).count(), s.ok());
    std::lock_guard lock(mu_);
    queued_bytes_ -= bytes;
    queued_events_ -= events;
    last_insert_ = s;
  }
}

Status ClickHouseStore::Insert(std::vector<Pending> batch) {
  ChRowEncoder encoder;
  std::string rows;
  const TimeMs ins_ms = now_();
  std::vector<AppendResult> results(batch.size());
  std::map<std::int64_t, std::vector<EventKey>> keys_by_day;
  for (std::size_t b = 0; b < batch.size(); ++b) {
    AppendResult& r = results[b];
    for (const Record& rec : batch[b].records) {
      const std::uint32_t seq = next_seq_++;
      if (Status s = encoder.Append(rec, rec.doc_id, seq, ins_ms, rows); !s.ok()) {
        if (r.status.ok()) r.status = s;
        r.outcomes.push_back(RecordOutcome::kFailed);
        r.ids.emplace_back();
        continue;
      }
      r.outcomes.push_back(RecordOutcome::kCreated);
      r.ids.push_back(rec.doc_id);
      keys_by_day[DayOf(rec.ts_ms)].push_back(ChEventKey(rec.ts_ms, seq));
    }
  }
  Status inserted;
  if (!rows.empty()) {
    // Before the insert, so that a poll running meanwhile does not take
    // these for another instance's.
    for (const AppendResult& r : results) tail_feed_.NoteOwn(r.ids, ins_ms);
    const std::string sql = "INSERT INTO " + table_ + " FORMAT JSONEachRow";
    const ChSettings settings = {{"insert_distributed_sync", "1"}};
    for (std::size_t tried = 0; tried < options_.cluster.hosts.size(); ++tried) {
      const ChHost& host = options_.cluster.hosts[next_host_++ % options_.cluster.hosts.size()];
      inserted = ChClient(host, options_.cluster.timeout).Insert(sql, rows, settings);
      if (inserted.code() != StatusCode::kUnavailable) break;
    }
  }
  if (!inserted.ok()) {
    log_.Warn("clickhouse_insert_failed", {{"error", inserted.ToString()}});
    for (AppendResult& r : results) {
      r.status = inserted;
      std::fill(r.outcomes.begin(), r.outcomes.end(), RecordOutcome::kFailed);
      for (std::string& id : r.ids) id.clear();
    }
  } else {
    std::lock_guard lock(observer_mu_);
    if (observer_) {
      for (auto& [day, keys] : keys_by_day) {
        std::sort(keys.begin(), keys.end());
        observer_(CommitNotice{day, keys});
      }
    }
  }
  if (inserted.ok()) {
    // Counted before any client is told, so that a status read right after
    // an acknowledgement includes its events.
    std::size_t events = 0;
    for (const Pending& p : batch) events += p.records.size();
    std::lock_guard lock(mu_);
    inserted_events_ += events;
    inserted_rate_.Add(events);
  }
  for (std::size_t b = 0; b < batch.size(); ++b) batch[b].done(std::move(results[b]));
  return inserted;
}

WriterStats ClickHouseStore::writer_stats() const {
  std::lock_guard lock(mu_);
  WriterStats w;
  w.queued_bytes = queued_bytes_;
  w.queued_events = queued_events_;
  w.max_queue_bytes = options_.max_queued_bytes;
  w.committed_events = inserted_events_;
  w.events_last_minute = inserted_rate_.LastMinute();
  w.last_commit = last_insert_;
  w.stopping = closing_;
  return w;
}

void ClickHouseStore::SetCommitObserver(CommitObserver observer) {
  std::lock_guard lock(observer_mu_);
  observer_ = std::move(observer);
}

Result<std::string> ClickHouseStore::Query(const std::string& sql, Clock::time_point deadline,
                                           bool* partial) {
  const std::size_t n = options_.cluster.hosts.size();
  const std::size_t first = next_host_++;
  // Every node in turn; then, when partial answers are allowed and some
  // node answered that part of the cluster is down, once more skipping it.
  const bool may_skip = partial != nullptr && options_.allow_partial;
  Status last;
  for (std::size_t tried = 0; tried < (may_skip ? 2 * n : n); ++tried) {
    const auto now = Clock::now();
    if (now >= deadline) return Status::DeadlineExceeded("query deadline exceeded");
    const auto left =
        deadline == Clock::time_point::max()
            ? options_.cluster.timeout
            : std::min(options_.cluster.timeout,
                       std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now) +
                           std::chrono::milliseconds(1));
    const bool skipping = tried >= n;
    ChSettings settings = kReadSettings;
    if (skipping) settings.emplace_back("skip_unavailable_shards", "1");
    // ClickHouse keeps running a query its client has left: the budget,
    // rounded up to its whole seconds, stops it there too.
    settings.emplace_back("max_execution_time",
                          std::to_string(std::chrono::ceil<std::chrono::seconds>(left).count()));
    auto answer = ChClient(options_.cluster.hosts[(first + tried) % n], left).Query(sql, settings);
    if (answer.ok() && skipping) *partial = true;
    if (answer.ok() || answer.status().code() != StatusCode::kUnavailable) return answer;
    last = answer.status();
    if (Clock::now() >= deadline) return Status::DeadlineExceeded("query deadline exceeded");
  }
  return last;
}

Result<std::vector<std::string>> ClickHouseStore::ExpandFuzzy(const query::Node& leaf,
                                                              const std::string& word, TimeMs from,
                                                              TimeMs to, Clock::time_point deadline,
                                                              bool* partial) {
  const std::string& field = leaf.term.field;
  const bool keyword = IsKeywordField(field);
  const std::string prefix =
      keyword || query::IsMessageField(field) ? "" : ChTokenName(field) + kChNameMark;
  std::string sql;
  if (keyword) {
    sql = fmt::format(
        "SELECT DISTINCT v FROM {} ARRAY JOIN str_names AS n, str_values AS v WHERE "
        "{} AND n = {}{}",
        table_, TimeBounds(from, to), ChString(field), kJsonRows);
  } else {
    sql = fmt::format(
        "SELECT DISTINCT v FROM {} ARRAY JOIN splitByChar(' ', {}) AS v WHERE {} AND v != ''{}{}",
        table_, prefix.empty() ? "tokens" : "ftokens", TimeBounds(from, to),
        prefix.empty()
            ? std::string()
            : fmt::format(" AND substring(v, 1, {}) = {}", prefix.size(), ChString(prefix)),
        kJsonRows);
  }
  auto body = Query(sql, deadline, partial);
  if (!body.ok()) return body.status();
  auto values = ParseStrings(*body, "v");
  if (!values.ok()) return values.status();
  const unsigned max = std::min(leaf.term.distance, 2u);
  std::vector<std::string> out;
  for (std::string& v : *values) {
    const std::string_view candidate = std::string_view(v).substr(prefix.size());
    if (BoundedEditDistance(candidate, word, max) > max) continue;
    if (out.size() == kMaxFuzzyMatches) {
      return Status::InvalidArgument(
          fmt::format("fuzzy `{}` at byte {} matches more than {} distinct terms", leaf.term.text,
                      leaf.position, kMaxFuzzyMatches));
    }
    out.emplace_back(candidate);
  }
  std::sort(out.begin(), out.end());
  return out;
}

Result<std::string> ClickHouseStore::Compile(const query::Node& query, TimeMs from, TimeMs to,
                                             Clock::time_point deadline, bool* partial) {
  return CompileChQuery(query, [&](const query::Node& leaf, const std::string& word) {
    return ExpandFuzzy(leaf, word, from, to, deadline, partial);
  });
}

Result<SearchPage> ClickHouseStore::Search(const SearchRequest& req) {
  SearchPage page;
  auto where = Compile(*req.query, req.from, req.to, req.deadline, &page.partial);
  if (!where.ok()) return where.status();
  // The count and the newest match's time in one pass: the windows below
  // then start where the hits are.
  TimeMs end = req.to;
  if (req.before) end = std::min(end, (*req.before >> 20) + 1);
  // One hit more than asked tells whether there is a next page.
  const std::size_t wanted = req.limit + 1;
  TimeMs span = kFirstWindow;
  if (req.count_limit > 0) {
    auto counted = CountMatches(TimeBounds(req.from, req.to) + " AND (" + *where + ")",
                                "uniqExact(id)", req.deadline, &page.partial);
    if (!counted.ok()) return counted.status();
    page.total_exact = counted->n < req.count_limit;  // as SQLite: counting stops at the limit
    page.total = std::min<std::uint64_t>(counted->n, req.count_limit);
    if (counted->n == 0) return page;
    end = std::min<TimeMs>(end, static_cast<TimeMs>(counted->newest) + 1);
    span = FirstSearchWindow(*counted, wanted);
  }
  // Newest first, one window at a time back from the end.
  for (; page.hits.size() < wanted && end > req.from; span = NextWindow(span)) {
    const TimeMs start = end - std::min(span, end - req.from);
    KeyQuery q;
    q.conditions = TimeBounds(start, end) + " AND (" + *where + ")";
    q.lo = ChEventKey(start, 0);
    q.hi = req.before ? std::min(*req.before, ChEventKey(end, 0)) - 1 : ChEventKey(end, 0) - 1;
    q.limit = wanted - page.hits.size();
    std::vector<StoredEvent> hits;
    for (int attempt = 1;; ++attempt) {
      auto keys = MatchingKeys(q, req.deadline, &page.partial);
      if (!keys.ok()) return keys.status();
      auto rows = RowsOf(*keys, false, req.deadline, &page.partial);
      if (!rows.ok()) return rows.status();
      hits = std::move(*rows);
      if (hits.size() == keys->size() || attempt == kReadAttempts) break;
    }
    for (StoredEvent& e : hits) page.hits.push_back(std::move(e));
    end = start;
  }
  if (page.hits.size() == wanted) {
    page.hits.pop_back();
    if (!page.hits.empty()) page.next = page.hits.back().key;
  }
  return page;
}

Result<std::vector<HistogramBucket>> ClickHouseStore::Histogram(const SearchRequest& req,
                                                                TimeMs interval) {
  if (interval <= 0) return Status::InvalidArgument("histogram interval must be positive");
  auto where = Compile(*req.query, req.from, req.to, req.deadline);
  if (!where.ok()) return where.status();
  auto body = Query(fmt::format("SELECT intDiv({0}, {1}) * {1} AS b, uniqExact(id) FROM {2} "
                                "WHERE {3} AND ({4}) GROUP BY b ORDER BY b FORMAT TabSeparated",
                                kChTimeMs, interval, table_, TimeBounds(req.from, req.to), *where),
                    req.deadline);
  if (!body.ok()) return body.status();
  std::vector<HistogramBucket> out;
  Status s = ForEachLine(*body, [&](std::string_view line) {
    HistogramBucket b;
    const auto tab = line.find('\t');
    if (tab == std::string_view::npos ||
        std::from_chars(line.data(), line.data() + tab, b.start).ec != std::errc() ||
        std::from_chars(line.data() + tab + 1, line.data() + line.size(), b.count).ec !=
            std::errc()) {
      return Status::Internal("ClickHouse: unexpected histogram row");
    }
    out.push_back(b);
    return Status::Ok();
  });
  if (!s.ok()) return s;
  return out;
}

Result<HistogramTable> ClickHouseStore::Histogram(const SearchRequest& req,
                                                  const HistogramSpec& spec) {
  if (!spec.value_field.empty() || (!spec.split_field.empty() && spec.split_field != kLevelSplit &&
                                    spec.split_field != kIndexField)) {
    return HistogramByScan(*this, req, spec);  // reads the documents
  }
  if (!spec.split_field.empty()) return ColumnSplitHistogram(req, spec);
  auto buckets = Histogram(req, spec.interval);
  if (!buckets.ok()) return buckets.status();
  HistogramTable table;
  for (const HistogramBucket& b : *buckets) {
    HistogramTable::Bucket out;
    out.start = b.start;
    out.total.count = b.count;
    table.buckets.push_back(std::move(out));
  }
  return table;
}

// Split by the level or index column: counted per bucket and value by
// ClickHouse. The series are the most frequent values over the range, as
// the accumulator chooses them; past the values it can discover, the
// split_size most frequent of the answer's counts (exact, not sampled).
Result<HistogramTable> ClickHouseStore::ColumnSplitHistogram(const SearchRequest& req,
                                                             const HistogramSpec& spec) {
  if (req.query == nullptr || spec.interval <= 0) {
    return Status::InvalidArgument("bad histogram request");
  }
  const TimeMs from = std::max(req.from, kMinEventTime), to = std::min(req.to, kMaxEventTime);
  if (from >= to) return HistogramTable{};
  if (Status s = HistogramAccumulator::CheckBucketCount(from, to, spec.interval); !s.ok()) {
    return s;
  }
  auto where = Compile(*req.query, from, to, req.deadline);
  if (!where.ok()) return where.status();
  const char* column = spec.split_field == kLevelSplit ? "level" : "idx";
  auto body = Query(fmt::format("SELECT intDiv({0}, {1}) * {1} AS b, {2} AS s, uniqExact(id) AS n "
                                "FROM {3} WHERE {4} AND ({5}) GROUP BY b, s{6}",
                                kChTimeMs, spec.interval, column, table_, TimeBounds(from, to),
                                *where, kJsonRows),
                    req.deadline);
  if (!body.ok()) return body.status();
  struct Row {
    TimeMs b = 0;
    std::string s;
    std::uint64_t n = 0;
  };
  std::vector<Row> rows;
  Status st = ForEachJsonRow(*body, [&](const boost::json::object& o) {
    const auto* b = o.if_contains("b");
    const auto* v = o.if_contains("s");
    const auto* c = o.if_contains("n");
    if (!b || !v || !c || !v->is_string() || !b->is_number() || !c->is_number()) {
      return Status::Internal("ClickHouse: bad histogram row");
    }
    rows.push_back(
        {b->to_number<TimeMs>(), std::string(v->get_string()), c->to_number<std::uint64_t>()});
    return Status::Ok();
  });
  if (!st.ok()) return st;
  auto fill = [&](HistogramAccumulator& acc) {
    for (const Row& r : rows) {
      const std::string_view value = r.s;
      const std::span<const std::string_view> split =
          r.s.empty() ? std::span<const std::string_view>() : std::span(&value, 1);
      // The first bucket may start before `from`, where Add ignores times.
      if (!acc.Add(std::max(r.b, from), split, {}, r.n)) return false;
    }
    return true;
  };
  HistogramAccumulator discovering(from, to, spec, std::nullopt);
  if (fill(discovering)) return discovering.Finish(false);
  std::unordered_map<std::string, std::uint64_t> totals;
  for (const Row& r : rows) {
    if (!r.s.empty()) totals[r.s] += r.n;
  }
  HistogramAccumulator with_keys(from, to, spec, MostFrequent(totals, spec.split_size));
  fill(with_keys);
  return with_keys.Finish(false);
}

Result<TermsResult> ClickHouseStore::TopValues(const SearchRequest& req, const std::string& field,
                                               std::size_t size, std::size_t max_events) {
  return TopValuesByScan(*this, req, field, size, max_events);
}

// A page reads widening windows of time from the scan's start (as Search
// does), keeping what each finds, rather than the whole rest of the range.
Result<ScanPage> ClickHouseStore::Scan(const ScanRequest& req) {
  if (req.cancelled != nullptr && req.cancelled->load()) return Status::Unavailable("cancelled");
  if (!req.ranges.empty()) {
    return ScanRangeByRange(req, [this](const ScanRequest& one) { return Scan(one); });
  }
  const TimeMs from = std::max<TimeMs>(req.lo >> 20, 0);
  const TimeMs to = std::min<TimeMs>(req.hi >> 20, kMaxEventTime) + 1;
  if (from >= to || req.limit == 0) return ScanPage{};
  auto where = Compile(*req.query, from, to, req.deadline);
  if (!where.ok()) return where.status();
  ScanPage page;
  std::size_t bytes = 0;
  TimeMs a = from, b = to;  // what is left: [a, b)
  TimeMs span = kFirstWindow;
  TimeMs origin = req.ascending ? a : b;  // where the density is measured from
  for (int windows = 0; a < b; ++windows) {
    if (windows >= kWindowsBeforeProbing && page.events.empty()) {
      auto probed = SkipToMatches(req, *where, a, b, span);
      if (!probed.ok()) return probed.status();
      if (!*probed) return page;  // none left
      origin = req.ascending ? a : b;
    }
    const ScanWindow w = WindowOf(req, a, b, span);
    KeyQuery q;
    q.conditions = TimeBounds(w.start, w.end) + " AND (" + *where + ")";
    q.lo = w.lo;
    q.hi = w.hi;
    q.ascending = req.ascending;
    q.limit = req.limit - page.events.size();
    const std::size_t budget = req.max_bytes == std::numeric_limits<std::size_t>::max()
                                   ? req.max_bytes
                                   : req.max_bytes - bytes;
    bool full = false;
    std::vector<StoredEvent> hits;
    for (int attempt = 1;; ++attempt) {
      auto keys = MatchingKeys(q, req.deadline, nullptr);
      if (!keys.ok()) return keys.status();
      bool vanished = false;
      full = false;
      auto rows = ScanRowsOf(*keys, req, budget, &full, &vanished);
      if (!rows.ok()) return rows.status();
      hits = std::move(*rows);
      if (!vanished || attempt == kReadAttempts) break;
    }
    for (StoredEvent& e : hits) {
      bytes += e.source.size();
      page.events.push_back(std::move(e));
    }
    if (full || page.events.size() == req.limit) {
      page.more = true;
      return page;
    }
    Pass(req, w, a, b);
    const TimeMs read = req.ascending ? a - origin : origin - b;
    span =
        NextScanWindow(w.end - w.start, read, page.events.size(), req.limit - page.events.size());
  }
  return page;
}

Result<bool> ClickHouseStore::SkipToMatches(const ScanRequest& req, const std::string& where,
                                            TimeMs& a, TimeMs& b, TimeMs& span) {
  while (a < b) {
    const ScanWindow w = WindowOf(req, a, b, ProbeWindow(span));
    auto counted = CountMatches(fmt::format("{} AND key >= {} AND key <= {} AND ({})",
                                            TimeBounds(w.start, w.end), w.lo, w.hi, where),
                                "count()", req.deadline, nullptr);
    if (!counted.ok()) return counted.status();
    if (counted->n == 0) {
      Pass(req, w, a, b);
      span = w.end - w.start;
      continue;
    }
    // The matches are within the window: start at the nearest one.
    const auto oldest = static_cast<TimeMs>(counted->oldest);
    const auto newest = static_cast<TimeMs>(counted->newest);
    if (req.ascending) {
      a = std::clamp(oldest, a, b - 1);
    } else {
      b = std::clamp(newest + 1, a + 1, b);
    }
    span = FirstSearchWindow(*counted, req.limit);
    return true;
  }
  return false;
}

Result<MatchSummary> ClickHouseStore::CountMatches(const std::string& conditions,
                                                   std::string_view count,
                                                   Clock::time_point deadline, bool* partial) {
  auto body = Query(fmt::format("SELECT {} AS n, max(t) AS newest, min(t) AS oldest FROM {}{}",
                                count, FromEvents(table_, conditions), kJsonRows),
                    deadline, partial);
  if (!body.ok()) return body.status();
  return ParseMatchSummary(*body);
}

Result<std::vector<ClickHouseStore::KeyedId>> ClickHouseStore::MatchingKeys(
    const KeyQuery& q, Clock::time_point deadline, bool* partial) {
  std::vector<KeyedId> keys;
  if (q.lo > q.hi || q.limit == 0) return keys;
  // The copies of a resent event share its time, so its millisecond; the
  // copy with the highest key stands for them all. Choosing it among the
  // whole milliseconds at either end, not only the keys in [lo, hi], keeps
  // a page that ends between two copies from showing the other one on the
  // next page.
  const EventKey ms_lo = q.lo & ~EventKey{kChSeqMask}, ms_hi = q.hi | EventKey{kChSeqMask};
  auto body = Query(
      fmt::format("SELECT key, id FROM (SELECT {} AS key, id FROM {} WHERE {} AND key >= {} AND "
                  "key <= {} ORDER BY key DESC LIMIT 1 BY id) WHERE key >= {} AND key <= {} "
                  "ORDER BY key {} LIMIT {}{}",
                  kChEventKey, table_, q.conditions, ms_lo, ms_hi, q.lo, q.hi,
                  q.ascending ? "ASC" : "DESC", q.limit, kJsonRows),
      deadline, partial);
  if (!body.ok()) return body.status();
  Status s = ForEachJsonRow(*body, [&](const json::object& o) {
    try {  // a missing column or another type throws
      keys.push_back(KeyedId{json::value_to<std::int64_t>(o.at("key")),
                             json::value_to<std::string>(o.at("id"))});
    } catch (const std::exception&) {
      return Status::Internal("ClickHouse: unexpected key row");
    }
    return Status::Ok();
  });
  if (!s.ok()) return s;
  return keys;
}

Result<std::vector<StoredEvent>> ClickHouseStore::RowsOf(std::span<const KeyedId> keys,
                                                         bool ascending, Clock::time_point deadline,
                                                         bool* partial) {
  if (keys.empty()) return std::vector<StoredEvent>{};
  std::vector<KeyedId> wanted(keys.begin(), keys.end());
  std::sort(wanted.begin(), wanted.end());
  const EventKey lo = wanted.front().key, hi = wanted.back().key;
  std::string listed;
  for (const KeyedId& k : wanted) fmt::format_to(std::back_inserter(listed), "{},", k.key);
  listed.pop_back();
  // The time bounds let ClickHouse read only the primary key's part of the
  // range; the list picks the rows.
  auto body =
      Query(fmt::format(
                "SELECT {} AS key, {} AS t, id, idx, level, source FROM {} WHERE {} AND key >= {} "
                "AND key <= {} AND key IN ({}) ORDER BY key {}{}",
                kChEventKey, kChTimeMs, table_, TimeBounds(lo >> 20, (hi >> 20) + 1), lo, hi,
                listed, ascending ? "ASC" : "DESC", kJsonRows),
            deadline, partial);
  if (!body.ok()) return body.status();
  auto rows = ParseHits(*body);
  if (!rows.ok()) return rows.status();
  // A key names one event of one instance: another instance's event may
  // have it too, and other copies of a resent event have other keys. So a
  // row is kept when both its key and its id are the ones asked for.
  std::vector<StoredEvent> out;
  out.reserve(keys.size());
  for (StoredEvent& e : *rows) {
    const KeyedId probe{e.key, e.id};
    const auto at = std::lower_bound(wanted.begin(), wanted.end(), probe);
    if (at == wanted.end() || *at != probe) continue;
    wanted.erase(at);  // once: a part not yet merged may hold a row twice
    out.push_back(std::move(e));
  }
  return out;
}

// Runs of keys grow with what the sources have weighed so far: 16 first,
// then about what the rest of the budget holds.
constexpr std::size_t kFirstRowRun = 16;

Result<std::vector<StoredEvent>> ClickHouseStore::ScanRowsOf(const std::vector<KeyedId>& keys,
                                                             const ScanRequest& req,
                                                             std::size_t max_bytes, bool* full,
                                                             bool* vanished) {
  std::vector<StoredEvent> out;
  std::size_t bytes = 0;
  std::size_t next = 0;
  const bool budgeted = max_bytes != std::numeric_limits<std::size_t>::max();
  while (next < keys.size()) {
    if (req.cancelled != nullptr && req.cancelled->load()) return Status::Unavailable("cancelled");
    std::size_t run = keys.size() - next;
    if (budgeted) {
      const std::size_t average = out.empty() ? 0 : bytes / out.size() + 1;
      run = std::min(run, average == 0 ? kFirstRowRun
                                       : std::max(kFirstRowRun, (max_bytes - bytes) / average + 1));
    }
    auto rows = RowsOf(std::span(keys).subspan(next, run), req.ascending, req.deadline, nullptr);
    if (!rows.ok()) return rows.status();
    if (rows->size() < run) *vanished = true;
    next += run;
    for (StoredEvent& e : *rows) {
      bytes += e.source.size();
      out.push_back(std::move(e));
      if (bytes > max_bytes) {
        *full = true;
        return out;
      }
    }
  }
  return out;
}

// The id column has no index of its own: an id that names its time is
// looked for in that millisecond first (a few granules), any other id, or
// one not found there, in the whole table.
Result<std::optional<StoredEvent>> ClickHouseStore::Get(std::string_view id) {
  const Clock::time_point deadline = Clock::now() + options_.cluster.timeout;
  auto find = [&](const std::string& where) -> Result<std::optional<StoredEvent>> {
    auto body = Query(fmt::format("SELECT {} FROM {} LIMIT 1{}", kHitColumns,
                                  FromEvents(table_, where), kJsonRows),
                      deadline);
    if (!body.ok()) return body.status();
    auto hits = ParseHits(*body);
    if (!hits.ok()) return hits.status();
    if (hits->empty()) return std::optional<StoredEvent>();
    return std::optional<StoredEvent>(std::move(hits->front()));
  };
  const std::string is_id = "id = " + ChString(id);
  if (const std::optional<TimeMs> t = ContentIdTime(id)) {
    auto found = find(TimeBounds(*t, *t + 1) + " AND " + is_id);
    if (!found.ok() || *found) return found;
  }
  return find(is_id);
}

Result<FieldsSummary> ClickHouseStore::SummarizeFields(const SearchRequest& req,
                                                       const FieldsSpec& spec) {
  return SummarizeFieldsByScan(*this, req, spec);
}

Result<Neighbors> ClickHouseStore::FindNeighbors(const SearchRequest& req,
                                                 const NeighborsSpec& spec) {
  return FindNeighborsByScan(*this, req, spec);
}

// The SQLite store's per-day rollups (partition.h), computed: each group's
// first and last time, distinct events and newest closing time per UTC day
// of the days overlapping the range, the days whose span overlaps it
// merged. Newest `last` first; one more than the limit says whether more.
Result<GroupsPage> ClickHouseStore::Groups(const GroupsRequest& req) {
  const TimeMs from = std::max(req.from, kMinEventTime), to = std::min(req.to, kMaxEventTime);
  GroupsPage page;
  if (from >= to || req.limit == 0) return page;
  const TimeMs days_from = DayStart(DayOf(from)), days_to = DayStart(DayOf(to - 1) + 1);
  auto body = Query(
      fmt::format(
          "SELECT grp, min(f) AS first, max(l) AS last, sum(n) AS events, max(e) AS ended, "
          "sum(c) AS closed FROM (SELECT grp, toDate(ts) AS d, min({0}) AS f, max({0}) AS l, "
          "uniqExact(id) AS n, maxIf({0}, grp_end = 1) AS e, countIf(grp_end = 1) AS c FROM {1} "
          "WHERE grp != '' AND {2} GROUP BY grp, d HAVING l >= {3} AND f < {4}) GROUP BY grp "
          "ORDER BY last DESC, grp ASC LIMIT {5}{6}",
          kChTimeMs, table_, TimeBounds(days_from, days_to), from, to, req.limit + 1, kJsonRows),
      req.deadline);
  if (!body.ok()) return body.status();
  Status s = ForEachJsonRow(*body, [&](const json::object& o) {
    GroupSummary g;
    try {  // a missing column or another type throws
      g.key = json::value_to<std::string>(o.at("grp"));
      g.first = json::value_to<TimeMs>(o.at("first"));
      g.last = json::value_to<TimeMs>(o.at("last"));
      g.events = json::value_to<std::uint64_t>(o.at("events"));
      if (json::value_to<std::uint64_t>(o.at("closed")) > 0) {
        g.ended = json::value_to<TimeMs>(o.at("ended"));
      }
    } catch (const std::exception&) {
      return Status::Internal("ClickHouse: unexpected groups row");
    }
    page.groups.push_back(std::move(g));
    return Status::Ok();
  });
  if (!s.ok()) return s;
  if (page.groups.size() > req.limit) {
    page.groups.resize(req.limit);
    page.complete = false;
  }
  return page;
}

Result<std::optional<TimeExtent>> ClickHouseStore::Extent(Clock::time_point deadline) {
  auto body = Query(fmt::format("SELECT count(), min({0}), max({0}) FROM {1} FORMAT TabSeparated",
                                kChTimeMs, table_),
                    deadline);
  if (!body.ok()) return body.status();
  std::uint64_t count = 0;
  TimeExtent extent;
  const char* p = body->data();
  const char* end = p + body->size();
  auto next = [&](auto& value) {
    const auto r = std::from_chars(p, end, value);
    p = r.ptr < end ? r.ptr + 1 : end;
    return r.ec == std::errc();
  };
  if (!next(count) || !next(extent.first) || !next(extent.last)) {
    return Status::Internal("ClickHouse: unexpected answer " + *body);
  }
  if (count == 0) return std::optional<TimeExtent>();
  return std::optional<TimeExtent>(extent);
}

Result<std::vector<PartitionInfo>> ClickHouseStore::ListDays(
    std::map<std::int64_t, std::uint64_t>* rows) {
  const ChOptions& c = options_.cluster;
  const std::string sql = fmt::format(
      "SELECT partition, sum(bytes_on_disk), sum(rows) FROM system.parts WHERE database = {} AND "
      "table = {} AND active GROUP BY partition FORMAT TabSeparated",
      ChString(c.database), ChString(kLocalTable));
  std::map<std::int64_t, std::uint64_t> bytes;
  for (const ChHost& host : c.hosts) {
    auto body = ChClient(host, c.timeout).Query(sql);
    if (!body.ok()) return body.status();
    // "YYYYMMDD\tbytes\trows"
    Status s = ForEachLine(*body, [&](std::string_view line) {
      std::uint64_t day_bytes = 0, day_rows = 0;
      const auto tab1 = line.find('\t'), tab2 = line.rfind('\t');
      const auto day = tab1 == 8 ? ParseDay(fmt::format("{}-{}-{}", line.substr(0, 4),
                                                        line.substr(4, 2), line.substr(6, 2)))
                                 : std::nullopt;
      if (!day || tab2 == tab1 ||
          std::from_chars(line.data() + tab1 + 1, line.data() + tab2, day_bytes).ec !=
              std::errc() ||
          std::from_chars(line.data() + tab2 + 1, line.data() + line.size(), day_rows).ec !=
              std::errc()) {
        return Status::Internal("ClickHouse: unexpected system.parts row");
      }
      bytes[*day] += day_bytes;
      if (rows != nullptr) (*rows)[*day] += day_rows;
      return Status::Ok();
    });
    if (!s.ok()) return s;
  }
  std::vector<PartitionInfo> out;
  for (const auto& [day, n] : bytes) {
    out.push_back(
        PartitionInfo{day, fmt::format("{}.{}/{}", c.database, kLocalTable, FormatDay(day)), n});
  }
  return out;
}

std::vector<PartitionInfo> ClickHouseStore::Partitions() {
  auto days = ListDays(nullptr);
  if (!days.ok()) {
    log_.Warn("clickhouse_partitions_failed", {{"error", days.status().ToString()}});
    return {};
  }
  return std::move(*days);
}

Result<DroppedPartition> ClickHouseStore::DropDay(std::int64_t day) {
  std::map<std::int64_t, std::uint64_t> rows;
  auto days = ListDays(&rows);
  if (!days.ok()) return days.status();
  DroppedPartition d;
  d.day = day;
  d.events = rows[day];  // copies not yet merged counted too
  for (const PartitionInfo& p : *days) d.bytes += p.day == day ? p.bytes : 0;
  // The partition's value: toYYYYMMDD of the day, a UInt32.
  const std::string ymd = FormatDay(day);
  const std::string sql = fmt::format(
      "ALTER TABLE {}.{} DROP PARTITION {}{}{}", ChIdentifier(options_.cluster.database),
      ChIdentifier(kLocalTable), ymd.substr(0, 4), ymd.substr(5, 2), ymd.substr(8, 2));
  for (const ChHost& host : options_.cluster.hosts) {
    auto r = ChClient(host, options_.cluster.timeout).Query(sql);
    if (!r.ok()) return r.status();
  }
  return d;
}

RetentionStatus ClickHouseStore::Retention() {
  return retention_->Status();
}

}  // namespace dashcam::storage::clickhouse
