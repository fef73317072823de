// EventStore: the storage backend interface. Ingest appends batches of
// Records; the API searches with a query AST. The SQLite implementation is
// SqliteStore; a ClickHouse one can be added without touching callers.
//
// Thread-safety: every method may be called concurrently from any thread.
#pragma once

#include <atomic>
#include <functional>
#include <limits>
#include <optional>
#include <span>
#include <vector>

#include "storage/compaction_types.h"
#include "storage/exploration.h"
#include "storage/record.h"
#include "storage/retention.h"

namespace dashcam::storage {

// Keys lo..hi, both inclusive.
struct KeyRange {
  EventKey lo = 0;
  EventKey hi = 0;
};

// One page of a scan over a key range: what streams every match of a query
// (export) and what checks newly committed events against a query (tail).
struct ScanRequest {
  const query::Node* query = nullptr;                  // required; owned by the caller
  EventKey lo = 0;                                     // inclusive
  EventKey hi = std::numeric_limits<EventKey>::max();  // inclusive
  // When not empty, only the keys of these ranges (ascending, disjoint; owned
  // by the caller) that lie in [lo, hi] are scanned. One request over many
  // small stretches (the keys of a tail's new events, which a backfill spreads
  // over hours) costs one compilation of the query rather than one each.
  std::span<const KeyRange> ranges;
  bool ascending = false;    // default: newest first
  std::size_t limit = 1000;  // events per page, at most
  // A page also ends with the event that takes its sources past this many
  // bytes, so that large events do not make large pages.
  std::size_t max_bytes = std::numeric_limits<std::size_t>::max();
  // The page's time budget: past it the scan fails with DeadlineExceeded.
  Clock::time_point deadline = Clock::time_point::max();
  // When set and it becomes true, the scan stops soon with Unavailable
  // ("cancelled"), even in the middle of an SQLite statement.
  const std::atomic<bool>* cancelled = nullptr;
};

struct ScanPage {
  std::vector<StoredEvent> events;  // in the requested order
  // True when the page is full (limit or max_bytes): continue with the range
  // narrowed past the last event's key (hi = key - 1 descending, lo = key + 1
  // ascending). A full page may be followed by an empty one.
  bool more = false;
};

// The events one commit made visible: their keys in the partition of `day`,
// ascending. Replaced events appear under their new key.
struct CommitNotice {
  std::int64_t day = 0;
  std::span<const EventKey> keys;
};
using CommitObserver = std::function<void(const CommitNotice&)>;

// A group of events (Record::group: for dashcam, a training run) as the
// partitions' rollups know it (partition.h), merged over the partitions
// (UTC days) that overlap the requested range: first = the oldest of their
// first times, last = the newest of their last times, events summed, ended =
// the newest closing time. So counts cover whole days, not just the range.
struct GroupSummary {
  std::string key;
  TimeMs first = 0;
  TimeMs last = 0;
  std::uint64_t events = 0;
  std::optional<TimeMs> ended;  // nullopt: no closing event (Record::group_end)
};

struct GroupsRequest {
  // Groups whose [first, last] span in some partition overlaps [from, to).
  TimeMs from = kMinEventTime;
  TimeMs to = kMaxEventTime;
  std::size_t limit = 100;  // groups returned, newest `last` first
  // The event field whose value is the group key. Only views that must check
  // groups event by event use it (FilteredEventStore: a group is shown with
  // the counts of its visible events, or not at all).
  std::string group_field;
  // The events that close a group (Record::group_end; for dashcam
  // `run.end:finished`). A filtered view keeps a group's `ended` only when
  // one of them is visible to it, and without this query drops it.
  const query::Node* end_query = nullptr;
  Clock::time_point deadline = Clock::time_point::max();
};

struct GroupsPage {
  std::vector<GroupSummary> groups;  // newest `last` first
  bool complete = true;              // false: more groups than `limit` (or than were examined)
};

// What the store's writer is doing, for /readyz and /api/v1/status (the
// SQLite store's Writer, writer.h; the ClickHouse store's inserts).
struct WriterStats {
  std::size_t queued_bytes = 0;   // including the group being committed
  std::size_t queued_events = 0;  // same
  std::size_t max_queue_bytes = 0;
  std::uint64_t committed_events = 0;    // stored since start (not failed)
  std::uint64_t events_last_minute = 0;  // stored in the last 60 s
  // The error of the last commit when it failed; Ok once a commit succeeds
  // again (or if none failed).
  Status last_commit;
  bool stopping = false;  // Stop() was called: no new batches are taken
  // Ingestion is paused because the disk is full (writer.h): since when
  // (wall clock, ms since the epoch), and the error that started it.
  bool disk_full = false;
  TimeMs disk_full_since_ms = 0;
  Status disk_full_error;
};

class EventStore {
 public:
  using AppendCallback = std::function<void(AppendResult)>;

  virtual ~EventStore() = default;

  // Queues `records` for durable storage. `done` runs exactly once, on a
  // storage thread, after every record is committed (or failed); it must not
  // block. When the queue is over its byte budget the batch is refused at
  // once: done is called with an Overloaded status (and no outcomes) before
  // Append returns.
  virtual void Append(std::vector<Record> records, AppendCallback done) = 0;

