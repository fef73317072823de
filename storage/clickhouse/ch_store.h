// ClickHouseStore: the EventStore over a ClickHouse cluster (issue 10), so
// that several dashcam instances can share one store. Chosen with
// `--storage clickhouse://h1:p1,h2:p2/db?cluster=NAME`.
//
// Writes: Append queues the batch (refused with Overloaded past the byte
// budget: backpressure, never unbounded buffering); one writer thread
// encodes queued batches into JSONEachRow rows (ch_row.h) and inserts them
// into the Distributed table with insert_distributed_sync=1, so `done` means
// every shard has its rows. A failed insert (a node or shard down) fails the
// whole batch with Unavailable: clients retry, and the retry's copies are
// collapsed on read (ch_schema.h). Each node is tried in turn.
//
// Event ids and keys: an event is stored under the client's _id, else an id
// of its time (so that Get reads one millisecond) and a hash of its time,
// index, document and rank among identical events of its batch, so that a
// client's resent batch brings the same ids (and reads collapse the
// copies). Its EventKey is (time in ms << 20) | seq, where seq counts up in
// the writer from a random start (stored in the row), so keys follow time as
// the SQLite store's do, and cursors and scans work alike. Copies of a
// resent event have other keys in the same millisecond; reads keep the
// highest key of each id there, so a page, a cursor's next page and an
// export show the event once.
//
// Not as on SQLite: the bulk `create` of an _id that exists is stored again
// (collapsed on read, not reported as a duplicate), and `index` replaces an
// event only when the time is the same (else both are kept until read,
// where one per id is shown within a time window or page).
//
// Reads compile the query (ch_query_compiler.h) and run it on one node
// (the next one in turn when a node is unreachable). "Newest first" (and a
// scan either way) asks time windows from where it starts, small first,
// each next one eight times wider or more, since 18.16 reads and sorts
// every matching key of a range for ORDER BY ... LIMIT; a search sizes its
// first window from the count it makes first, a scan its next windows
// from the matches found so far, and a scan that found none in two
// windows counts further on before it reads (SkipToMatches). A page of
// hits or of a scan is read as keys first, then those keys' rows (see
// MatchingKeys below).
//
// Live tails: the observer hears of this instance's inserts as they
// succeed, and of other instances' every tail_poll (ch_tail_feed.h).
//
// Retention (retention.h's rules) drops a day with ALTER TABLE ... DROP
// PARTITION on every node's local table; Partitions() sums each day's parts
// over the nodes (system.parts). A node that cannot be reached fails the
// drop, and the next check tries again.
//
// TopValues, SummarizeFields and FindNeighbors read the matching events'
// documents page by page (scan_exploration.h), as do histograms split by a
// document field or of a field's values; histograms split by level or index
// are counted by ClickHouse, and so are Groups (the runs), from each row's
// group columns. Unlike SQLite, a level or index split with more values
// than the accumulator discovers takes the most frequent over the whole
// range, exactly, rather than over a sample of the newest events
// (keys_sampled stays false).
//
// Thread-safety: as EventStore.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <thread>

#include "storage/clickhouse/ch_options.h"
#include "storage/clickhouse/ch_tail_feed.h"
#include "storage/event_store.h"
#include "storage/log.h"
#include "storage/metrics.h"
#include "storage/retention.h"

namespace dashcam::storage::clickhouse {

struct ChStoreOptions {
  ChOptions cluster;
  // Bytes of records queued for the writer (ApproxBytes) past which Append
  // refuses with Overloaded.
  std::size_t max_queued_bytes = 64 << 20;
  // Records' bytes one INSERT carries at most (a single larger batch is
  // inserted whole).
  std::size_t insert_bytes = 16 << 20;
  // Searches answer from the shards that are up, flagged partial
  // (SearchPage::partial), instead of failing while a shard is down. Other
  // reads fail either way.
  bool allow_partial = false;
  // How often this instance asks the cluster for events other instances
  // wrote, for its live tails (ch_tail_feed.h); zero: never.
  std::chrono::milliseconds tail_poll{1000};
  RetentionPolicy retention;  // Default: keep everything
  // The wall clock that decides today's day for retention.
  std::function<TimeMs()> now;  // Default: the system clock
  Metrics* metrics = nullptr;   // inserts, retention; may be null; outlives the store
};

// What a count query (ClickHouseStore::CountMatches) says of the rows that
// match: how many, and the times of the newest and the oldest.
struct MatchSummary {
  std::uint64_t n = 0;
  std::uint64_t newest = 0, oldest = 0;
};

class ClickHouseStore final : public EventStore {
 public:
  // Creates the tables on every node when missing (InitClickHouseSchema)
  // and starts the writer. Errors: those of InitClickHouseSchema.
  static Result<std::unique_ptr<ClickHouseStore>> Open(ChStoreOptions options, const Log& log);
  ~ClickHouseStore() override;

  void Append(std::vector<Record> records, AppendCallback done) override;
  Result<SearchPage> Search(const SearchRequest& req) override;
  Result<std::vector<HistogramBucket>> Histogram(const SearchRequest& req,
                                                 TimeMs interval) override;
  Result<TermsResult> TopValues(const SearchRequest& req, const std::string& field,
                                std::size_t size, std::size_t max_events) override;
  Result<ScanPage> Scan(const ScanRequest& req) override;
  void SetCommitObserver(CommitObserver observer) override;
  Result<std::optional<StoredEvent>> Get(std::string_view id) override;
  Result<HistogramTable> Histogram(const SearchRequest& req, const HistogramSpec& spec) override;
  Result<FieldsSummary> SummarizeFields(const SearchRequest& req, const FieldsSpec& spec) override;
  Result<Neighbors> FindNeighbors(const SearchRequest& req, const NeighborsSpec& spec) override;
  Result<GroupsPage> Groups(const GroupsRequest& req) override;
  Result<std::optional<TimeExtent>> Extent(Clock::time_point deadline) override;
  std::vector<PartitionInfo> Partitions() override;
  RetentionStatus Retention() override;
  // An hour: every scan is a round trip to the cluster.
  EventKey ScanGap() const override { return EventKey{3'600'000} << 20; }
  WriterStats writer_stats() const override;
  void Close() override;

