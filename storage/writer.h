// Writer: the single thread that commits events, with group commit. Callers
// queue batches; the writer takes everything queued, writes it to the day
// partitions in one transaction per partition, and only then reports each
// batch done. Concurrent clients therefore share commits (and fsyncs).
//
// Batches in parts. A caller that decodes a large batch (a _bulk body) can
// queue it part by part, each marked with its stream and whether more
// parts follow. The writer writes a part as soon as it has it and keeps
// the transaction open for the stream's next part (at most `part_wait` each
// time, `max_transaction_open` in all), so one client's decoding and the
// writing overlap while the batch still costs one commit: a commit per part
// measured slower, as FTS5 writes a segment per transaction. Every part is
// reported on its own, once its transaction ends. Parts pay only while the
// writer would otherwise wait for that client: NewStream says when, and a
// transaction that also holds a batch queued whole does not wait (that
// batch's client would wait with it).
//
// Memory is bounded: a batch that would push the queued bytes over
// `max_queue_bytes` is refused at once with Overloaded.
//
// Disk full. A commit that fails with NoSpace (SQLITE_FULL, or an I/O error
// caused by ENOSPC) rolls back: none of its events is reported stored, and
// its partition connection is closed (the next use reopens it, with fresh
// caches). One corner: when the WAL write succeeded and only its fsync
// failed, the frames sit in the -wal file; should the process die before
// anything else is written there, recovery replays them, so events answered
// 503 may be stored, and a client's resend of events without an _id then
// stores them twice (events with an _id are deduplicated). The writer then pauses ingestion: Submit
// refuses every batch at once with NoSpace (nothing queues up), batches already queued fail with
// NoSpace without a write, and every `disk_full_probe_interval` the writer thread tries a small
// write transaction on the partition that filled up (PartitionWriter::ProbeSpace), but only once
// the data directory's filesystem has `disk_full_resume_free_bytes` available again (statvfs): a
// probe alone could succeed in WAL space the failed commit had already allocated, and a disk with a
// few pages free would flap between paused and writing. The first probe that commits ends the
// pause, without a restart. A retention drop (RunExclusive) during the pause brings the next probe
// forward. The pause is logged once when it starts
// ("disk_full", an error), once a minute while it lasts and when it ends
// ("disk_space_recovered"), never per refused batch.
//
// Thread-safety: Submit may be called from any thread. Callbacks run on the
// writer thread and must not block.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <vector>

#include "storage/event_store.h"
#include "storage/log.h"
#include "storage/metrics.h"
#include "storage/partition.h"
#include "storage/partition_set.h"

namespace dashcam::storage {

// The writer thread's name (at most 15 characters, the kernel's limit).
inline constexpr const char* kWriterThreadName = "dashcam-writer";

struct WriterOptions {
  std::size_t max_queue_bytes = 64u << 20;  // Default: 64 MiB of queued events
  std::size_t max_group_records = 100'000;  // records per group commit, at most
  std::size_t max_open_partitions = 8;      // writer connections kept open
  PartitionOptions partition;
  int test_commit_delay_ms = 0;  // tests only: sleep before each commit
  // While the disk is full: how often the writer tries whether it can write
  // again (see above). Default: 1 s. REQUIRES: > 0
  std::chrono::milliseconds disk_full_probe_interval{1000};
  // Free bytes the data directory's filesystem needs before a probe may end
  // the pause. Default: 16 MiB.
  std::uint64_t disk_full_resume_free_bytes = 16u << 20;
  // Where commit group sizes, commit latency and failures are counted
  // (dashcam_commit_*). Default: null, not counted. Must outlive the writer.
  Metrics* metrics = nullptr;
  // How long an open transaction waits for the next part of a batch queued
  // in parts, and how long it stays open at most (see above; it also ends at
  // max_group_records).
  std::chrono::milliseconds part_wait{20};
  std::chrono::milliseconds max_transaction_open{500};
};

// Which batch a queued part belongs to: `stream` from Writer::NewStream,
// `more` while further parts will follow. The default is a whole batch.
struct BatchPart {
  std::uint64_t stream = 0;
  bool more = false;
};

class Writer {
 public:
  Writer(PartitionSet& partitions, WriterOptions options, const Log& log);
  ~Writer();
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  void Start();
  // Queues `records`: a whole batch, or one part of one (see above). A
  // stream's last part must have more = false (it may be empty); a stream
  // left open only makes its transaction wait `part_wait` in vain.
  void Submit(std::vector<Record> records, EventStore::AppendCallback done, BatchPart part = {});
  // A stream id for the parts of one batch, or 0 when the batch is better
  // queued whole: while other batches are queued or being written, the
  // writer has work meanwhile, and whole batches make larger transactions
  // (in parts, 4 and 8 clients measured 10-15% slower; one client, on whose
  // decoding the writer waits, 20% faster).
  std::uint64_t NewStream();
  // Refuses new batches, commits everything queued, joins the thread.
  void Stop();

  std::size_t queued_bytes() const;
  WriterStats Stats() const;

  // See EventStore::SetCommitObserver.
  void SetCommitObserver(CommitObserver observer);

