#include "storage/sqlite_store.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "storage/document_reader.h"
#include "storage/fts_query_compiler.h"
#include "storage/partition.h"
#include "storage/row_predicate.h"

namespace dashcam::storage {

class SqliteStore::ReaderSet {
 public:
  ReaderSet(const PartitionSet& parts, int cache_kib) : parts_(parts), cache_kib_(cache_kib) {}

  Result<PartitionReader*> For(std::int64_t day) {
    auto it = readers_.find(day);
    if (it != readers_.end()) return it->second.get();
    auto opened = PartitionReader::Open(parts_.PathFor(day), cache_kib_);
    if (!opened.ok()) return opened.status();
    return readers_.emplace(day, std::move(*opened)).first->second.get();
  }

 private:
  const PartitionSet& parts_;
  const int cache_kib_;
  std::map<std::int64_t, std::unique_ptr<PartitionReader>> readers_;
};

// Returns its ReaderSet to the pool when destroyed.
class SqliteStore::Lease {
 public:
  Lease(SqliteStore& store, std::unique_ptr<ReaderSet> set) : store_(store), set_(std::move(set)) {}
  ~Lease() {
    std::lock_guard lock(store_.pool_mu_);
    store_.idle_readers_.push_back(std::move(set_));
  }
  Lease(const Lease&) = delete;
  Lease& operator=(const Lease&) = delete;
  ReaderSet* operator->() { return set_.get(); }

 private:
  SqliteStore& store_;
  std::unique_ptr<ReaderSet> set_;
};

namespace {

constexpr const char* kEventColumns = "e.key, e.level, e.idx, e.doc_id, e.source";

// The candidate events of a query in the key range ?2..?3: the FROM/WHERE
// part shared by hits, counts and histograms, and the key expression to
// order or bucket by. FTS5 drives when it can. Without a further condition
// and without event columns to read, the FTS table alone answers, minus the
// keys of replaced events (whose FTS entries are stale).
struct MatchClause {
  std::string from_where;
  std::string key;
};

MatchClause Candidates(const CompiledQuery& q, bool need_events) {
  if (q.fts && q.where == "1" && !need_events) {
    return {
        "FROM fts WHERE fts MATCH ?1 AND fts.rowid BETWEEN ?2 AND ?3 "
        "AND fts.rowid NOT IN (SELECT key FROM replaced)",
        "fts.rowid"};
  }
  if (q.fts) {
    return {fmt::format("FROM fts CROSS JOIN events AS e ON e.key = fts.rowid "
                        "WHERE fts MATCH ?1 AND fts.rowid BETWEEN ?2 AND ?3 AND ({})",
                        q.where),
            "fts.rowid"};
  }
  return {fmt::format("FROM events AS e WHERE e.key BETWEEN ?2 AND ?3 AND ({})", q.where), "e.key"};
}

std::string HitsSql(const CompiledQuery& q) {
  const MatchClause m = Candidates(q, true);
  return fmt::format("SELECT {} {} ORDER BY {} DESC LIMIT ?4", kEventColumns, m.from_where, m.key);
}

std::string CountSql(const CompiledQuery& q) {
  return fmt::format("SELECT count(*) FROM (SELECT 1 {} LIMIT ?4)",
                     Candidates(q, false).from_where);
}

std::string HistogramSql(const CompiledQuery& q) {
  const MatchClause m = Candidates(q, false);
  return fmt::format("SELECT ({} >> 20) / ?5, count(*) {} GROUP BY 1", m.key, m.from_where);
}

void BindQuery(Stmt& stmt, const CompiledQuery& q, EventKey lo, EventKey hi, std::int64_t limit) {
  if (q.fts) stmt.Bind(1, *q.fts);
  stmt.Bind(2, lo);
  stmt.Bind(3, hi);
  stmt.Bind(4, limit);
  for (std::size_t i = 0; i < q.params.size(); ++i) {
    const int index = kFirstWhereParam + static_cast<int>(i);
    if (const auto* node = std::get_if<const query::Node*>(&q.params[i])) {
      stmt.BindPointer(index, *node, kNodePointerType);
    } else {
      std::visit(
          [&](const auto& v) {
            if constexpr (!std::is_pointer_v<std::decay_t<decltype(v)>>) stmt.Bind(index, v);
          },
          q.params[i]);
    }
  }
}

StoredEvent ReadEvent(const Stmt& stmt) {
  StoredEvent ev;
  ev.key = stmt.Int(0);
  ev.ts_ms = KeyTime(ev.key);
  ev.level = std::string(stmt.Text(1));
  ev.index = std::string(stmt.Text(2));
  ev.id = stmt.IsNull(3) ? FormatEventKey(ev.key) : std::string(stmt.Text(3));
  ev.source = std::string(stmt.Text(4));
  return ev;
}

// Interrupts SQLite when the deadline passes.
class DeadlineGuard {
 public:
  DeadlineGuard(sqlite3* db, Clock::time_point deadline) : db_(db), deadline_(deadline) {
    if (deadline_ != Clock::time_point::max()) sqlite3_progress_handler(db_, 2000, &Check, this);
  }
  ~DeadlineGuard() { sqlite3_progress_handler(db_, 0, nullptr, nullptr); }
  DeadlineGuard(const DeadlineGuard&) = delete;
  DeadlineGuard& operator=(const DeadlineGuard&) = delete;