 private:
  struct Pending {
    std::vector<Record> records;
    AppendCallback done;
    std::size_t bytes = 0;
  };
  class Reader;

  ClickHouseStore(ChStoreOptions options, const Log& log);
  void WriterLoop();
  // Every tail_poll: the events other instances wrote, to the observer.
  void PollLoop();
  // Inserts the batch and reports each part done; the insert's status.
  Status Insert(std::vector<Pending> batch);
  // Runs `sql` on a node, trying each in turn while they are unreachable;
  // the answer's body. DeadlineExceeded once `deadline` has passed. With
  // `partial` and allow_partial, when no node can answer whole, a node
  // answers without the shards that are down, and *partial is set.
  Result<std::string> Query(const std::string& sql, Clock::time_point deadline,
                            bool* partial = nullptr);
  // The query as a ClickHouse condition for events in [from, to): fuzzy
  // leaves take the tokens stored in that range (ExpandFuzzy).
  // `partial` as for Query.
  Result<std::string> Compile(const query::Node& query, TimeMs from, TimeMs to,
                              Clock::time_point deadline, bool* partial = nullptr);
  // Rows matching `conditions`: how many (`count`, a ClickHouse aggregate:
  // uniqExact(id) counts a resent event once), and the times of the newest
  // and the oldest. `partial` as for Query.
  Result<MatchSummary> CountMatches(const std::string& conditions, std::string_view count,
                                    Clock::time_point deadline, bool* partial);
  // For a scan that has found nothing in [a, b) so far: counts the matches
  // of `where` window by window (each as wide as ProbeWindow's), skipping
  // those with none; false when none is left. Else a (ascending) or b
  // (descending) is moved to the nearest match and `span` sized from the
  // window's density, for the read that follows.
  Result<bool> SkipToMatches(const ScanRequest& req, const std::string& where, TimeMs& a, TimeMs& b,
                             TimeMs& span);
  // Histogram split by the level or the index.
  Result<HistogramTable> ColumnSplitHistogram(const SearchRequest& req, const HistogramSpec& spec);
  // Hits are read in two steps, because 18.16 sends every row of a
  // subquery to the node that sorts it: a query whose rows are big (16 KiB
  // documents) or many (a whole hour) moved all of them to find a page.
  // First the keys of the page's events, sorted on each shard from the
  // key's columns and one per id (MatchingKeys); then the rows of exactly
  // those keys (RowsOf), without evaluating the query again. A key query:
  // rows that match `conditions` (time bounds included) with keys in
  // [lo, hi], the first `limit` of them in key order.
  struct KeyQuery {
    std::string conditions;
    EventKey lo = 0, hi = 0;
    bool ascending = false;
    std::size_t limit = 0;
  };
  struct KeyedId {
    EventKey key = 0;
    std::string id;
    auto operator<=>(const KeyedId&) const = default;
  };
  Result<std::vector<KeyedId>> MatchingKeys(const KeyQuery& q, Clock::time_point deadline,
                                            bool* partial);
  // The rows of `keys` (a run of one MatchingKeys answer), in its order.
  Result<std::vector<StoredEvent>> RowsOf(std::span<const KeyedId> keys, bool ascending,
                                          Clock::time_point deadline, bool* partial);
  // A scan page's events from one window's keys: rows read a run of keys
  // at a time, so that a byte budget stops before large events are fetched
  // (an export's memory); ends with the event that takes the sources past
  // max_bytes (*full then true). *vanished: a key's row was gone.
  Result<std::vector<StoredEvent>> ScanRowsOf(const std::vector<KeyedId>& keys,
                                              const ScanRequest& req, std::size_t max_bytes,
                                              bool* full, bool* vanished);
  // Each day's parts over every node: bytes, and rows in `rows` (by day).
  Result<std::vector<PartitionInfo>> ListDays(std::map<std::int64_t, std::uint64_t>* rows);
  Result<DroppedPartition> DropDay(std::int64_t day);
  Result<std::vector<std::string>> ExpandFuzzy(const query::Node& leaf, const std::string& word,
                                               TimeMs from, TimeMs to, Clock::time_point deadline,
                                               bool* partial);

  const ChStoreOptions options_;
  const Log& log_;
  const std::string table_;  // `db`.`events`

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Pending> queue_;  // guarded by mu_, as are the members down to closing_
  std::size_t queued_bytes_ = 0;
  std::size_t queued_events_ = 0;
  std::uint64_t inserted_events_ = 0;
  RateWindow inserted_rate_;
  Status last_insert_;
  bool closing_ = false;
  CommitObserver observer_;  // guarded by observer_mu_
  std::mutex observer_mu_;
  std::atomic<std::size_t> next_host_{0};  // round-robin over the nodes
  std::uint32_t next_seq_;                 // the writer thread's; ch_row.h's ChEventKey
  const std::function<TimeMs()> now_;
  ChTailFeed tail_feed_;
  CommitMetrics commits_;            // the inserts
  std::condition_variable poll_cv_;  // with mu_: closing_
  std::once_flag closed_;
  std::thread writer_;
  std::thread poller_;
  std::unique_ptr<RetentionEnforcer> retention_;  // set in Open
};

}  // namespace dashcam::storage::clickhouse
