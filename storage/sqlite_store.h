// SqliteStore: the embedded EventStore. Events live in one SQLite file per
// UTC day (partition.h) under a data directory; one Writer thread commits
// them with group commit; searches run on the caller's thread (and on idle
// helper threads, search_helpers.h) with a read-only connection per
// partition, leased from a pool so a long query never blocks ingestion and
// ingestion never blocks a query (WAL).
//
// Thread-safety: all EventStore methods may be called concurrently.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "storage/compactor.h"
#include "storage/event_store.h"
#include "storage/log.h"
#include "storage/partition_set.h"
#include "storage/retention.h"
#include "storage/search_helpers.h"
#include "storage/writer.h"

namespace dashcam::storage {

struct SqliteStoreOptions {
  std::string data_dir = "./data";
  WriterOptions writer;
  int reader_cache_kib = 8 * 1024;  // page cache per read connection
  RetentionPolicy retention;        // Default: keep everything
  CompactionPolicy compaction;      // Default: past days, after 10 quiet minutes
  // The wall clock that decides today's partition for retention.
  std::function<TimeMs()> now;  // Default: the system clock
  Metrics* metrics = nullptr;   // retention and helper counters; may be null; outlives the store
  // Threads that search several days of one search at once (its hits and
  // count) while they would otherwise idle (search_helpers.h). Default: none.
  unsigned search_helpers = 0;
  // Runs first on each of those threads, if set (the server lowers their
  // priority as it does its query workers').
  std::function<void()> helper_thread_start;
};

class SqliteStore final : public EventStore {
 public:
  // Opens the data directory, registers every partition, starts the writer,
  // then drops what retention wants gone. A partition file that is damaged
  // or not dashcam's (partition_check.h) is logged ("partition_quarantined")
  // and moved to DATA/quarantine/; the rest is served.
  static Result<std::unique_ptr<SqliteStore>> Open(SqliteStoreOptions options, const Log& log);
  ~SqliteStore() override;

  void Append(std::vector<Record> records, AppendCallback done) override;
  std::uint64_t NewAppendStream() override;
  void AppendPart(std::vector<Record> records, AppendCallback done, std::uint64_t stream,
                  bool more) override;
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
  Result<std::optional<TimeExtent>> Extent(Clock::time_point deadline) override;
  Result<GroupsPage> Groups(const GroupsRequest& req) override;
  std::vector<PartitionInfo> Partitions() override;
  RetentionStatus Retention() override;
  CompactionStatus Compaction() override;
  void Close() override;

  std::size_t queued_bytes() const { return writer_.queued_bytes(); }
  WriterStats writer_stats() const override { return writer_.Stats(); }

 private:
  class ReaderSet;  // read connections of one leaseholder, by day
  class Lease;
  class DaySearch;  // a search's hits and count, day by day, on helpers too

  SqliteStore(SqliteStoreOptions options, const Log& log);
  Lease LeaseReaders();
  std::unique_ptr<ReaderSet> TakeReaderSet();  // an idle set, or a new one
  Status QuarantineDamaged();
  // Retention's drop: on the writer thread, then closes idle connections.
  Result<DroppedPartition> DropPartition(std::int64_t day);
  // One attempt of the public method of the same name. The method makes a
  // second when a day's rowids changed under the first (rowid_layout.h).
  Result<SearchPage> SearchOnce(const SearchRequest& req);
  Result<std::vector<HistogramBucket>> HistogramOnce(const SearchRequest& req, TimeMs interval);
  Result<ScanPage> ScanOnce(const ScanRequest& req);
  Result<HistogramTable> HistogramOnce(const SearchRequest& req, const HistogramSpec& spec);
  Result<FieldsSummary> SummarizeFieldsOnce(const SearchRequest& req, const FieldsSpec& spec);
  Result<Neighbors> FindNeighborsOnce(const SearchRequest& req, const NeighborsSpec& spec);

  const SqliteStoreOptions options_;
  const Log& log_;
  PartitionSet partitions_;
  Writer writer_;

  std::mutex pool_mu_;
  std::vector<std::unique_ptr<ReaderSet>> idle_readers_;  // guarded by pool_mu_
  std::unique_ptr<RetentionEnforcer> retention_;          // set in Open
  std::unique_ptr<Compactor> compactor_;                  // set in Open
  std::unique_ptr<SearchHelpers> helpers_;
  Counter* helped_slices_ = nullptr;  // in options_.metrics; null without
};

}  // namespace dashcam::storage
