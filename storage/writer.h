// Writer: the single thread that commits events, with group commit. Callers
// queue batches; the writer takes everything queued, writes it to the day
// partitions in one transaction per partition, and only then reports each
// batch done. Concurrent clients therefore share commits (and fsyncs).
//
// Memory is bounded: a batch that would push the queued bytes over
// `max_queue_bytes` is refused at once with Overloaded.
//
// Thread-safety: Submit may be called from any thread. Callbacks run on the
// writer thread and must not block.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "storage/event_store.h"
#include "storage/log.h"
#include "storage/metrics.h"
#include "storage/partition.h"
#include "storage/partition_set.h"

namespace dashcam::storage {

struct WriterOptions {
  std::size_t max_queue_bytes = 64u << 20;  // Default: 64 MiB of queued events
  std::size_t max_group_records = 100'000;  // records per group commit, at most
  std::size_t max_open_partitions = 8;      // writer connections kept open
  PartitionOptions partition;
  int test_commit_delay_ms = 0;  // tests only: sleep before each commit
  // Where commit group sizes, commit latency and failures are counted
  // (dashcam_commit_*). Default: null, not counted. Must outlive the writer.
  Metrics* metrics = nullptr;
};

// What the writer is doing, for /readyz and /api/v1/status.
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
};

class Writer {
 public:
  Writer(PartitionSet& partitions, WriterOptions options, const Log& log);
  ~Writer();
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  void Start();
  void Submit(std::vector<Record> records, EventStore::AppendCallback done);
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
    // Set for RunExclusive's jobs (which have no records): run alone.
    std::function<void()> task;
    std::int64_t task_day = 0;
  };

  void Run();
  // Return the first failure, if any (each job's result has its own).
  Status CommitGroup(std::vector<Job>& group);
  Status CommitDay(std::int64_t day, std::vector<Job>& group,
                   std::vector<std::pair<std::size_t, std::size_t>>& refs);
  void NotifyCommitted(std::int64_t day, const std::vector<EventKey>& keys);
  Result<PartitionWriter*> WriterFor(std::int64_t day);
  void CloseWriter(std::int64_t day);

  // Constant after construction.
  PartitionSet& partitions_;
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
  std::thread thread_;

  // Held while the observer runs, so that replacing it waits for a call in
  // progress.
  std::mutex observer_mu_;
  CommitObserver observer_;  // guarded by observer_mu_

  std::function<void()> after_commit_;  // constant after Start()
  RateWindow committed_rate_;
  // Null without options_.metrics.
  HistogramMetric* group_events_ = nullptr;
  HistogramMetric* commit_seconds_ = nullptr;
  Counter* commit_failures_ = nullptr;

  // Writer thread only.
  std::map<std::int64_t, std::unique_ptr<PartitionWriter>> open_;
  std::deque<std::int64_t> open_order_;
};

}  // namespace dashcam::storage