  // A batch queued in parts as it is decoded (a large _bulk body), so that
  // the store can write the first parts while the rest are decoded. Each part
  // is reported on its own, as by Append. `stream` (from NewAppendStream)
  // ties the parts of one batch together; `more` says further parts will
  // follow, and the last (which may be empty) must say none do. A store may
  // keep its transaction open for the next part a little while (writer.h).
  // NewAppendStream returns 0 when the batch should go whole, with one
  // Append: always for a store that takes batches whole (the default;
  // ClickHouseStore tells identical events apart by their rank within a
  // batch), and for SqliteStore while its writer has other batches to write.
  // Ask once per batch, before decoding it.
  virtual std::uint64_t NewAppendStream() { return 0; }
  virtual void AppendPart(std::vector<Record> records, AppendCallback done,
                          std::uint64_t /*stream*/, bool /*more*/) {
    Append(std::move(records), std::move(done));
  }

  // Runs a search. Blocks the calling thread (call it from a worker pool,
  // never an I/O thread). Errors: InvalidArgument for a query the backend
  // cannot run, DeadlineExceeded past req.deadline.
  virtual Result<SearchPage> Search(const SearchRequest& req) = 0;

  // Counts of matching events per `interval` ms bucket over [req.from, req.to).
  // `limit`, `before` and `count_limit` of `req` are ignored.
  virtual Result<std::vector<HistogramBucket>> Histogram(const SearchRequest& req,
                                                         TimeMs interval) = 0;

  // The `size` most frequent values of `field` among matching events, reading
  // at most `max_events` of them, newest first.
  virtual Result<TermsResult> TopValues(const SearchRequest& req, const std::string& field,
                                        std::size_t size, std::size_t max_events) = 0;

  // One page of the events matching req.query in [req.lo, req.hi], in key
  // order. Blocks like Search; each call is independent (no state is kept
  // between pages), so a scan may be abandoned at any page. Errors as Search,
  // plus Unavailable when req.cancelled was set.
  virtual Result<ScanPage> Scan(const ScanRequest& req) = 0;

  // Calls `observer` after every commit, on the writer thread, before the
  // committed batches are reported done; it must be quick and must not block
  // or call into the store. Replaces any previous observer; an empty function
  // removes it. Thread-safe; once it returns, the previous observer is no
  // longer called.
  virtual void SetCommitObserver(CommitObserver observer) = 0;

  // The event with this id (a FormatEventKey string or a doc_id), if any.
  virtual Result<std::optional<StoredEvent>> Get(std::string_view id) = 0;

  // The exploration queries (exploration.h). Like Search, each blocks the
  // calling thread and fails with InvalidArgument or DeadlineExceeded;
  // `limit`, `before` and `count_limit` of `req` are ignored.

  // Matching events per time bucket over [req.from, req.to), optionally
  // split by a field's most frequent values and aggregating a numeric field.
  // InvalidArgument when the range holds more than kMaxHistogramBuckets.
  virtual Result<HistogramTable> Histogram(const SearchRequest& req, const HistogramSpec& spec) = 0;

  // The fields of the newest spec.max_events matching events, with how many
  // events have each and each field's spec.top most frequent values. Memory
  // is bounded whatever the documents hold (see FieldSummary::distinct_exact).
  virtual Result<FieldsSummary> SummarizeFields(const SearchRequest& req,
                                                const FieldsSpec& spec) = 0;

  // The events next to spec.anchor in time order (event key order) that
  // match req's query and range and share spec.scope: up to spec.before
  // older ones and spec.after newer ones, across partitions. The anchor
  // itself is in neither list. NotFound when there is no such anchor.
  virtual Result<Neighbors> FindNeighbors(const SearchRequest& req, const NeighborsSpec& spec) = 0;

  // The groups overlapping [req.from, req.to) (GroupSummary). Blocks like
  // Search; memory is bounded whatever the number of groups (beyond a
  // bound, complete is false). DeadlineExceeded past req.deadline.
  virtual Result<GroupsPage> Groups(const GroupsRequest& req) = 0;

  // The times of the oldest and newest stored events; nullopt when empty.
  // DeadlineExceeded past `deadline` (a filtered view searches for them).
  virtual Result<std::optional<TimeExtent>> Extent(Clock::time_point deadline) = 0;

  virtual std::vector<PartitionInfo> Partitions() = 0;

  // Keys of new events further apart than this are best scanned as two
  // ranges rather than one (the live tail's dispatch): what a scan's fixed
  // cost is worth in skipped events. Default: a second of event time.
  virtual EventKey ScanGap() const { return EventKey{1000} << 20; }

  // Retention's policy, last drop and next drop (retention.h). Blocks
  // briefly (stats the partition files). Default: no retention.
  virtual RetentionStatus Retention() { return {}; }

  // What background compaction of past days has done (compactor.h).
  // Default: none (policy.enabled is false).
  virtual CompactionStatus Compaction() {
    CompactionStatus none;
    none.policy.enabled = false;
    return none;
  }

  // The write queue and the last write's outcome. Quick: may run on an I/O
  // thread. A batch is in committed_events before its `done` runs, so a
  // client told its events are stored sees them counted.
  virtual WriterStats writer_stats() const = 0;

  // Stops taking appends, commits everything queued, closes files. Idempotent.
  virtual void Close() = 0;
};

}  // namespace dashcam::storage
