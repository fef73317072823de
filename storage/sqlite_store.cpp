#include "storage/sqlite_store.h"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <span>
#include <unordered_map>

#include <fmt/format.h>

#include "storage/day_positions.h"
#include "storage/document_reader.h"
#include "storage/field_extractor.h"
#include "storage/field_stats.h"
#include "storage/fts_query_compiler.h"
#include "storage/histogram_accumulator.h"
#include "storage/histogram_row_reader.h"
#include "storage/partition.h"
#include "storage/partition_check.h"
#include "storage/row_predicate.h"
#include "storage/scan_exploration.h"
#include "storage/scan_ranges.h"
#include "storage/scope_match.h"
#include "storage/split_key_sampler.h"
#include "storage/time_format.h"
#include "storage/vocabulary.h"

namespace dashcam::storage {

class SqliteStore::ReaderSet {
 public:
  ReaderSet(PartitionSet& parts, int cache_kib) : parts_(parts), cache_kib_(cache_kib) {}

  // A connection to `day`'s partition. One opened before the partition was
  // dropped keeps reading it (its pin keeps the files) until EvictDropped;
  // one opened before its index was renewed reads its meta again. Null
  // when the day left the set (retention dropped it, or it was quarantined)
  // after the caller listed it: the caller reads the day as empty, as a
  // query that started a moment later would have.
  Result<PartitionReader*> For(std::int64_t day) {
    auto it = readers_.find(day);
    if (it != readers_.end()) {
      Open& open = it->second;
      if (const std::uint64_t now = open.pin->generation(); now != open.generation) {
        open.generation = now;  // loaded before the read: a later change is seen next time
        if (Status s = open.reader->ReadMeta(); !s.ok()) return s;
      }
      if (Status s = open.reader->ReadRowids(); !s.ok()) return s;
      return open.reader.get();
    }
    std::unique_ptr<PartitionReader> reader;
    auto pin = parts_.OpenPinned(day, [&](const std::string& path) -> Status {
      auto opened = PartitionReader::Open(path, cache_kib_);
      if (!opened.ok()) return opened.status();
      reader = std::move(*opened);
      // One read opens the -wal and -shm files while they still have their names.
      auto stmt = reader->Statement("SELECT count(*) FROM sqlite_master");
      if (!stmt.ok()) return stmt.status();
      const int rc = (*stmt)->Step();
      (*stmt)->Reset();
      return rc == SQLITE_ROW ? Status::Ok() : SqliteStatus(rc, reader->db(), "open partition");
    });
    if (!pin.ok()) return pin.status();
    if (!*pin) return static_cast<PartitionReader*>(nullptr);
    auto& entry = readers_[day];
    entry.pin = std::move(*pin);
    entry.reader = std::move(reader);
    // Open read the meta before this load; a re-index between the two
    // would go unseen, so the meta is read once more after it.
    entry.generation = entry.pin->generation();
    if (Status s = entry.reader->ReadMeta(); !s.ok()) return s;
    return entry.reader.get();
  }

  // Closes the connections to dropped partitions (releasing their files).
  void EvictDropped() {
    std::erase_if(readers_, [](const auto& entry) { return entry.second.pin->dropped(); });
  }

