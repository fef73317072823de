// EventStore: the storage backend interface. Ingest appends batches of
// Records; the API searches with a query AST. The SQLite implementation is
// SqliteStore; a ClickHouse one can be added without touching callers.
//
// Thread-safety: every method may be called concurrently from any thread.
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include "storage/exploration.h"
#include "storage/record.h"

namespace dashcam::storage {

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

  // The times of the oldest and newest stored events; nullopt when empty.
  virtual Result<std::optional<TimeExtent>> Extent() = 0;

  virtual std::vector<PartitionInfo> Partitions() = 0;

  // Stops taking appends, commits everything queued, closes files. Idempotent.
  virtual void Close() = 0;
};

}  // namespace dashcam::storage