 private:
  static int Check(void* self) {
    return Clock::now() > static_cast<DeadlineGuard*>(self)->deadline_ ? 1 : 0;
  }
  sqlite3* db_;
  Clock::time_point deadline_;
};

Status RunHits(PartitionReader& reader, const CompiledQuery& q, EventKey lo, EventKey hi,
               std::size_t want, Clock::time_point deadline, std::vector<StoredEvent>& out) {
  auto stmt = reader.Statement(HitsSql(q));
  if (!stmt.ok()) return stmt.status();
  DeadlineGuard guard(reader.db(), deadline);
  BindQuery(**stmt, q, lo, hi, static_cast<std::int64_t>(want));
  int rc;
  while ((rc = (*stmt)->Step()) == SQLITE_ROW) out.push_back(ReadEvent(**stmt));
  (*stmt)->Reset();
  return SqliteStatus(rc, reader.db(), "search");
}

Result<std::uint64_t> RunCount(PartitionReader& reader, const CompiledQuery& q, EventKey lo,
                               EventKey hi, std::uint64_t cap, Clock::time_point deadline) {
  auto stmt = reader.Statement(CountSql(q));
  if (!stmt.ok()) return stmt.status();
  DeadlineGuard guard(reader.db(), deadline);
  BindQuery(**stmt, q, lo, hi, static_cast<std::int64_t>(cap));
  const int rc = (*stmt)->Step();
  const std::uint64_t n = rc == SQLITE_ROW ? static_cast<std::uint64_t>((*stmt)->Int(0)) : 0;
  (*stmt)->Reset();
  if (rc != SQLITE_ROW) return SqliteStatus(rc, reader.db(), "count");
  return n;
}

}  // namespace

SqliteStore::SqliteStore(SqliteStoreOptions options, const Log& log)
    : options_(std::move(options)),
      log_(log),
      partitions_(options_.data_dir),
      writer_(partitions_, options_.writer, log) {}

SqliteStore::~SqliteStore() {
  Close();
}

Result<std::unique_ptr<SqliteStore>> SqliteStore::Open(SqliteStoreOptions options, const Log& log) {
  std::unique_ptr<SqliteStore> store(new SqliteStore(std::move(options), log));
  if (auto s = store->partitions_.Discover(); !s.ok()) return s;
  store->writer_.Start();
  return store;
}

void SqliteStore::Append(std::vector<Record> records, AppendCallback done) {
  writer_.Submit(std::move(records), std::move(done));
}

void SqliteStore::Close() {
  // Read connections close first, so that the writer's connection is the last
  // one and checkpoints the WAL away.
  {
    std::lock_guard lock(pool_mu_);
    idle_readers_.clear();
  }
  writer_.Stop();
}

std::vector<PartitionInfo> SqliteStore::Partitions() {
  return partitions_.List();
}

SqliteStore::Lease SqliteStore::LeaseReaders() {
  std::unique_ptr<ReaderSet> set;
  {
    std::lock_guard lock(pool_mu_);
    if (!idle_readers_.empty()) {
      set = std::move(idle_readers_.back());
      idle_readers_.pop_back();
    }
  }
  if (!set) set = std::make_unique<ReaderSet>(partitions_, options_.reader_cache_kib);
  return Lease(*this, std::move(set));
}

Result<SearchPage> SqliteStore::Search(const SearchRequest& req) {
  if (req.query == nullptr) return Status::InvalidArgument("no query");
  auto compiled = CompileFtsQuery(*req.query);
  if (!compiled.ok()) return compiled.status();
  const TimeMs from = std::max(req.from, kMinEventTime);
  const TimeMs to = std::min(req.to, kMaxEventTime);
  SearchPage page;
  if (from >= to) return page;
  const EventKey lo = FirstKeyAt(from), hi = FirstKeyAt(to) - 1;
  const EventKey hits_hi = req.before ? std::min(hi, *req.before - 1) : hi;
  Lease lease = LeaseReaders();

  for (std::int64_t day : partitions_.DaysOverlapping(from, to)) {
    if (req.limit == 0 || page.hits.size() > req.limit) break;
    auto reader = lease->For(day);
    if (!reader.ok()) return reader.status();
    const std::size_t want = req.limit + 1 - page.hits.size();
    if (auto s = RunHits(**reader, *compiled, lo, hits_hi, want, req.deadline, page.hits);
        !s.ok()) {
      return s;
    }
  }
  if (page.hits.size() > req.limit) {
    page.hits.resize(req.limit);  // limit >= 1 here: the loop fetched nothing for 0
    page.next = page.hits.back().key;
  }
  if (req.count_limit == 0) return page;
  for (std::int64_t day : partitions_.DaysOverlapping(from, to)) {
    auto reader = lease->For(day);
    if (!reader.ok()) return reader.status();
    auto n = RunCount(**reader, *compiled, lo, hi, req.count_limit - page.total, req.deadline);
    if (!n.ok()) return n.status();
    page.total += *n;
    if (page.total >= req.count_limit) {
      page.total_exact = false;
      break;
    }
  }
  return page;
}

namespace {

// The event matching the single-row `sql` bound with `value` in one partition.
template <class Value>
Result<std::optional<StoredEvent>> GetOne(PartitionReader& reader, const std::string& sql,
                                          const Value& value) {
  auto stmt = reader.Statement(sql);
  if (!stmt.ok()) return stmt.status();
  (*stmt)->Bind(1, value);
  const int rc = (*stmt)->Step();
  std::optional<StoredEvent> found;
  if (rc == SQLITE_ROW) found = ReadEvent(**stmt);
  (*stmt)->Reset();
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) return SqliteStatus(rc, reader.db(), "get");
  return found;
}

}  // namespace