  // Called on the writer thread after every group commit; must be quick.
  // REQUIRES: before Start().
  void SetAfterCommit(std::function<void()> hook) { after_commit_ = std::move(hook); }

  // Closes the writer's connection to `day`'s partition and runs `task` on
  // the writer thread, between two commits, so that nothing writes to the
  // partition meanwhile; blocks until it ran. Unavailable once stopping.
  Status RunExclusive(std::int64_t day, std::function<void()> task);

 private:
  struct Job {
    std::vector<Record> records;
    EventStore::AppendCallback done;
    std::size_t bytes = 0;
    AppendResult result;
    BatchPart part;
    // Set for RunExclusive's jobs (which have no records): run alone.
    std::function<void()> task;
    std::int64_t task_day = 0;
  };

  using SteadyClock = std::chrono::steady_clock;
  // The transactions being written, one per day partition, and the jobs in
  // them: reported when they end.
  struct Transaction {
    struct Day {
      PartitionWriter* writer = nullptr;  // in a transaction; null once it failed
      Status failed;                      // why nothing of this day will be stored
      std::vector<std::pair<std::size_t, std::size_t>> refs;  // (job, record) in write order
      std::vector<RecordOutcome> outcomes;                    // by refs
      std::vector<EventKey> keys;                             // by refs
    };
    std::vector<Job> jobs;
    std::map<std::int64_t, Day> days;
    std::set<std::uint64_t> open_streams;  // a part is in, and more will follow
    bool has_whole = false;                // holds a batch queued whole
    std::size_t records = 0;
    SteadyClock::time_point started;
  };

  // Ingestion paused for lack of space: see the file comment.
  struct DiskFull {
    Status error;      // the NoSpace that started it
    std::int64_t day;  // the partition to probe
    TimeMs since_ms;   // wall clock
    SteadyClock::time_point next_probe;
    SteadyClock::time_point last_log;
    std::uint64_t refused_batches = 0;
    std::uint64_t failed_probes = 0;
  };

  void Run();
  // Takes the next group (or task) off the queue, waiting for one (until
  // `until`, if given: then the group may be empty); sets `probe` instead
  // when a disk-full probe is due. False once stopping with nothing queued.
  bool TakeWork(std::vector<Job>& group, bool& probe, std::optional<SteadyClock::time_point> until);
  void FailGroup(std::vector<Job>& group, const Status& status);
  void Probe();
  // Called on the writer thread with the status of a group commit.
  void NoteCommitStatus(const Status& status);
  // Writes `group` into the open transactions (beginning them as needed);
  // the jobs move into `tx`.
  void WriteGroup(Transaction& tx, std::vector<Job>& group);
  // Writes the records `refs` names (job in tx, record) into `day`'s
  // transaction, unless it failed already.
  void WriteDay(Transaction& tx, std::int64_t day,
                std::vector<std::pair<std::size_t, std::size_t>>& refs);
  // Whether `tx` should stay open for a stream's next part.
  bool WaitsForParts(const Transaction& tx) const;
  // Commits the open transactions and reports their jobs; `tx` is empty after.
  void EndTransaction(Transaction& tx);
  // A day's transaction failed with `status`: its records are not stored.
  void DayFailed(std::int64_t day, const Status& status, Transaction& tx);
  // Counts, logs and reports jobs whose writing ended with `status`.
  void Report(std::vector<Job>& jobs, const Status& status, double seconds, bool attempted);
  void NotifyCommitted(std::int64_t day, const std::vector<EventKey>& keys);
  Result<PartitionWriter*> WriterFor(std::int64_t day);
  void CloseWriter(std::int64_t day);
  void CloseIdle(const std::vector<std::int64_t>& written_days);

  // Constant after construction.
  PartitionSet& partitions_;
  SharedDictionaries dictionaries_;  // before options_, which points to it
  const WriterOptions options_;
  const Log& log_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> queue_;               // guarded by mu_
  std::size_t queued_bytes_ = 0;        // guarded by mu_; includes the group being committed
  std::size_t queued_events_ = 0;       // guarded by mu_; same
  std::uint64_t committed_events_ = 0;  // guarded by mu_
  Status last_commit_;                  // guarded by mu_
  bool stopping_ = false;               // guarded by mu_
  std::optional<DiskFull> disk_full_;   // guarded by mu_; set while paused
  std::thread thread_;

  // Held while the observer runs, so that replacing it waits for a call in
  // progress.
  std::mutex observer_mu_;
  CommitObserver observer_;  // guarded by observer_mu_

  std::function<void()> after_commit_;  // constant after Start()
  RateWindow committed_rate_;
  // Null without options_.metrics.
  CommitMetrics commits_;
  Counter* disk_full_pauses_ = nullptr;

  // Writer thread only: the day of the last commit that failed with NoSpace.
  std::int64_t no_space_day_ = 0;

  // Writer thread only.
  struct OpenPartition {
    std::unique_ptr<PartitionWriter> writer;
    int idle_groups = 0;  // group commits in a row that did not write it (CloseIdle)
  };
  std::map<std::int64_t, OpenPartition> open_;
  std::deque<std::int64_t> open_order_;

  std::uint64_t next_stream_ = 0;  // guarded by mu_
};

}  // namespace dashcam::storage