 private:
  struct Open {
    PartitionPin pin;  // declared first: released after the connection closes
    std::unique_ptr<PartitionReader> reader;
    std::uint64_t generation = 0;  // the pin's when the connection was opened
  };
  PartitionSet& parts_;
  const int cache_kib_;
  std::map<std::int64_t, Open> readers_;
};

// Returns its ReaderSet to the pool when destroyed.
class SqliteStore::Lease {
 public:
  Lease(SqliteStore& store, std::unique_ptr<ReaderSet> set) : store_(store), set_(std::move(set)) {}
  ~Lease() {
    std::lock_guard lock(store_.pool_mu_);
    set_->EvictDropped();  // under pool_mu_: see SqliteStore::DropPartition
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

constexpr const char* kEventColumns =
    "e.key, dc_name(e.level), dc_name(e.idx), e.doc_id, dc_source(e.source)";

// The candidate events of a query in the key range ?2..?3: the FROM/WHERE
// part shared by hits, counts and histograms, the key expression, and the
// one to order by for key order. FTS5 drives when it can. Without a further
// condition and without event columns to read, the FTS table alone
// answers, minus the keys of replaced events (whose FTS entries are stale).
//
// On a day whose rowids are docnos (rowid_layout.h) the key range is mapped
// to docnos first, and each match's key read from `docnos`, only where a
// key is read; docno order is key order. On a late day (events written
// since the numbering have rowid = key) a match's key is its docno's or its
// rowid, and key order takes a sort. Every form checks, in the statement's
// snapshot, that the rowids are still what the query was compiled for.
struct MatchClause {
  std::string from_where;
  std::string key;
  std::string order;
};

// What the statement reads of each candidate: where it lies (positions,
// day_positions.h: ?2..?3 and the key column are positions, docnos on a
// clean numbered day), its key, or its key and event columns.
enum class Need { kPositions, kKeys, kEvents };

MatchClause KeyedCandidates(const CompiledQuery& q, Need need, const std::string& guard) {
  if (q.where == "1" && need != Need::kEvents) {
    return {fmt::format("FROM fts WHERE {} AND fts MATCH ?1 AND fts.rowid BETWEEN ?2 AND ?3 "
                        "AND fts.rowid NOT IN (SELECT key FROM replaced)",
                        guard),
            "fts.rowid", "fts.rowid"};
  }
  return {fmt::format("FROM fts CROSS JOIN events AS e ON e.key = fts.rowid "
                      "WHERE {} AND fts MATCH ?1 AND fts.rowid BETWEEN ?2 AND ?3 AND ({})",
                      guard, q.where),
          "fts.rowid", "fts.rowid"};
}

MatchClause NumberedCandidates(const CompiledQuery& q, Need need, const std::string& guard) {
  if (need == Need::kPositions && q.where == "1") {
    return {
        fmt::format("FROM fts WHERE {} AND fts MATCH ?1 AND fts.rowid BETWEEN ?2 AND ?3", guard),
        "fts.rowid", "fts.rowid"};
  }
  const DocnoKeySql docno = KeyOfDocno(q.rowids, false);
  if (need == Need::kPositions) {
    return {fmt::format("FROM fts {} CROSS JOIN events AS e ON e.key = {} "
                        "WHERE {} AND fts MATCH ?1 AND fts.rowid BETWEEN ?2 AND ?3 AND ({})",
                        docno.join, docno.key, guard, q.where),
            "fts.rowid", "fts.rowid"};
  }
  const std::string range =
      fmt::format("fts.rowid BETWEEN {} AND {} - 1", DocnoBoundSql(q.rowids, "?2", false),
                  DocnoBoundSql(q.rowids, "?3", true));
  if (q.where == "1" && need == Need::kKeys) {
    return {fmt::format("FROM fts {} WHERE {} AND fts MATCH ?1 AND {}", docno.join, guard, range),
            docno.key, "fts.rowid"};
  }
  // The event's key is the docno's, read once for the join.
  return {fmt::format("FROM fts {} CROSS JOIN events AS e ON e.key = {} "
                      "WHERE {} AND fts MATCH ?1 AND {} AND ({})",
                      docno.join, docno.key, guard, range, q.where),
          "e.key", "fts.rowid"};
}

MatchClause LateCandidates(const CompiledQuery& q, Need need, const std::string& guard) {
  const DocnoKeySql docno = KeyOfDocno(q.rowids, true);
  if (q.where == "1" && need != Need::kEvents) {
    return {fmt::format("FROM fts {0} "
                        "WHERE {1} AND fts MATCH ?1 AND {2} BETWEEN ?2 AND ?3 "
                        "AND {2} NOT IN (SELECT key FROM replaced)",
                        docno.join, guard, docno.key),
            docno.key, docno.key};
  }
  return {fmt::format("FROM fts {0} "
                      "CROSS JOIN events AS e ON e.key = {2} "
                      "WHERE {1} AND fts MATCH ?1 AND {2} BETWEEN ?2 AND ?3 AND ({3})",
                      docno.join, guard, docno.key, q.where),
          "e.key", "e.key"};
}

MatchClause Candidates(const CompiledQuery& q, Need need) {
  const std::string guard = RowidsGuardSql(q.rowids);
  if (!q.fts) {
    return {fmt::format("FROM events AS e WHERE {} AND e.key BETWEEN ?2 AND ?3 AND ({})", guard,
                        q.where),
            "e.key", "e.key"};
  }
  if (!q.rowids.dense()) return KeyedCandidates(q, need, guard);
  return q.rowids.late ? LateCandidates(q, need, guard) : NumberedCandidates(q, need, guard);
}

std::string HitsSql(const CompiledQuery& q) {
  const MatchClause m = Candidates(q, Need::kEvents);
  return fmt::format("SELECT {} {} ORDER BY {} DESC LIMIT ?4", kEventColumns, m.from_where,
                     m.order);
}

std::string CountSql(const CompiledQuery& q) {
  return fmt::format("SELECT count(*) FROM (SELECT 1 {} LIMIT ?4)",
                     Candidates(q, Need::kPositions).from_where);
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

// Reads the kEventColumns that start at column `first` of the row.
StoredEvent ReadEvent(const Stmt& stmt, int first = 0) {
  StoredEvent ev;
  ev.key = stmt.Int(first);
  ev.ts_ms = KeyTime(ev.key);
  ev.level = std::string(stmt.Text(first + 1));
  ev.index = std::string(stmt.Text(first + 2));
  ev.id = stmt.IsNull(first + 3) ? FormatEventKey(ev.key) : std::string(stmt.Text(first + 3));
  ev.source = std::string(stmt.Text(first + 4));
  return ev;
}

// Interrupts SQLite when the deadline passes, or when `stop` (if given)
// returns true.
class DeadlineGuard {
 public:
  DeadlineGuard(sqlite3* db, Clock::time_point deadline,
                const std::function<bool()>* stop = nullptr)
      : db_(db), deadline_(deadline), stop_(stop) {
    if (deadline_ != Clock::time_point::max() || stop_ != nullptr) {
      sqlite3_progress_handler(db_, 2000, &Check, this);
    }
  }
  ~DeadlineGuard() { sqlite3_progress_handler(db_, 0, nullptr, nullptr); }
  DeadlineGuard(const DeadlineGuard&) = delete;
  DeadlineGuard& operator=(const DeadlineGuard&) = delete;

  bool stopped() const { return stop_ != nullptr && (*stop_)(); }

 private:
  static int Check(void* self) {
    const auto* g = static_cast<DeadlineGuard*>(self);
    return g->stopped() || Clock::now() > g->deadline_ ? 1 : 0;
  }
  sqlite3* db_;
  Clock::time_point deadline_;
  const std::function<bool()>* stop_;
};

// Runs `attempt` once more when it failed because a day's rowids changed
// under it (a re-index swapped docnos in, or a write marked them late:
// rowid_layout.h): the second compiles against the day's meta anew. Either
// change is rare (once per compaction, once per first late write), so a
// second failure is returned.
template <class Attempt>
auto OnceMoreIfRowidsChanged(Attempt&& attempt) {
  auto r = attempt();
  if (!r.ok() && IsRowidsChanged(r.status())) r = attempt();
  return r;
}

// How a request reads its matches (CompileOptions: its range, and how many
// matches a statement reads before it stops; 0: every one).
CompileOptions Reading(TimeMs from, TimeMs to, std::size_t stops_after) {
  CompileOptions options;
  options.from = from;
  options.to = to;
  options.stops_after = stops_after;
  return options;
}

// The time range [from, to) a request reads: within the times events may
// have, and within the @timestamp ranges its query holds every match to
// (NarrowToTimestampRanges).
std::pair<TimeMs, TimeMs> ReadRange(const SearchRequest& req) {
  TimeMs from = std::max(req.from, kMinEventTime), to = std::min(req.to, kMaxEventTime);
  if (req.query != nullptr) NarrowToTimestampRanges(*req.query, from, to);
  return {from, to};
}

// `root` compiled for one partition, read as `options` says: wildcard and
// fuzzy terms expand against its vocabulary, within the query's time budget.
Result<CompiledQuery> CompileFor(PartitionReader& reader, const query::Node& root,
                                 Clock::time_point deadline, CompileOptions options,
                                 const std::function<bool()>* stop = nullptr) {
  DeadlineGuard guard(reader.db(), deadline, stop);
  PartitionTerms terms(reader);
  options.indexed_keywords = reader.indexed_keywords();
  options.field_terms = reader.field_terms_recorded();
  options.rowids = reader.rowids();
  return CompileFtsQuery(root, &terms, options);
}

// Compiled queries of one request, by partition day. Thread-safe: the
// threads reading one search's days share it, and a day is compiled once
// (wildcards expand against its vocabulary, which can cost more than the
// search) while another thread asking for the same day waits for it.
class CompiledByDay {
 public:
  // `reading`: how the request reads the matches (Reading).
  CompiledByDay(const query::Node& root, Clock::time_point deadline, CompileOptions reading)
      : root_(root), deadline_(deadline), reading_(std::move(reading)) {}

  // `reader`: a connection to the day's partition, used to compile it.
  // `stop`: as CompileFor's; a compile it stops is not kept.
  Result<const CompiledQuery*> For(std::int64_t day, PartitionReader& reader,
                                   const std::function<bool()>* stop = nullptr) {
    Slot* slot;
    {
      std::lock_guard lock(mu_);
      std::unique_ptr<Slot>& s = by_day_[day];
      if (!s) s = std::make_unique<Slot>();
      slot = s.get();
    }
    std::lock_guard lock(slot->mu);
    if (slot->compiled) return &*slot->compiled;
    auto compiled = CompileFor(reader, root_, deadline_, reading_, stop);
    if (!compiled.ok()) return compiled.status();
    return &slot->compiled.emplace(std::move(*compiled));
  }

 private:
  struct Slot {
    std::mutex mu;
    std::optional<CompiledQuery> compiled;  // guarded by mu; set once
  };
  const query::Node& root_;
  const Clock::time_point deadline_;
  const CompileOptions reading_;
  std::mutex mu_;
  std::map<std::int64_t, std::unique_ptr<Slot>> by_day_;  // guarded by mu_
};

// Appends the newest `want` matches in lo..hi to `out`.
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

// The matches in positions lo..hi (day_positions.h), up to `cap`; nullopt
// when `stop` (if given) turned true meanwhile and the count was given up.
Result<std::optional<std::uint64_t>> RunCount(PartitionReader& reader, const CompiledQuery& q,
                                              EventKey lo, EventKey hi, std::uint64_t cap,
                                              Clock::time_point deadline,
                                              const std::function<bool()>* stop = nullptr) {
  auto stmt = reader.Statement(CountSql(q));
  if (!stmt.ok()) return stmt.status();
  DeadlineGuard guard(reader.db(), deadline, stop);
  BindQuery(**stmt, q, lo, hi, static_cast<std::int64_t>(cap));
  const int rc = (*stmt)->Step();
  const std::uint64_t n = rc == SQLITE_ROW ? static_cast<std::uint64_t>((*stmt)->Int(0)) : 0;
  (*stmt)->Reset();
  if (rc == SQLITE_INTERRUPT && guard.stopped()) return std::optional<std::uint64_t>();
  if (rc != SQLITE_ROW) return SqliteStatus(rc, reader.db(), "count");
  return std::optional<std::uint64_t>(n);
}

// Rows a day's scan (ScanDay) steps through one by one for their keys. Past
// them the day is a broad one for this query: the rest are counted with
// count(*), which costs less per row.
constexpr std::uint64_t kMaxKeyScanRows = 10'000;

// The last `keep` keys added to it: a ring.
class LastKeys {
 public:
  explicit LastKeys(std::size_t keep) : keep_(keep) { keys_.reserve(keep); }
  void Add(EventKey key) {
    if (keys_.size() < keep_) {
      keys_.push_back(key);
    } else {
      keys_[oldest_] = key;
      oldest_ = (oldest_ + 1) % keep_;
    }
  }
  // The keys kept, the last added first.
  std::vector<EventKey> Take() && {
    std::rotate(keys_.begin(), keys_.begin() + static_cast<std::ptrdiff_t>(oldest_), keys_.end());
    std::reverse(keys_.begin(), keys_.end());
    return std::move(keys_);
  }

 private:
  std::size_t keep_;
  std::vector<EventKey> keys_;
  std::size_t oldest_ = 0;  // index of the first added of keys_, once it is full
};

// What a scan of one day's matches found.
struct DayScan {
  std::uint64_t matches = 0;     // in the counted range, up to the cap
  std::vector<EventKey> newest;  // keys of matches below the cursor, newest first
  bool has_newest = false;       // they are the day's newest, as many as asked or all
};

// The positions of the matches in lo..hi in key order, at most ?4.
std::string KeysSql(const CompiledQuery& q, bool newest_first) {
  const MatchClause m = Candidates(q, Need::kPositions);
  return fmt::format("SELECT {} {} ORDER BY {} {} LIMIT ?4", m.key, m.from_where, m.order,
                     newest_first ? "DESC" : "ASC");
}

// Counts the matches in positions lo..hi (day_positions.h), up to `cap`,
// and keeps the positions of the newest `keep` at most `hits_hi` (the
// cursor), in one pass when the day
// holds few of them, or has more and is read `newest_first`. A needle
// query's days are best read oldest first, which FTS5 does faster (a needle
// query exported over five days of 2M events: 48 ms oldest first, 65 ms
// newest first); the newest day is best read newest first, which stops
// early for hits of a broad query. nullopt when `stop` turned true
// meanwhile and the scan was given up.
Result<std::optional<DayScan>> ScanDayPositions(PartitionReader& reader, const CompiledQuery& q,
                                                EventKey lo, EventKey hi, EventKey hits_hi,
                                                std::uint64_t cap, std::size_t keep,
                                                bool newest_first, Clock::time_point deadline,
                                                const std::function<bool()>* stop) {
  DayScan scan;
  if (keep == 0) {
    auto n = RunCount(reader, q, lo, hi, cap, deadline, stop);
    if (!n.ok()) return n.status();
    if (!*n) return std::optional<DayScan>();
    scan.matches = **n;
    return std::optional<DayScan>(std::move(scan));
  }
  const std::uint64_t rows =
      std::min<std::uint64_t>(cap, std::max<std::uint64_t>(kMaxKeyScanRows, keep));
  auto stmt = reader.Statement(KeysSql(q, newest_first));
  if (!stmt.ok()) return stmt.status();
  LastKeys oldest_first(keep);
  EventKey last = 0;
  int rc;
  {
    DeadlineGuard guard(reader.db(), deadline, stop);
    BindQuery(**stmt, q, lo, hi, static_cast<std::int64_t>(rows));
    while ((rc = (*stmt)->Step()) == SQLITE_ROW) {
      last = (*stmt)->Int(0);
      ++scan.matches;
      if (last > hits_hi) continue;
      if (!newest_first) {
        oldest_first.Add(last);
      } else if (scan.newest.size() < keep) {
        scan.newest.push_back(last);
      }
    }
    (*stmt)->Reset();
    if (rc == SQLITE_INTERRUPT && guard.stopped()) return std::optional<DayScan>();
  }
  if (rc != SQLITE_DONE) return SqliteStatus(rc, reader.db(), "search");
  if (!newest_first) scan.newest = std::move(oldest_first).Take();
  const bool whole = scan.matches < rows;
  scan.has_newest = whole || (newest_first && scan.newest.size() == keep);
  if (!whole && rows < cap) {
    // Broad: the rest of the range, past the last key read.
    const EventKey rest_lo = newest_first ? lo : last + 1;
    const EventKey rest_hi = newest_first ? last - 1 : hi;
    if (rest_lo <= rest_hi) {
      auto more = RunCount(reader, q, rest_lo, rest_hi, cap - rows, deadline, stop);
      if (!more.ok()) return more.status();
      if (!*more) return std::optional<DayScan>();
      scan.matches += **more;
    }
  }
  return std::optional<DayScan>(std::move(scan));
}

// ScanDay in keys: the range and cursor mapped to positions, the scan, and
// the positions it kept mapped back to keys.
Result<std::optional<DayScan>> ScanDay(PartitionReader& reader, const CompiledQuery& q, EventKey lo,
                                       EventKey hi, EventKey hits_hi, std::uint64_t cap,
                                       std::size_t keep, bool newest_first,
                                       Clock::time_point deadline,
                                       const std::function<bool()>* stop) {
  auto first = PositionOf(reader, q, lo, false);
  if (!first.ok()) return first.status();
  auto past = PositionOf(reader, q, hi, true);
  if (!past.ok()) return past.status();
  // Without a cursor the hits end where the range does.
  auto past_hits = hits_hi == hi ? past : PositionOf(reader, q, hits_hi, true);
  if (!past_hits.ok()) return past_hits.status();
  auto scan = ScanDayPositions(reader, q, *first, *past - 1, *past_hits - 1, cap, keep,
                               newest_first, deadline, stop);
  if (!scan.ok() || !*scan) return scan;
  if (Status s = KeysAt(reader, q, (*scan)->newest); !s.ok()) return s;
  return scan;
}

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

std::string EventByKeySql() {
  return fmt::format("SELECT {} FROM events AS e WHERE e.key = ?1", kEventColumns);
}

// A key range of one day partition: a search's unit of work.
struct DaySlice {
  std::int64_t day;
  EventKey lo, hi;
};

// Slices shorter than this are not cut further: a statement's own cost
// would outweigh what a helper saves.
constexpr TimeMs kMinSliceMs = 60'000;

TimeMs SpanOf(const DaySlice& d) {
  return KeyTime(d.hi) - KeyTime(d.lo) + 1;
}

// How many slices to cut each of `whole` (one day's part of a range each)
// into, for about `parts` in all (SliceDays).
std::vector<std::size_t> SlicesPerDay(const std::vector<DaySlice>& whole, std::size_t parts) {
  TimeMs range_span = 0;
  for (const DaySlice& d : whole) range_span += SpanOf(d);
  std::vector<std::size_t> n(whole.size());
  std::size_t items = 0;
  for (std::size_t i = 0; i < whole.size(); ++i) {
    const double share = static_cast<double>(SpanOf(whole[i])) / static_cast<double>(range_span);
    const auto wanted = static_cast<std::size_t>(std::lround(static_cast<double>(parts) * share));
    const auto most = static_cast<std::size_t>(SpanOf(whole[i]) / kMinSliceMs);
    n[i] = std::clamp<std::size_t>(std::min(wanted, most), 1, std::max<std::size_t>(parts, 1));
    items += n[i];
  }
  // Then the newest days not cut yet in two, until each thread has as many
  // slices: five days on two threads are otherwise three days' time.
  for (std::size_t i = 0; i < whole.size() && parts > 1 && items % parts != 0; ++i) {
    if (n[i] == 1 && SpanOf(whole[i]) >= 2 * kMinSliceMs) {
      n[i] = 2;
      ++items;
    }
  }
  return n;
}

// The part of lo..hi in each of `days` (newest first), the range cut into
// about `parts` slices of equal time, newest first: a day of the range
// into parts x its share of the range's time, at least one, and then the
// newest uncut days in two while the count of slices is not a multiple of
// `parts`. Cutting a day lets the helpers share it, so that one day on two
// threads takes half a day's time, and five days two and a half. Days are
// not cut further than that: each statement has a cost of its own, which
// grows with the terms a query expands to (a number range, a regex), and
// five days on two threads measured no faster cut in ten.
std::vector<DaySlice> SliceDays(const std::vector<std::int64_t>& days, EventKey lo, EventKey hi,
                                std::size_t parts) {
  std::vector<DaySlice> whole;  // each day's part of the range
  for (std::int64_t day : days) {
    const EventKey day_lo = std::max(lo, FirstKeyAt(DayStart(day)));
    const EventKey day_hi = std::min(hi, FirstKeyAt(DayStart(day) + kMsPerDay) - 1);
    if (day_lo <= day_hi) whole.push_back({day, day_lo, day_hi});
  }
  const std::vector<std::size_t> per_day = SlicesPerDay(whole, parts);
  std::vector<DaySlice> out;
  for (std::size_t i = 0; i < whole.size(); ++i) {
    const DaySlice& d = whole[i];
    const auto n = static_cast<TimeMs>(per_day[i]);
    EventKey top = d.hi;
    for (TimeMs k = n; k > 1; --k) {
      const EventKey cut = FirstKeyAt(KeyTime(d.lo) + SpanOf(d) * (k - 1) / n);
      out.push_back({d.day, cut, top});
      top = cut - 1;
    }
    out.push_back({d.day, d.lo, top});
  }
  return out;
}

}  // namespace

// One search's work in the day partitions of its range, cut into slices
// (SliceDays), newest first, in two steps.
//  1. A SearchHelpers batch with one item per slice, taken in turn by the
//     searching thread and idle helpers: a scan of the slice's matches
//     (ScanDay) that counts them, up to what the count still lacks, and
//     keeps the keys of the newest limit + 1, mostly oldest first, which
//     FTS5 reads faster. The newest slice of a query that checks rows is
//     read newest first, so that if it is broad one statement gives both its
//     hits and its count. A needle query (few matches in every day) so reads
//     each slice once, and with helpers idle the slices are read side by
//     side.
//  2. On the searching thread, once the batch is over (Hits): the hits,
//     newest slice first, read by key from a slice whose scan kept its
//     newest matches, else newest first (RunHits: a slice with more matches
//     than its scan kept keys of, whose newest are found after a few rows).
// A slice is scanned only while it may add to the count or to the hits, and
// a scan is given up once neither holds any more: the count reached its cap
// and newer slices hold enough hits. Participant 0 (the searching thread)
// reads with the search's own lease; each helper leases connections of its
// own. All share the compiled queries.
class SqliteStore::DaySearch {
 public:
  struct Range {
    EventKey lo, hi;   // counted
    EventKey hits_hi;  // hits: below the request's cursor
  };

  // `parts`: the slices to cut the range into, about (SliceDays).
  DaySearch(SqliteStore& store, const SearchRequest& req, const std::vector<std::int64_t>& days,
            std::size_t parts, Range range, Lease& lease, CompiledByDay& compiled)
      : store_(store),
        req_(req),
        slices_(SliceDays(days, range.lo, range.hi, parts)),
        range_(range),
        lease_(lease),
        compiled_(compiled),
        keep_(req.limit == 0 ? 0 : req.limit + 1),
        per_slice_(slices_.size()),
        helpers_(store.helpers_->participants() - 1) {}

  // The batch's items: slice i, newest first.
  std::size_t items() const { return slices_.size(); }

  SearchHelpers::Work work() {
    return [this](std::size_t item, std::size_t who) { return Scan(item, who); };
  }

  // Once the batch is over: the newest limit + 1 hits (at most) and the
  // total, into `page`; or the first error.
  Status Collect(SearchPage& page) {
    if (!error_.ok()) return error_;
    if (Status s = Hits(page.hits); !s.ok()) return s;
    if (req_.count_limit == 0) return Status::Ok();  // not counted: 0, "exact"
    const std::uint64_t counted = counted_.load();
    page.total = std::min<std::uint64_t>(counted, req_.count_limit);
    page.total_exact = counted < req_.count_limit;
    return Status::Ok();
  }

 private:
  // What the scan of a slice found.
  struct SliceScan {
    bool scanned = false;  // guarded by mu_ until the batch is over; so are the others
    bool has_newest = false;
    std::vector<EventKey> newest;  // DayScan::newest
  };
  struct Helper {
    std::optional<Lease> lease;
  };
  using ReadTarget = std::pair<PartitionReader*, const CompiledQuery*>;

  bool Scan(std::size_t i, std::size_t who) {
    const std::function<bool()> moot = [this, i] { return !Wanted(i); };
    if (moot()) return !Done(i);
    auto target = TargetFor(i, who, &moot);
    if (!target.ok()) return moot() ? !Done(i) : Fail(target.status());
    auto [reader, q] = *target;
    if (reader == nullptr) {
      std::lock_guard lock(mu_);
      per_slice_[i].scanned = per_slice_[i].has_newest = true;
      return !Done(i);
    }
    const std::uint64_t counted = counted_.load();
    const std::uint64_t count_cap = req_.count_limit > counted ? req_.count_limit - counted : 0;
    const std::uint64_t cap = std::max<std::uint64_t>(count_cap, keep_);
    // The newest slice of a query that checks rows, or has a prefix term,
    // is read newest first (ScanDay): were it broad, a second statement for
    // its hits would prepare the rows' conditions (a set of events, a regex)
    // or merge the prefix's doclists again.
    const bool newest_first = i == 0 && (q->where != "1" || q->fts_prefix);
    const DaySlice& slice = slices_[i];
    auto scan = ScanDay(*reader, *q, slice.lo, slice.hi, range_.hits_hi, cap, keep_, newest_first,
                        req_.deadline, &moot);
    if (!scan.ok()) return Fail(scan.status());
    if (!*scan) return !Done(i);  // given up: no longer wanted
    counted_.fetch_add((*scan)->matches);
    {
      std::lock_guard lock(mu_);
      SliceScan& d = per_slice_[i];
      d.scanned = true;
      d.has_newest = (*scan)->has_newest;
      d.newest = std::move((*scan)->newest);
    }
    if (who > 0 && store_.helped_slices_ != nullptr) store_.helped_slices_->Add();
    return !Done(i);
  }

  bool CountOpen() const { return req_.count_limit > 0 && counted_.load() < req_.count_limit; }

  // Whether slice i may still give hits: the slices newer than it scanned
  // so far do not hold limit + 1. (A slice scanned without its newest keys
  // has at least limit + 1 matches, below the cursor when it lies below.)
  bool HitsMayNeed(std::size_t i) {
    if (keep_ == 0) return false;
    std::lock_guard lock(mu_);
    std::size_t newer = 0;
    for (std::size_t j = 0; j < i && j < per_slice_.size(); ++j) {
      const SliceScan& d = per_slice_[j];
      if (!d.scanned) continue;
      if (d.has_newest) {
        newer += d.newest.size();
      } else if (slices_[j].hi <= range_.hits_hi) {
        newer += keep_;
      }
    }
    return newer < keep_;
  }

  bool Wanted(std::size_t i) { return CountOpen() || HitsMayNeed(i); }

  // No slice older than slice i has anything to add.
  bool Done(std::size_t i) { return !CountOpen() && !HitsMayNeed(i + 1); }

  // The newest limit + 1 hits, day by day (see the class comment).
  Status Hits(std::vector<StoredEvent>& out) {
    std::size_t need = keep_;
    for (std::size_t i = 0; i < slices_.size() && need > 0; ++i) {
      const DaySlice& slice = slices_[i];
      if (slice.lo > range_.hits_hi) continue;  // above the cursor
      auto target = TargetFor(i, 0);
      if (!target.ok()) return target.status();
      auto [reader, q] = *target;
      if (reader == nullptr) continue;  // dropped since the scan
      const std::size_t before = out.size();
      const SliceScan& d = per_slice_[i];
      if (d.scanned && d.has_newest) {
        auto read = ReadByKey(*reader, d.newest, need, out);
        if (!read.ok()) return read.status();
        if (*read) {
          need -= out.size() - before;
          continue;
        }
        out.resize(before);  // an event replaced since the scan: read the day afresh
      }
      if (Status s = RunHits(*reader, *q, slice.lo, std::min(slice.hi, range_.hits_hi), need,
                             req_.deadline, out);
          !s.ok()) {
        return s;
      }
      need -= out.size() - before;
    }
    return Status::Ok();
  }

  // Appends the events of the first `want` of `keys` (newest first); false
  // when one of them is no longer stored.
  Result<bool> ReadByKey(PartitionReader& reader, const std::vector<EventKey>& keys,
                         std::size_t want, std::vector<StoredEvent>& out) {
    const std::string sql = EventByKeySql();
    for (std::size_t n = 0; n < want && n < keys.size(); ++n) {
      auto found = GetOne(reader, sql, static_cast<std::int64_t>(keys[n]));
      if (!found.ok()) return found.status();
      if (!*found) return false;
      out.push_back(std::move(**found));
    }
    return true;
  }

  // Slice i's connection and compiled query for participant `who`. Compiling
  // (wildcards expand against the day's vocabulary) stops early, with an
  // error, when `stop` turns true.
  Result<ReadTarget> TargetFor(std::size_t i, std::size_t who,
                               const std::function<bool()>* stop = nullptr) {
    ReaderSet* readers = lease_.operator->();
    if (who > 0) {
      Helper& h = helpers_[who - 1];
      if (!h.lease) h.lease.emplace(store_, store_.TakeReaderSet());
      readers = h.lease->operator->();
    }
    auto reader = readers->For(slices_[i].day);
    if (!reader.ok()) return reader.status();
    if (!*reader) return ReadTarget{nullptr, nullptr};  // dropped: an empty day
    auto q = compiled_.For(slices_[i].day, **reader, stop);
    if (!q.ok()) return q.status();
    return ReadTarget{*reader, *q};
  }

  bool Fail(Status s) {
    std::lock_guard lock(mu_);
    if (error_.ok()) error_ = std::move(s);
    return false;
  }

  SqliteStore& store_;
  const SearchRequest& req_;
  const std::vector<DaySlice> slices_;
  const Range range_;
  Lease& lease_;
  CompiledByDay& compiled_;
  const std::size_t keep_;            // hits wanted: limit + 1, or 0
  std::vector<SliceScan> per_slice_;  // as slices_
  std::vector<Helper> helpers_;       // by participant - 1; each touched by one thread
  std::atomic<std::uint64_t> counted_{0};
  std::mutex mu_;
  Status error_;  // guarded by mu_; read once the batch is over
};

SqliteStore::SqliteStore(SqliteStoreOptions options, const Log& log)
    : options_(std::move(options)),
      log_(log),
      partitions_(options_.data_dir),
      writer_(partitions_, options_.writer, log),
      helpers_(
          std::make_unique<SearchHelpers>(options_.search_helpers, options_.helper_thread_start)) {
  if (options_.metrics != nullptr) {
    helped_slices_ = &options_.metrics->GetCounter(
        "dashcam_search_helper_partitions_total",
        "Slices of day partitions a helper thread searched (for hits or the count) for another "
        "thread");
  }
}

SqliteStore::~SqliteStore() {
  Close();
}

Result<std::unique_ptr<SqliteStore>> SqliteStore::Open(SqliteStoreOptions options, const Log& log) {
  std::unique_ptr<SqliteStore> store(new SqliteStore(std::move(options), log));
  if (auto s = store->partitions_.Discover(); !s.ok()) return s;
  if (auto s = store->QuarantineDamaged(); !s.ok()) return s;
  SqliteStore* self = store.get();
  auto now = self->options_.now ? self->options_.now : WallClockMs;
  Compactor::RoomFn room;
  if (const std::uint64_t limit = self->options_.retention.max_disk_bytes; limit > 0) {
    room = [self, limit](std::uint64_t bytes) {
      std::uint64_t used = 0;
      for (const PartitionInfo& p : self->partitions_.List()) used += p.bytes;
      return used + bytes <= limit;
    };
  }
  CompactionPolicy compaction = self->options_.compaction;
  // Documents the writer stores uncompressed stay so: compaction encodes
  // none of them anew either.
  if (self->options_.writer.partition.compression.sample_events == 0) {
    compaction.steps.day_dictionary_events = std::numeric_limits<std::uint64_t>::max();
  }
  store->compactor_ = std::make_unique<Compactor>(compaction, self->partitions_, now, log,
                                                  self->options_.metrics, std::move(room));
  store->retention_ = std::make_unique<RetentionEnforcer>(
      self->options_.retention, [self] { return self->partitions_.List(); },
      [self](std::int64_t day) { return self->DropPartition(day); }, std::move(now), log,
      self->options_.metrics);
  store->writer_.SetAfterCommit([self] { self->retention_->Poke(); });
  store->writer_.Start();
  store->retention_->Start();  // drops what is due before the first request
  store->compactor_->Start();
  return store;
}

// Moves aside every partition file that cannot be served; fails only for
// what moving aside would not fix (an unreadable directory, a newer schema).
Status SqliteStore::QuarantineDamaged() {
  for (const PartitionInfo& p : partitions_.List()) {
    Status s = CheckPartitionFile(p.path);
    if (s.ok()) s = UpgradePartition(p.path, p.day);
    if (s.ok()) continue;
    if (s.code() != StatusCode::kCorruption) return s.WithMessage(p.path + ": " + s.message());
    auto moved = partitions_.Quarantine(p.day);
    if (!moved.ok()) return moved.status();
    log_.Error("partition_quarantined",
               {{"partition", FormatDay(p.day)},
                {"path", p.path},
                {"moved_to", moved->moved.empty() ? std::string() : moved->moved.back()},
                {"bytes", moved->bytes},
                {"error", s.message()}});
  }
  return Status::Ok();
}

Result<DroppedPartition> SqliteStore::DropPartition(std::int64_t day) {
  Result<DroppedPartition> out = Status::Internal("drop did not run");
  auto ran = writer_.RunExclusive(day, [&] {
    DroppedPartition d;
    d.day = day;
    // The count before the files move; the level counts answer it cheaply.
    Db db;
    if (db.Open(partitions_.PathFor(day), SQLITE_OPEN_READONLY).ok()) {
      if (auto stmt = db.Prepare("SELECT coalesce(sum(n), 0) FROM level_minutes");
          stmt.ok() && stmt->Step() == SQLITE_ROW) {
        d.events = static_cast<std::uint64_t>(stmt->Int(0));
      }
    }
    db.Close();
    auto removed = partitions_.Drop(day);
    if (!removed.ok()) {
      out = removed.status();
      return;
    }
    d.bytes = removed->bytes;
    out = std::move(d);
  });
  if (!ran.ok()) return ran;
  // Idle connections would keep the dropped files (and their space) alive.
  std::lock_guard lock(pool_mu_);
  for (auto& set : idle_readers_) set->EvictDropped();
  return out;
}

RetentionStatus SqliteStore::Retention() {
  return retention_->Status();
}

CompactionStatus SqliteStore::Compaction() {
  return compactor_->Status();
}

void SqliteStore::Append(std::vector<Record> records, AppendCallback done) {
  writer_.Submit(std::move(records), std::move(done));
}

std::uint64_t SqliteStore::NewAppendStream() {
  return writer_.NewStream();
}

void SqliteStore::AppendPart(std::vector<Record> records, AppendCallback done, std::uint64_t stream,
                             bool more) {
  writer_.Submit(std::move(records), std::move(done), BatchPart{stream, more});
}

void SqliteStore::Close() {
  if (compactor_) compactor_->Stop();
  if (retention_) retention_->Stop();
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
  return Lease(*this, TakeReaderSet());
}

std::unique_ptr<SqliteStore::ReaderSet> SqliteStore::TakeReaderSet() {
  std::unique_ptr<ReaderSet> set;
  {
    std::lock_guard lock(pool_mu_);
    if (!idle_readers_.empty()) {
      set = std::move(idle_readers_.back());
      idle_readers_.pop_back();
    }
  }
  if (!set) set = std::make_unique<ReaderSet>(partitions_, options_.reader_cache_kib);
  return set;
}

Result<SearchPage> SqliteStore::Search(const SearchRequest& req) {
  return OnceMoreIfRowidsChanged([&] { return SearchOnce(req); });
}

Result<SearchPage> SqliteStore::SearchOnce(const SearchRequest& req) {
  if (req.query == nullptr) return Status::InvalidArgument("no query");
  // Errors that do not depend on a partition surface even with none.
  auto checked = CompileFtsQuery(*req.query);
  if (!checked.ok()) return checked.status();
  const auto [from, to] = ReadRange(req);
  // A page and a capped count.
  CompiledByDay compiled(*req.query, req.deadline,
                         Reading(from, to, std::max<std::size_t>(1, req.count_limit + req.limit)));
  SearchPage page;
  if (from >= to) return page;
  const EventKey lo = FirstKeyAt(from), hi = FirstKeyAt(to) - 1;
  const EventKey hits_hi = req.before ? std::min(hi, *req.before - 1) : hi;
  const std::vector<std::int64_t> days = partitions_.DaysOverlapping(from, to);
  Lease lease = LeaseReaders();

  // Slice by slice, newest first, on this thread and idle helpers
  // (search_helpers.h): the range in as many slices as they are, unless
  // each statement merges a prefix's doclists for its whole day.
  const std::size_t parts = checked->fts_prefix ? 1 : helpers_->participants();
  DaySearch search(*this, req, days, parts, {lo, hi, hits_hi}, lease, compiled);
  helpers_->Start(search.items(), search.work()).Finish();
  if (Status s = search.Collect(page); !s.ok()) return s;
  if (page.hits.size() > req.limit) {
    page.hits.resize(req.limit);  // limit >= 1 here: nothing is fetched for 0
    page.next = page.hits.back().key;
  }
  return page;
}

// The events in key order, as the exploration's other row scans read them.
Result<TermsResult> SqliteStore::TopValues(const SearchRequest& req, const std::string& field,
                                           std::size_t size, std::size_t max_events) {
  return TopValuesByScan(*this, req, field, size, max_events);
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
      if (*reader) {  // else dropped since Contains
        auto found = GetOne(**reader, EventByKeySql(), *key);
        if (!found.ok() || *found) return found;
      }
    }
  }
  const std::string sql =
      fmt::format("SELECT {} FROM events AS e WHERE e.doc_id = ?1", kEventColumns);
  for (std::int64_t day : partitions_.DaysOverlapping(kMinEventTime, kMaxEventTime)) {
    auto reader = lease->For(day);
    if (!reader.ok()) return reader.status();
    if (!*reader) continue;
    auto found = GetOne(**reader, sql, id);
    if (!found.ok() || *found) return found;
  }
  return std::optional<StoredEvent>();
}

namespace {

std::string ScanSql(const CompiledQuery& q, bool ascending) {
  const MatchClause m = Candidates(q, Need::kEvents);
  return fmt::format("SELECT {} {} ORDER BY {} {} LIMIT ?4", kEventColumns, m.from_where, m.order,
                     ascending ? "ASC" : "DESC");
}

// Whether a scan of several key ranges of a day (`ranges`, ascending) runs
// one statement over their hull, skipping the matches between them, rather
// than one per range: when the hull holds fewer events than a statement per
// range would cost in rows read (counted, up to that many, with `every`:
// match-all). A statement's setup grows with the day's index: FTS5 opens
// every segment holding a term (~30 us at 20k events, ~70 at 100k, the cost
// of ~16 rows), and merges every doclist of a prefix term whole
// (CompiledQuery::merges_prefix), which on a day of the prefix's matches
// costs far more than a few hundred rows.
constexpr std::uint64_t kHullEventsPerRange = 16;
constexpr std::uint64_t kHullEventsPerPrefixRange = 256;

Result<bool> OneStatementForRanges(PartitionReader& reader, const CompiledQuery& q,
                                   CompiledByDay& every, std::int64_t day,
                                   std::span<const KeyRange> ranges, Clock::time_point deadline) {
  if (ranges.size() < 2) return false;
  auto all = every.For(day, reader);
  if (!all.ok()) return all.status();
  const std::uint64_t cap =
      (q.merges_prefix ? kHullEventsPerPrefixRange : kHullEventsPerRange) * ranges.size();
  auto n = RunCount(reader, **all, ranges.front().lo, ranges.back().hi, cap, deadline);
  if (!n.ok()) return n.status();
  return **n < cap;
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

bool InAnyRange(std::span<const KeyRange> ascending, EventKey key) {
  auto it = std::upper_bound(ascending.begin(), ascending.end(), key,
                             [](EventKey k, const KeyRange& r) { return k < r.lo; });
  return it != ascending.begin() && key <= std::prev(it)->hi;
}

// Appends matches in [lo, hi] to `page` until the page is full (req.limit
// events or req.max_bytes of sources), which sets page.more. When `keep`
// (ascending) is not empty, only matches inside its ranges count.
Status RunScan(PartitionReader& reader, const std::string& sql, const CompiledQuery& q,
               const ScanRequest& req, EventKey lo, EventKey hi, ScanPage& page, std::size_t& bytes,
               std::span<const KeyRange> keep = {}) {
  auto stmt = reader.Statement(sql);
  if (!stmt.ok()) return stmt.status();
  ScanGuard guard(reader.db(), req);
  const std::int64_t limit =
      keep.empty() ? static_cast<std::int64_t>(req.limit - page.events.size()) : -1;
  BindQuery(**stmt, q, lo, hi, limit);
  int rc;
  while ((rc = (*stmt)->Step()) == SQLITE_ROW) {
    if (!keep.empty() && !InAnyRange(keep, (*stmt)->Int(0))) continue;
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
  return OnceMoreIfRowidsChanged([&] { return ScanOnce(req); });
}

Result<ScanPage> SqliteStore::ScanOnce(const ScanRequest& req) {
  if (req.query == nullptr) return Status::InvalidArgument("no query");
  if (auto checked = CompileFtsQuery(*req.query); !checked.ok()) return checked.status();
  EventKey lo = std::max(req.lo, FirstKeyAt(kMinEventTime));
  EventKey hi = std::min(req.hi, FirstKeyAt(kMaxEventTime) - 1);
  if (lo <= hi) {
    TimeMs from = KeyTime(lo), to = KeyTime(hi) + 1;
    NarrowToTimestampRanges(*req.query, from, to);
    lo = std::max(lo, FirstKeyAt(from));
    hi = std::min(hi, FirstKeyAt(to) - 1);
  }
  // A statement per page.
  CompiledByDay compiled(
      *req.query, req.deadline,
      Reading(KeyTime(lo), KeyTime(hi) + 1, std::max<std::size_t>(1, req.limit)));
  // Counts the events between ranges (OneStatementForRanges).
  const query::Node match_all = query::Node::MatchAll();
  CompiledByDay every(match_all, req.deadline, Reading(KeyTime(lo), KeyTime(hi) + 1, 0));
  ScanPage page;
  if (lo > hi || req.limit == 0) return page;
  const std::vector<KeyRange> ranges = RangesWithin(req, lo, hi);  // ascending
  if (ranges.empty()) return page;
  std::vector<std::int64_t> days = partitions_.DaysOverlapping(KeyTime(lo), KeyTime(hi) + 1);
  if (req.ascending) std::reverse(days.begin(), days.end());
  Lease lease = LeaseReaders();
  std::size_t bytes = 0;
  for (std::int64_t day : days) {
    if (page.more) break;
    // The ranges' parts in this day, ascending.
    std::vector<KeyRange> here =
        ClipRanges(ranges, FirstKeyAt(DayStart(day)), FirstKeyAt(DayStart(day + 1)) - 1);
    if (here.empty()) continue;
    auto reader = lease->For(day);
    if (!reader.ok()) return reader.status();
    if (!*reader) continue;  // dropped since listed
    auto q = compiled.For(day, **reader);
    if (!q.ok()) return q.status();
    const std::string sql = ScanSql(**q, req.ascending);
    auto hull = OneStatementForRanges(**reader, **q, every, day, here, req.deadline);
    if (!hull.ok()) return hull.status();
    if (*hull) {
      const Status s =
          RunScan(**reader, sql, **q, req, here.front().lo, here.back().hi, page, bytes, here);
      if (!s.ok()) return s;
      continue;
    }
    if (!req.ascending) std::reverse(here.begin(), here.end());
    for (auto it = here.begin(); it != here.end() && !page.more; ++it) {
      if (auto s = RunScan(**reader, sql, **q, req, it->lo, it->hi, page, bytes); !s.ok()) return s;
    }
  }
  return page;
}

void SqliteStore::SetCommitObserver(CommitObserver observer) {
  writer_.SetCommitObserver(std::move(observer));
}

}  // namespace dashcam::storage

// ---- Exploration: histograms, field statistics, neighbours, extent ----

namespace dashcam::storage {
namespace {

using ReaderFor = std::function<Result<PartitionReader*>(std::int64_t day)>;

// Rows of the events matching `q` in keys [lo, hi] of one partition, in key
// order: the key (a position with Need::kPositions), then `columns` (which
// may name `e.` events columns with Need::kEvents), from the candidates of
// Candidates().
std::string RowsSql(const CompiledQuery& q, std::string_view columns, Need need,
                    bool newest_first) {
  const MatchClause m = Candidates(q, need);
  return fmt::format("SELECT {}, {} {} ORDER BY {} {}", m.key, columns, m.from_where, m.order,
                     newest_first ? "DESC" : "ASC");
}

// Steps `sql` (bound like a search of q over keys [lo, hi]) and calls
// fn(const Stmt&) for each row until it returns false.
template <class Fn>
Status ForEachRow(PartitionReader& reader, const std::string& sql, const CompiledQuery& q,
                  EventKey lo, EventKey hi, Clock::time_point deadline, Fn&& fn) {
  if (lo > hi) return Status::Ok();
  auto stmt = reader.Statement(sql);
  if (!stmt.ok()) return stmt.status();
  DeadlineGuard guard(reader.db(), deadline);
  BindQuery(**stmt, q, lo, hi, 0);
  int rc;
  while ((rc = (*stmt)->Step()) == SQLITE_ROW) {
    if (!fn(static_cast<const Stmt&>(**stmt))) {
      rc = SQLITE_DONE;
      break;
    }
  }
  (*stmt)->Reset();
  return SqliteStatus(rc, reader.db(), "scan");
}

// The columns a HistogramRowReader reads: the document only when it needs
// it, as SQLite computes every result column of a row (a histogram of
// `epoch` by level decoded each of its 745 000 documents: 1.0 s of 1.1).
const char* HistogramColumns(const HistogramRowReader& rows) {
  return rows.needs_document() ? "dc_name(e.level), dc_name(e.idx), dc_source(e.source)"
                               : "dc_name(e.level), dc_name(e.idx), ''";
}

// Where each bucket of `interval` in [from, to) starts among a clean
// numbered day's docnos, as (bucket time, first docno): a lookup per bucket
// when there are few of them (a 3 h histogram: 8 a day), else from the
// level counts' minutes (MinuteStarts; a 1 m histogram: one read of the day's
// 1 440 minutes, ~1 ms); nullopt otherwise (the matches' keys are read).
Result<std::optional<std::vector<std::pair<TimeMs, std::int64_t>>>> DocnoBucketStarts(
    PartitionReader& reader, const CompiledQuery& q, TimeMs from, TimeMs to, TimeMs interval) {
  constexpr std::uint64_t kMaxLookups = 64;
  using Starts = std::vector<std::pair<TimeMs, std::int64_t>>;
  if (HistogramAccumulator::BucketCount(from, to, interval) <= kMaxLookups) {
    Starts out;
    for (TimeMs t = from; t < to; t = (t / interval + 1) * interval) {
      auto docno = PositionOf(reader, q, FirstKeyAt(t), false);
      if (!docno.ok()) return docno.status();
      out.emplace_back(t, *docno);
    }
    return std::optional<Starts>(std::move(out));
  }
  // Seconds are not worth it: 6 h of them are ~40 000 rows of the bench's
  // logs, 5 ms, where a rare query's keys cost far less.
  if (interval % kMsPerMinute != 0) return std::optional<Starts>();
  auto units = MinuteStarts(reader, q, from, to);
  if (!units.ok()) return units.status();
  return std::optional<Starts>(std::move(*units));
}

// Histogram of a clean numbered day's matches in keys lo..hi, by docno
// (DocnoBucketStarts), so that no match's key is read. False when the
// buckets cannot be found so.
Result<bool> DocnosHistogram(PartitionReader& reader, const CompiledQuery& q, std::int64_t day,
                             EventKey lo, EventKey hi, TimeMs interval, Clock::time_point deadline,
                             HistogramAccumulator& acc, bool& overflow) {
  const TimeMs from = std::max(KeyTime(lo), day * kMsPerDay);
  const TimeMs to = std::min(KeyTime(hi) + 1, (day + 1) * kMsPerDay);
  if (from >= to) return true;
  auto starts = DocnoBucketStarts(reader, q, from, to, interval);
  if (!starts.ok()) return starts.status();
  if (!*starts) return false;
  if ((*starts)->empty()) return true;  // no event in the range
  auto first = PositionOf(reader, q, lo, false);
  if (!first.ok()) return first.status();
  auto past = PositionOf(reader, q, hi, true);
  if (!past.ok()) return past.status();
  std::size_t at = 0;
  const std::vector<std::pair<TimeMs, std::int64_t>>& units = **starts;
  Status s = ForEachRow(reader, RowsSql(q, "0", Need::kPositions, false), q, *first, *past - 1,
                        deadline, [&](const Stmt& row) {
                          const std::int64_t docno = row.Int(0);
                          while (at + 1 < units.size() && units[at + 1].second <= docno) ++at;
                          overflow = !acc.Add(units[at].first, {}, {});
                          return !overflow;
                        });
  if (!s.ok()) return s;
  return true;
}

// Histogram of one day's matches of `q` in keys lo..hi, counted without a
// split (keys, or docnos on a numbered day: no event row is read).
Status MatchesHistogram(PartitionReader& reader, const CompiledQuery& q, std::int64_t day,
                        EventKey lo, EventKey hi, TimeMs interval, Clock::time_point deadline,
                        HistogramAccumulator& acc, bool& overflow) {
  if (ReadsDocnos(q)) {
    auto done = DocnosHistogram(reader, q, day, lo, hi, interval, deadline, acc, overflow);
    if (!done.ok() || *done) return done.status();
  }
  return ForEachRow(reader, RowsSql(q, "''", Need::kKeys, false), q, lo, hi, deadline,
                    [&](const Stmt& row) {
                      overflow = !acc.Add(KeyTime(row.Int(0)), {}, {});
                      return !overflow;
                    });
}

// One read transaction on a reader's connection while it lives, so that the
// statements run in it read one snapshot of a file being written.
class ReadSnapshot {
 public:
  explicit ReadSnapshot(PartitionReader& reader) : db_(reader.db()) {
    open_ = sqlite3_exec(db_, "BEGIN", nullptr, nullptr, nullptr) == SQLITE_OK;
  }
  // A snapshot left open would keep every later read of the connection in
  // the past (and the WAL from being reset): a statement still stepping is
  // reset, and the end tried again.
  ~ReadSnapshot() {
    if (!open_ || sqlite3_get_autocommit(db_)) return;
    if (sqlite3_exec(db_, "COMMIT", nullptr, nullptr, nullptr) == SQLITE_OK) return;
    for (sqlite3_stmt* s = sqlite3_next_stmt(db_, nullptr); s; s = sqlite3_next_stmt(db_, s)) {
      if (sqlite3_stmt_busy(s)) sqlite3_reset(s);
    }
    sqlite3_exec(db_, "COMMIT", nullptr, nullptr, nullptr);
  }
  ReadSnapshot(const ReadSnapshot&) = delete;
  ReadSnapshot& operator=(const ReadSnapshot&) = delete;

 private:
  sqlite3* db_;
  bool open_ = false;
};

// A day's histogram of `root` by level (the page's histogram) from the
// index alone, where the day's meta says the terms log.level:L and level:L
// hold exactly the events of level L (partition.h, level_terms): for each
// level of the range, the matches of `root AND (log.level:"L" OR
// level:"L")` (log.level alone on files of version 13) by key or docno; events
// without a level are the rest of `q`'s (root's) matches. All in one
// snapshot, so that events written meanwhile count nowhere rather than as
// missing. Reading each match's level from its events row cost ~1 us a
// match (`epoch`, 745 000 matches in a day). False when the day does not
// allow it, or a level's query needs rows checked: the caller reads the
// rows.
Result<bool> LevelHistogramFromIndex(PartitionReader& reader, std::int64_t day,
                                     const query::Node& root, const CompiledQuery& q, EventKey lo,
                                     EventKey hi, const HistogramSpec& spec,
                                     Clock::time_point deadline, HistogramAccumulator& acc,
                                     bool& overflow) {
  ReadSnapshot snapshot(reader);
  auto level_fields = reader.LevelTermFields();
  if (!level_fields.ok()) return level_fields.status();
  if (level_fields->empty()) return false;
  const TimeMs from = KeyTime(lo), to = KeyTime(hi) + 1;
  auto levels = reader.Statement(
      "SELECT DISTINCT level FROM level_minutes WHERE minute BETWEEN ?1 AND ?2 AND n > 0");
  if (!levels.ok()) return levels.status();
  (*levels)->Bind(1, from / kMsPerMinute);
  (*levels)->Bind(2, (to - 1) / kMsPerMinute);
  std::vector<std::string> names;
  bool missing = false;  // events without a level
  int rc;
  while ((rc = (*levels)->Step()) == SQLITE_ROW) {
    const std::string_view name = (*levels)->Text(0);
    if (name.empty())
      missing = true;
    else
      names.emplace_back(name);
  }
  (*levels)->Reset();
  if (rc != SQLITE_DONE) return SqliteStatus(rc, reader.db(), "levels");

  // Each query's matches by bucket start, counted apart.
  HistogramSpec counts_only;
  counts_only.interval = spec.interval;
  auto count = [&](const CompiledQuery& c) -> Result<std::vector<HistogramTable::Bucket>> {
    HistogramAccumulator one(from, to, counts_only, std::vector<std::string>());
    bool full = false;
    if (Status s = MatchesHistogram(reader, c, day, lo, hi, spec.interval, deadline, one, full);
        !s.ok()) {
      return s;
    }
    return std::move(one.Finish(false).buckets);
  };
  std::vector<std::vector<HistogramTable::Bucket>> by_level;
  for (const std::string& name : names) {
    query::Node level{query::NodeKind::kOr, 0, {}, {}, {}};
    for (std::string_view field : *level_fields) {
      level.children.push_back(query::Node::MakeTerm(
          query::Term{std::string(field), name, /*phrase=*/true, /*prefix=*/false}, 0));
    }
    if (level.children.size() == 1) {
      query::Node only = std::move(level.children.front());
      level = std::move(only);
    }
    const query::Node both{query::NodeKind::kAnd, 0, {root, std::move(level)}, {}, {}};
    auto compiled = CompileFor(reader, both, deadline, Reading(from, to, 0));
    if (!compiled.ok()) return compiled.status();
    if (!compiled->fts || compiled->where != "1") return false;  // rows to check after all
    auto buckets = count(*compiled);
    if (!buckets.ok()) return buckets.status();
    by_level.push_back(std::move(*buckets));
  }
  std::vector<HistogramTable::Bucket> all;
  if (missing) {
    auto buckets = count(q);
    if (!buckets.ok()) return buckets.status();
    all = std::move(*buckets);
  }

  std::map<TimeMs, std::uint64_t> with_level;  // by bucket start
  for (std::size_t i = 0; i < names.size() && !overflow; ++i) {
    const std::string_view value[] = {names[i]};
    for (const HistogramTable::Bucket& b : by_level[i]) {
      with_level[b.start] += b.total.count;
      overflow = !acc.Add(std::max(from, b.start), value, {}, b.total.count);
      if (overflow) break;
    }
  }
  for (const HistogramTable::Bucket& b : all) {
    if (overflow) break;
    const std::uint64_t leveled = with_level[b.start];
    if (b.total.count > leveled) {
      overflow = !acc.Add(std::max(from, b.start), {}, {}, b.total.count - leveled);
    }
  }
  return true;
}

// The query whose matches `root` excludes: x for `NOT x`, `a OR b` for
// `NOT a AND NOT b`; nullopt for any other query.
std::optional<query::Node> ComplementOf(const query::Node& root) {
  if (root.kind == query::NodeKind::kNot) return root.children[0];
  if (root.kind != query::NodeKind::kAnd || root.children.empty()) return std::nullopt;
  query::Node any{query::NodeKind::kOr, root.position, {}, {}, {}};
  for (const query::Node& c : root.children) {
    if (c.kind != query::NodeKind::kNot) return std::nullopt;
    any.children.push_back(c.children[0]);
  }
  return any;
}

Result<bool> ComplementHistogram(PartitionReader& reader, std::int64_t day, const query::Node& x,
                                 EventKey lo, EventKey hi, const HistogramSpec& spec,
                                 Clock::time_point deadline, HistogramAccumulator& acc,
                                 bool& overflow);

// Histogram of events read row by row (the level column, or documents).
// Sets `overflow` when discovering keys ran past the limit.
Status ScanHistogram(const ReaderFor& reader_for, const std::vector<std::int64_t>& days,
                     const query::Node& root, CompiledByDay& compiled, EventKey lo, EventKey hi,
                     const HistogramSpec& spec, Clock::time_point deadline,
                     HistogramAccumulator& acc, bool& overflow) {
  HistogramRowReader rows(spec);
  const bool need_events = !spec.split_field.empty() || !spec.value_field.empty();
  const bool by_level_only = spec.split_field == kLevelSplit && spec.value_field.empty();
  const std::optional<query::Node> excluded =
      !need_events || by_level_only ? ComplementOf(root) : std::nullopt;
  for (std::int64_t day : days) {
    auto reader = reader_for(day);
    if (!reader.ok()) return reader.status();
    if (!*reader) continue;  // dropped since listed
    if (excluded) {
      auto done =
          ComplementHistogram(**reader, day, *excluded, lo, hi, spec, deadline, acc, overflow);
      if (!done.ok()) return done.status();
      if (overflow) return Status::Ok();
      if (*done) continue;
    }
    auto q = compiled.For(day, **reader);
    if (!q.ok()) return q.status();
    if (by_level_only && (*q)->fts && (*q)->where == "1") {
      auto done =
          LevelHistogramFromIndex(**reader, day, root, **q, lo, hi, spec, deadline, acc, overflow);
      if (!done.ok()) return done.status();
      if (overflow) return Status::Ok();
      if (*done) continue;
    }
    if (!need_events) {
      Status s =
          MatchesHistogram(**reader, **q, day, lo, hi, spec.interval, deadline, acc, overflow);
      if (!s.ok() || overflow) return s;
      continue;
    }
    const std::string sql = RowsSql(**q, HistogramColumns(rows), Need::kEvents, false);
    auto s = ForEachRow(**reader, sql, **q, lo, hi, deadline, [&](const Stmt& row) {
      if (!rows.Read(row.Text(1), row.Text(2), row.Text(3))) return true;
      overflow = !acc.Add(KeyTime(row.Int(0)), rows.values(), rows.numbers());
      return !overflow;
    });
    if (!s.ok() || overflow) return s;
  }
  return Status::Ok();
}

// The level counts' unit that buckets of `interval` are made of: a minute,
// a second, or 0 when they are not whole seconds.
TimeMs LevelCountsUnit(TimeMs interval) {
  if (interval % kMsPerMinute == 0) return kMsPerMinute;
  return interval % kMsPerSecond == 0 ? kMsPerSecond : 0;
}

// Histogram of all events by level from the per-second or per-minute level
// counts (partition.h), reading events only for the partial units at the
// ends of the range. REQUIRES: the interval is a whole number of units, so a
// unit never straddles two buckets.
Status LevelCountsHistogram(const ReaderFor& reader_for, const std::vector<std::int64_t>& days,
                            TimeMs from, TimeMs to, TimeMs unit, bool by_level,
                            Clock::time_point deadline, HistogramAccumulator& acc, bool& overflow) {
  const std::string counts_sql =
      unit == kMsPerMinute
          ? "SELECT minute, level, n FROM level_minutes WHERE minute BETWEEN ?1 AND ?2"
          : "SELECT second, level, n FROM level_seconds WHERE second BETWEEN ?1 AND ?2";
  const std::string edge_sql =
      "SELECT dc_name(level), count(*) FROM events WHERE key BETWEEN ?1 AND ?2 GROUP BY level";
  const TimeMs first_full = (from + unit - 1) / unit;  // unit numbers: [first_full, end_full)
  const TimeMs end_full = to / unit;
  auto add = [&](TimeMs t, std::string_view level, std::int64_t n) {
    if (n <= 0) return true;
    const std::string_view values[] = {level};
    const std::span<const std::string_view> split =
        by_level && !level.empty() ? std::span(values) : std::span<const std::string_view>();
    overflow = !acc.Add(t, split, {}, static_cast<std::uint64_t>(n));
    return !overflow;
  };
  // Steps `stmt`, adding each row (t from `time_of`, level, count).
  auto drain = [&](PartitionReader& reader, Stmt& stmt, auto time_of, int level_col,
                   int count_col) -> Status {
    int rc;
    while ((rc = stmt.Step()) == SQLITE_ROW &&
           add(time_of(stmt), stmt.Text(level_col), stmt.Int(count_col))) {
    }
    stmt.Reset();
    return rc == SQLITE_ROW ? Status::Ok() : SqliteStatus(rc, reader.db(), "level counts");
  };
  for (std::int64_t day : days) {
    auto reader = reader_for(day);
    if (!reader.ok()) return reader.status();
    if (!*reader) continue;  // dropped since listed
    DeadlineGuard guard((*reader)->db(), deadline);
    // [from, to) within this day: whole units from the table, the rest counted.
    const TimeMs lo = std::max(from, DayStart(day)), hi = std::min(to, DayStart(day + 1));
    const TimeMs u0 = std::max(first_full, lo / unit);
    const TimeMs u1 = std::min(end_full, (hi + unit - 1) / unit);
    if (u0 < u1) {
      auto stmt = (*reader)->Statement(counts_sql);
      if (!stmt.ok()) return stmt.status();
      (*stmt)->Bind(1, u0);
      (*stmt)->Bind(2, u1 - 1);
      auto s = drain(
          **reader, **stmt, [&](const Stmt& st) { return st.Int(0) * unit; }, 1, 2);
      if (!s.ok() || overflow) return s;
    }
    // The partial units at either end, each within one unit (when there are
    // no whole units, the two halves around the one boundary).
    const TimeMs split = std::max(first_full, end_full) * unit;
    const std::pair<TimeMs, TimeMs> edges[] = {{lo, std::min(hi, first_full * unit)},
                                               {std::max(lo, split), hi}};
    for (const auto& [a, b] : edges) {
      if (a >= b) continue;
      auto stmt = (*reader)->Statement(edge_sql);
      if (!stmt.ok()) return stmt.status();
      (*stmt)->Bind(1, FirstKeyAt(a));
      (*stmt)->Bind(2, FirstKeyAt(b) - 1);
      // Every event of an edge range falls in the bucket of its start.
      auto s = drain(
          **reader, **stmt, [a = a](const Stmt&) { return a; }, 0, 1);
      if (!s.ok() || overflow) return s;
    }
  }
  return Status::Ok();
}

// Counts of a finished table by bucket start and split value ("": none).
// False when some fell in `other` (more values than keys).
bool CellCounts(const HistogramTable& t,
                std::map<std::pair<TimeMs, std::string>, std::uint64_t>& out) {
  for (const HistogramTable::Bucket& b : t.buckets) {
    if (t.keys.empty()) {
      out[{b.start, ""}] += b.total.count;
      continue;
    }
    if (b.other.count > 0) return false;
    for (std::size_t k = 0; k < t.keys.size(); ++k) out[{b.start, t.keys[k]}] += b.by_key[k].count;
    out[{b.start, ""}] += b.missing.count;
  }
  return true;
}

// A day's histogram, by level or by nothing, of the events that do not
// match `x` (ComplementOf): the day's events from the level counts minus
// x's matches from the index (by level through LevelHistogramFromIndex),
// in one snapshot. Both read no event row, where checking `NOT x` reads
// every event of the range (`NOT log.level:INFO` by level, 1M events:
// 250 ms). False when x needs rows checked, the interval is not whole
// seconds, or (by level) the day's level terms do not tell levels or x has
// a prefix term: the caller reads the rows.
Result<bool> ComplementHistogram(PartitionReader& reader, std::int64_t day, const query::Node& x,
                                 EventKey lo, EventKey hi, const HistogramSpec& spec,
                                 Clock::time_point deadline, HistogramAccumulator& acc,
                                 bool& overflow) {
  const TimeMs unit = LevelCountsUnit(spec.interval);
  if (unit == 0) return false;
  const bool by_level = spec.split_field == kLevelSplit;
  const TimeMs from = KeyTime(lo), to = KeyTime(hi) + 1;
  ReadSnapshot snapshot(reader);
  auto compiled = CompileFor(reader, x, deadline, Reading(from, to, 0));
  if (!compiled.ok()) return compiled.status();
  if (!compiled->fts || compiled->where != "1") return false;
  // A prefix term's doclists are merged again for each level's statement:
  // `_exists_:F` is one over every term of F (`NOT _exists_:gpu_mem_mb` by
  // level, 1M events: 0.45 s by the rows, 0.60 by the index). A `*` in a
  // quoted term also takes the rows, as before.
  if (by_level && (compiled->fts_prefix || compiled->fts->find('*') != std::string::npos)) {
    return false;
  }
  HistogramSpec each = spec;
  each.split_size = HistogramAccumulator::kMaxDiscoveredValues;
  std::optional<std::vector<std::string>> keys;  // discovered, by level
  if (!by_level) keys.emplace();
  HistogramAccumulator matched(from, to, each, keys), all(from, to, each, keys);
  bool full = false;
  if (by_level) {
    auto done =
        LevelHistogramFromIndex(reader, day, x, *compiled, lo, hi, each, deadline, matched, full);
    if (!done.ok() || !*done) return done;
  } else if (Status s = MatchesHistogram(reader, *compiled, day, lo, hi, spec.interval, deadline,
                                         matched, full);
             !s.ok()) {
    return s;
  }
  if (full) return false;
  const ReaderFor this_day = [&](std::int64_t) -> Result<PartitionReader*> { return &reader; };
  if (Status s =
          LevelCountsHistogram(this_day, {day}, from, to, unit, by_level, deadline, all, full);
      !s.ok()) {
    return s;
  }
  if (full) return false;
  std::map<std::pair<TimeMs, std::string>, std::uint64_t> excluded, total;
  if (!CellCounts(matched.Finish(false), excluded) || !CellCounts(all.Finish(false), total)) {
    return false;
  }
  for (const auto& [cell, n] : excluded) {
    const auto it = total.find(cell);
    if (n > 0 && (it == total.end() || it->second < n)) return false;  // never: rows decide
  }
  for (const auto& [cell, n] : total) {
    const auto it = excluded.find(cell);
    const std::uint64_t left = n - (it == excluded.end() ? 0 : it->second);
    if (left == 0) continue;
    const std::string_view value[] = {cell.second};
    const auto split = cell.second.empty() ? std::span<const std::string_view>() : std::span(value);
    overflow = !acc.Add(std::max(from, cell.first), split, {}, left);
    if (overflow) break;
  }
  return true;
}

// The `n` most frequent split values among the newest matching events
// (SplitKeySampler); `complete` says whether that was all of them.
Result<std::vector<std::string>> SampleSplitKeys(const ReaderFor& reader_for,
                                                 const std::vector<std::int64_t>& days,
                                                 CompiledByDay& compiled, EventKey lo, EventKey hi,
                                                 const HistogramSpec& spec,
                                                 Clock::time_point deadline, bool& complete) {
  HistogramSpec split_only = spec;
  split_only.value_field.clear();
  HistogramRowReader rows(split_only);
  SplitKeySampler sampler;
  const std::vector<std::string_view> none;
  bool full = false;
  for (std::int64_t day : days) {
    auto reader = reader_for(day);
    if (!reader.ok()) return reader.status();
    if (!*reader) continue;  // dropped since listed
    auto q = compiled.For(day, **reader);
    if (!q.ok()) return q.status();
    const std::string sql = RowsSql(**q, HistogramColumns(rows), Need::kEvents, true);
    auto s = ForEachRow(**reader, sql, **q, lo, hi, deadline, [&](const Stmt& row) {
      const bool read = rows.Read(row.Text(1), row.Text(2), row.Text(3));
      full = !sampler.Add(read ? rows.values() : none);
      return !full;
    });
    if (!s.ok()) return s;
    if (full) break;
  }
  return sampler.Keys(spec.split_size, complete);
}

}  // namespace

Result<std::vector<HistogramBucket>> SqliteStore::Histogram(const SearchRequest& req,
                                                            TimeMs interval) {
  return OnceMoreIfRowidsChanged([&] { return HistogramOnce(req, interval); });
}

Result<std::vector<HistogramBucket>> SqliteStore::HistogramOnce(const SearchRequest& req,
                                                                TimeMs interval) {
  if (req.query == nullptr || interval <= 0)
    return Status::InvalidArgument("bad histogram request");
  const auto [from, to] = ReadRange(req);
  if (from < to && HistogramAccumulator::CheckBucketCount(from, to, interval).ok()) {
    // The explorer's histogram has the same buckets, and counts all events
    // from the per-second or per-minute level counts instead of every key.
    HistogramSpec spec;
    spec.interval = interval;
    auto table = Histogram(req, spec);
    if (!table.ok()) return table.status();
    std::vector<HistogramBucket> out;
    for (const HistogramTable::Bucket& b : table->buckets) {
      if (b.total.count > 0) out.push_back({b.start, b.total.count});
    }
    return out;
  }
  // More buckets than it allows: the non-empty ones, from every matching
  // key.
  if (auto checked = CompileFtsQuery(*req.query); !checked.ok()) return checked.status();
  if (from >= to) return std::vector<HistogramBucket>();
  std::map<TimeMs, std::uint64_t> counts;
  Lease lease = LeaseReaders();
  for (std::int64_t day : partitions_.DaysOverlapping(from, to)) {
    auto reader = lease->For(day);
    if (!reader.ok()) return reader.status();
    if (!*reader) continue;  // dropped since listed
    auto compiled = CompileFor(**reader, *req.query, req.deadline, Reading(from, to, 0));
    if (!compiled.ok()) return compiled.status();
    // The keys in order, counted here a bucket at a time: SQLite's GROUP BY
    // over them sorts every row (745k matches of `epoch` in a 1M-event day:
    // 129 ms grouped, 27 ms read in order; tests/bench/dense_rowids).
    TimeMs bucket = 0;
    std::uint64_t n = 0;
    auto s = ForEachRow(**reader, RowsSql(*compiled, "0", Need::kKeys, false), *compiled,
                        FirstKeyAt(from), FirstKeyAt(to) - 1, req.deadline, [&](const Stmt& row) {
                          const TimeMs b = KeyTime(row.Int(0)) / interval * interval;
                          if (b != bucket && n > 0) {
                            counts[bucket] += n;
                            n = 0;
                          }
                          bucket = b;
                          ++n;
                          return true;
                        });
    if (!s.ok()) return s;
    if (n > 0) counts[bucket] += n;
  }
  std::vector<HistogramBucket> out;
  for (const auto& [start, n] : counts) out.push_back({start, n});
  return out;
}

Result<HistogramTable> SqliteStore::Histogram(const SearchRequest& req, const HistogramSpec& spec) {
  return OnceMoreIfRowidsChanged([&] { return HistogramOnce(req, spec); });
}

Result<HistogramTable> SqliteStore::HistogramOnce(const SearchRequest& req,
                                                  const HistogramSpec& spec) {
  if (req.query == nullptr || spec.interval <= 0)
    return Status::InvalidArgument("bad histogram request");
  const auto [from, to] = ReadRange(req);
  if (from >= to) return HistogramTable{};
  if (Status s = HistogramAccumulator::CheckBucketCount(from, to, spec.interval); !s.ok()) {
    return s;
  }
  // Compiled without a vocabulary: whether it matches everything in the
  // range does not depend on one, and errors that do not depend on a
  // partition surface.
  auto checked = CompileFtsQuery(*req.query, nullptr, Reading(from, to, 0));
  if (!checked.ok()) return checked.status();
  CompiledByDay compiled(*req.query, req.deadline, Reading(from, to, 0));
  Lease lease = LeaseReaders();
  const ReaderFor reader_for = [&](std::int64_t day) { return lease->For(day); };
  const std::vector<std::int64_t> days = partitions_.DaysOverlapping(from, to);
  const EventKey lo = FirstKeyAt(from), hi = FirstKeyAt(to) - 1;
  const bool match_all = !checked->fts && checked->where == "1";
  const bool no_split = spec.split_field.empty();
  const bool by_level = spec.split_field == kLevelSplit;
  // The level counts answer histograms of all events by level (or by
  // nothing) at whole seconds or minutes.
  const TimeMs counts_unit = match_all && spec.value_field.empty() && (no_split || by_level)
                                 ? LevelCountsUnit(spec.interval)
                                 : 0;

  auto run = [&](std::optional<std::vector<std::string>> keys,
                 bool& overflow) -> Result<HistogramAccumulator> {
    HistogramAccumulator acc(from, to, spec, std::move(keys));
    Status s = counts_unit > 0 ? LevelCountsHistogram(reader_for, days, from, to, counts_unit,
                                                      by_level, req.deadline, acc, overflow)
                               : ScanHistogram(reader_for, days, *req.query, compiled, lo, hi, spec,
                                               req.deadline, acc, overflow);
    if (!s.ok()) return s;
    return acc;
  };
  bool overflow = false;
  std::optional<std::vector<std::string>> no_keys;
  if (no_split) no_keys.emplace();  // nothing to discover
  auto acc = run(no_keys, overflow);
  if (!acc.ok()) return acc.status();
  if (!overflow) return acc->Finish(false);
  // Too many distinct values to track: choose the keys from a sample.
  bool complete = true;
  auto keys = SampleSplitKeys(reader_for, days, compiled, lo, hi, spec, req.deadline, complete);
  if (!keys.ok()) return keys.status();
  auto with_keys = run(std::move(*keys), overflow);
  if (!with_keys.ok()) return with_keys.status();
  return with_keys->Finish(!complete);
}

Result<FieldsSummary> SqliteStore::SummarizeFields(const SearchRequest& req,
                                                   const FieldsSpec& spec) {
  return OnceMoreIfRowidsChanged([&] { return SummarizeFieldsOnce(req, spec); });
}

Result<FieldsSummary> SqliteStore::SummarizeFieldsOnce(const SearchRequest& req,
                                                       const FieldsSpec& spec) {
  if (req.query == nullptr) return Status::InvalidArgument("no query");
  if (auto checked = CompileFtsQuery(*req.query); !checked.ok()) return checked.status();
  const auto [from, to] = ReadRange(req);
  CompiledByDay compiled(*req.query, req.deadline,
                         Reading(from, to, std::max<std::size_t>(1, spec.max_events)));
  FieldStatsCollector collector;
  if (from >= to) return collector.Finish(spec.top, true);
  Lease lease = LeaseReaders();
  DocumentReader doc_reader;
  DocumentView view;
  std::size_t read = 0;
  bool complete = true;
  for (std::int64_t day : partitions_.DaysOverlapping(from, to)) {
    auto reader = lease->For(day);
    if (!reader.ok()) return reader.status();
    if (!*reader) continue;  // dropped since listed
    auto q = compiled.For(day, **reader);
    if (!q.ok()) return q.status();
    const std::string sql =
        RowsSql(**q, "dc_name(e.idx), dc_source(e.source)", Need::kEvents, true);
    auto s = ForEachRow(**reader, sql, **q, FirstKeyAt(from), FirstKeyAt(to) - 1, req.deadline,
                        [&](const Stmt& row) {
                          if (read == spec.max_events) {
                            complete = false;
                            return false;
                          }
                          ++read;
                          if (doc_reader.ReadUnpadded(row.Text(2), view).ok()) {
                            collector.Add(view, row.Text(1));
                          }
                          return true;
                        });
    if (!s.ok()) return s;
    if (!complete) break;
  }
  return collector.Finish(spec.top, complete);
}

Result<Neighbors> SqliteStore::FindNeighbors(const SearchRequest& req, const NeighborsSpec& spec) {
  return OnceMoreIfRowidsChanged([&] { return FindNeighborsOnce(req, spec); });
}

Result<Neighbors> SqliteStore::FindNeighborsOnce(const SearchRequest& req,
                                                 const NeighborsSpec& spec) {
  if (req.query == nullptr) return Status::InvalidArgument("no query");
  const TimeMs anchor_time = KeyTime(spec.anchor);
  const std::int64_t anchor_day = DayOf(anchor_time);
  if (anchor_time < kMinEventTime || anchor_time >= kMaxEventTime ||
      !partitions_.Contains(anchor_day)) {
    return Status::NotFound("no such event");
  }
  const query::Node scoped = ScopeQuery(*req.query, spec.scope);
  if (auto checked = CompileFtsQuery(scoped); !checked.ok()) return checked.status();
  // A few events on each side of the anchor.
  CompiledByDay compiled(scoped, req.deadline,
                         Reading(kMinEventTime, kMaxEventTime, spec.before + spec.after + 1));
  Lease lease = LeaseReaders();
  {
    auto reader = lease->For(anchor_day);
    if (!reader.ok()) return reader.status();
    if (!*reader) return Status::NotFound("no such event");  // dropped meanwhile
    auto found = GetOne(**reader, EventByKeySql(), spec.anchor);
    if (!found.ok()) return found.status();
    if (!*found) return Status::NotFound("no such event");
  }
  const auto [from, to] = ReadRange(req);
  Neighbors out;
  DocumentReader doc_reader;
  DocumentView view;
  // One side: days in walk order, rows in key order away from the anchor.
  auto walk = [&](bool older, std::vector<StoredEvent>& events, bool& more) -> Status {
    const std::size_t want = older ? spec.before : spec.after;
    const TimeMs a = older ? from : std::max(from, anchor_time);
    const TimeMs b = older ? std::min(to, anchor_time + 1) : to;
    if (a >= b) return Status::Ok();
    std::vector<std::int64_t> days = partitions_.DaysOverlapping(a, b);  // newest first
    if (!older) std::reverse(days.begin(), days.end());
    // Away from the anchor, and within the range even when the anchor is not.
    const EventKey lo = older ? FirstKeyAt(from) : std::max(spec.anchor + 1, FirstKeyAt(from));
    const EventKey hi = older ? std::min(spec.anchor - 1, FirstKeyAt(to) - 1) : FirstKeyAt(to) - 1;
    std::size_t examined = 0;
    bool stop = false;
    for (std::int64_t day : days) {
      auto reader = lease->For(day);
      if (!reader.ok()) return reader.status();
      if (!*reader) continue;  // dropped since listed
      auto q = compiled.For(day, **reader);
      if (!q.ok()) return q.status();
      const std::string sql = RowsSql(**q, kEventColumns, Need::kEvents, older);
      auto s = ForEachRow(**reader, sql, **q, lo, hi, req.deadline, [&](const Stmt& row) {
        if (examined == spec.max_examined) {  // there may be more; we stop looking
          more = stop = true;
          return false;
        }
        ++examined;
        // Columns: the key expression, then kEventColumns (key, level, idx, doc_id, source).
        if (!doc_reader.ReadUnpadded(row.Text(5), view).ok()) return true;
        if (!MatchesScope(spec.scope, view, row.Text(3))) return true;
        if (events.size() == want) {  // one more than asked for: there are more
          more = stop = true;
          return false;
        }
        events.push_back(ReadEvent(row, 1));
        return true;
      });
      if (!s.ok() || stop) return s;
    }
    return Status::Ok();
  };
  if (auto s = walk(true, out.before, out.more_before); !s.ok()) return s;
  if (auto s = walk(false, out.after, out.more_after); !s.ok()) return s;
  std::reverse(out.before.begin(), out.before.end());
  return out;
}

Result<std::optional<TimeExtent>> SqliteStore::Extent(Clock::time_point /*deadline*/) {
  Lease lease = LeaseReaders();
  std::vector<std::int64_t> days = partitions_.DaysOverlapping(kMinEventTime, kMaxEventTime);
  // The first partition, walking `days`, with an event: its oldest or newest key.
  auto end_key = [&](KeyEnd end) -> Result<std::optional<EventKey>> {
    for (std::int64_t day : days) {
      auto reader = lease->For(day);
      if (!reader.ok()) return reader.status();
      if (!*reader) continue;  // dropped since listed
      auto key = EndKey(**reader, end);
      if (!key.ok() || *key) return key;
    }
    return std::optional<EventKey>();
  };
  auto last = end_key(KeyEnd::kNewest);
  if (!last.ok()) return last.status();
  if (!*last) return std::optional<TimeExtent>();
  std::reverse(days.begin(), days.end());
  auto first = end_key(KeyEnd::kOldest);
  if (!first.ok()) return first.status();
  if (!*first) return std::optional<TimeExtent>();
  return std::optional<TimeExtent>(TimeExtent{KeyTime(**first), KeyTime(**last)});
}

// Merged groups beyond this many are not tracked (GroupsPage::complete).
constexpr std::size_t kMaxTrackedGroups = 100'000;

Result<GroupsPage> SqliteStore::Groups(const GroupsRequest& req) {
  Lease lease = LeaseReaders();
  GroupsPage page;
  std::unordered_map<std::string, GroupSummary> merged;
  for (std::int64_t day : partitions_.DaysOverlapping(req.from, req.to)) {
    auto reader = lease->For(day);
    if (!reader.ok()) return reader.status();
    if (!*reader) continue;  // dropped since listed
    DeadlineGuard guard((*reader)->db(), req.deadline);
    auto stmt = (*reader)->Statement(
        "SELECT key, first_ms, last_ms, events, ended_ms FROM groups "
        "WHERE last_ms >= ?1 AND first_ms < ?2");
    if (!stmt.ok()) return stmt.status();
    Stmt& st = **stmt;
    st.Bind(1, req.from);
    st.Bind(2, req.to);
    int rc;
    while ((rc = st.Step()) == SQLITE_ROW) {
      std::string key(st.Text(0));
      auto it = merged.find(key);
      if (it == merged.end()) {
        if (merged.size() >= kMaxTrackedGroups) {
          page.complete = false;
          continue;
        }
        it = merged.emplace(key, GroupSummary{key, st.Int(1), st.Int(2), 0, std::nullopt}).first;
      }
      GroupSummary& g = it->second;
      g.first = std::min<TimeMs>(g.first, st.Int(1));
      g.last = std::max<TimeMs>(g.last, st.Int(2));
      g.events += static_cast<std::uint64_t>(std::max<std::int64_t>(st.Int(3), 0));
      if (!st.IsNull(4)) g.ended = std::max<TimeMs>(g.ended.value_or(st.Int(4)), st.Int(4));
    }
    st.Reset();
    if (rc != SQLITE_DONE) return SqliteStatus(rc, (*reader)->db(), "groups");
  }
  page.groups.reserve(merged.size());
  for (auto& [key, g] : merged) page.groups.push_back(std::move(g));
  std::sort(page.groups.begin(), page.groups.end(), [](const auto& a, const auto& b) {
    return a.last != b.last ? a.last > b.last : a.key < b.key;
  });
  if (page.groups.size() > req.limit) {
    page.groups.resize(req.limit);
    page.complete = false;
  }
  return page;
}

}  // namespace dashcam::storage