Result<std::vector<HistogramBucket>> SqliteStore::Histogram(const SearchRequest& req,
                                                            TimeMs interval) {
  if (req.query == nullptr || interval <= 0)
    return Status::InvalidArgument("bad histogram request");
  auto compiled = CompileFtsQuery(*req.query);
  if (!compiled.ok()) return compiled.status();
  const TimeMs from = std::max(req.from, kMinEventTime), to = std::min(req.to, kMaxEventTime);
  std::map<TimeMs, std::uint64_t> counts;
  if (from >= to) return std::vector<HistogramBucket>();
  Lease lease = LeaseReaders();
  const std::string sql = HistogramSql(*compiled);
  for (std::int64_t day : partitions_.DaysOverlapping(from, to)) {
    auto reader = lease->For(day);
    if (!reader.ok()) return reader.status();
    auto stmt = (*reader)->Statement(sql);
    if (!stmt.ok()) return stmt.status();
    DeadlineGuard guard((*reader)->db(), req.deadline);
    BindQuery(**stmt, *compiled, FirstKeyAt(from), FirstKeyAt(to) - 1, 0);
    (*stmt)->Bind(5, interval);
    int rc;
    while ((rc = (*stmt)->Step()) == SQLITE_ROW) {
      counts[(*stmt)->Int(0) * interval] += static_cast<std::uint64_t>((*stmt)->Int(1));
    }
    (*stmt)->Reset();
    if (rc != SQLITE_DONE) return SqliteStatus(rc, (*reader)->db(), "histogram");
  }
  std::vector<HistogramBucket> out;
  for (const auto& [start, n] : counts) out.push_back({start, n});
  return out;
}

Result<TermsResult> SqliteStore::TopValues(const SearchRequest& req, const std::string& field,
                                           std::size_t size, std::size_t max_events) {
  SearchRequest page_req = req;
  page_req.count_limit = 0;
  page_req.before.reset();
  std::map<std::string, std::uint64_t> counts;
  TermsResult out;
  DocumentReader reader;
  DocumentView view;
  while (out.events_read < max_events) {
    page_req.limit = std::min<std::size_t>(5000, max_events - out.events_read);
    auto page = Search(page_req);
    if (!page.ok()) return page.status();
    for (const StoredEvent& ev : page->hits) {
      ++out.events_read;
      if (!reader.ReadUnpadded(ev.source, view).ok()) continue;
      for (const Field& f : view.fields) {
        if (f.name == field) ++counts[f.text];
      }
      if (field == "message" && view.message) ++counts[*view.message];
    }
    if (!page->next) break;
    page_req.before = page->next;
  }
  out.complete = out.events_read < max_events;
  std::vector<TermsResult::Bucket> all;
  for (auto& [value, n] : counts) all.push_back({value, n});
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) {
    return a.count != b.count ? a.count > b.count : a.value < b.value;
  });
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (i < size)
      out.buckets.push_back(std::move(all[i]));
    else
      out.other_count += all[i].count;
  }
  return out;
}

Result<std::optional<StoredEvent>> SqliteStore::Get(std::string_view id) {
  Lease lease = LeaseReaders();
  // An event key names its partition; a caller-given doc_id may look like
  // one, so it is tried as a doc_id too.
  if (const auto key = ParseEventKey(id)) {
    const std::int64_t day = DayOf(KeyTime(*key));
    if (partitions_.Contains(day)) {
      auto reader = lease->For(day);
      if (!reader.ok()) return reader.status();
      auto found =
          GetOne(**reader,
                 fmt::format("SELECT {} FROM events AS e WHERE e.key = ?1", kEventColumns), *key);
      if (!found.ok() || *found) return found;
    }
  }
  const std::string sql =
      fmt::format("SELECT {} FROM events AS e WHERE e.doc_id = ?1", kEventColumns);
  for (std::int64_t day : partitions_.DaysOverlapping(kMinEventTime, kMaxEventTime)) {
    auto reader = lease->For(day);
    if (!reader.ok()) return reader.status();
    auto found = GetOne(**reader, sql, id);
    if (!found.ok() || *found) return found;
  }
  return std::optional<StoredEvent>();
}

namespace {

std::string ScanSql(const CompiledQuery& q, bool ascending) {
  const MatchClause m = Candidates(q, true);
  return fmt::format("SELECT {} {} ORDER BY {} {} LIMIT ?4", kEventColumns, m.from_where, m.key,
                     ascending ? "ASC" : "DESC");
}

// Interrupts SQLite when the deadline passes or the scan is cancelled.
class ScanGuard {
 public:
  ScanGuard(sqlite3* db, const ScanRequest& req) : db_(db), req_(req) {
    sqlite3_progress_handler(db_, 2000, &Check, this);
  }
  ~ScanGuard() { sqlite3_progress_handler(db_, 0, nullptr, nullptr); }
  ScanGuard(const ScanGuard&) = delete;
  ScanGuard& operator=(const ScanGuard&) = delete;

  bool cancelled() const { return req_.cancelled && req_.cancelled->load(); }

 private:
  static int Check(void* self) {
    const auto* g = static_cast<ScanGuard*>(self);
    return g->cancelled() || Clock::now() > g->req_.deadline ? 1 : 0;
  }
  sqlite3* db_;
  const ScanRequest& req_;
};

// Appends matches in [lo, hi] to `page` until the page is full (req.limit
// events or req.max_bytes of sources), which sets page.more.
Status RunScan(PartitionReader& reader, const std::string& sql, const CompiledQuery& q,
               const ScanRequest& req, EventKey lo, EventKey hi, ScanPage& page,
               std::size_t& bytes) {
  auto stmt = reader.Statement(sql);
  if (!stmt.ok()) return stmt.status();
  ScanGuard guard(reader.db(), req);
  BindQuery(**stmt, q, lo, hi, static_cast<std::int64_t>(req.limit - page.events.size()));
  int rc;
  while ((rc = (*stmt)->Step()) == SQLITE_ROW) {
    page.events.push_back(ReadEvent(**stmt));
    bytes += page.events.back().source.size();
    if (page.events.size() >= req.limit || bytes >= req.max_bytes) {
      page.more = true;
      rc = SQLITE_DONE;
      break;
    }
  }
  (*stmt)->Reset();
  if (rc == SQLITE_INTERRUPT && guard.cancelled()) return Status::Unavailable("scan cancelled");
  return SqliteStatus(rc, reader.db(), "scan");
}

}  // namespace

Result<ScanPage> SqliteStore::Scan(const ScanRequest& req) {
  if (req.query == nullptr) return Status::InvalidArgument("no query");
  auto compiled = CompileFtsQuery(*req.query);
  if (!compiled.ok()) return compiled.status();
  const EventKey lo = std::max(req.lo, FirstKeyAt(kMinEventTime));
  const EventKey hi = std::min(req.hi, FirstKeyAt(kMaxEventTime) - 1);
  ScanPage page;
  if (lo > hi || req.limit == 0) return page;
  std::vector<std::int64_t> days = partitions_.DaysOverlapping(KeyTime(lo), KeyTime(hi) + 1);
  if (req.ascending) std::reverse(days.begin(), days.end());
  const std::string sql = ScanSql(*compiled, req.ascending);
  Lease lease = LeaseReaders();
  std::size_t bytes = 0;
  for (std::int64_t day : days) {
    if (page.more) break;
    auto reader = lease->For(day);
    if (!reader.ok()) return reader.status();
    if (auto s = RunScan(**reader, sql, *compiled, req, lo, hi, page, bytes); !s.ok()) return s;
  }
  return page;
}

void SqliteStore::SetCommitObserver(CommitObserver observer) {
  writer_.SetCommitObserver(std::move(observer));
}

}  // namespace dashcam::storage
