// Compactor: compacts each past day's partition (partition_compaction.h) in
// the background, once nothing has been written to it for a while.
//
// A partition is due when its UTC day is before today's (by the store's
// clock) and neither its file nor its WAL has been modified for
// `quiet_period`: a client catching up on old logs keeps its day open. A
// partition is compacted once; a late event written to it afterwards makes
// it due again (after another quiet period), and compacting it again costs
// about what the late events added. So does a late event that arrives while
// the index is being merged, when it leaves a segment of its own.
//
// A partition whose index an older dashcam made (partition_reindex.h) is
// first re-indexed from its documents, then compacted. A write during the
// re-index drops the new index, and leaves the day due again once quiet; so
// does a lack of room for the new index beside the old (RoomFn). A failed
// re-index is logged, and tried again only once the files change.
//
// The work is paced: after each step the compactor pauses as long as the step
// took, so it takes at most half of one core from ingestion and queries. One
// partition at a time, on one thread; Stop() interrupts it between two steps.
// A partition dropped by retention while it is being compacted is left at
// the next step: the compactor holds a PartitionPin, so the files stay until
// it lets go.
//
// Thread-safety: all methods may be called from any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "storage/log.h"
#include "storage/metrics.h"
#include "storage/partition_compaction.h"
#include "storage/partition_reindex.h"
#include "storage/partition_set.h"

namespace dashcam::storage {

class Compactor {
 public:
  using ClockFn = std::function<TimeMs()>;
  // Whether the data directory may grow by `bytes` for a while: a re-index
  // holds a day's old and new index at once, and a size limit (retention.h)
  // would drop an older day for it. Called on the compactor's thread.
  using RoomFn = std::function<bool(std::uint64_t bytes)>;

  // `partitions` and `metrics` (may be null) must outlive the compactor.
  // `room` null: always room.
  Compactor(CompactionPolicy policy, PartitionSet& partitions, ClockFn now, const Log& log,
            Metrics* metrics, RoomFn room = nullptr);
  ~Compactor();
  Compactor(const Compactor&) = delete;
  Compactor& operator=(const Compactor&) = delete;

  // Starts the periodic thread (nothing when the policy is disabled); the
  // first check comes one check_period after Start.
  void Start();
  void Stop();  // idempotent

  // Compacts every partition due now, on the calling thread. Returns how many
  // it compacted (with work done or found already compact).
  std::size_t CheckNow();

  CompactionStatus Status() const;

 private:
  // Sizes and modification times of a partition's files.
  struct FileState {
    std::int64_t db_mtime_ns = 0, wal_mtime_ns = 0;
    std::uint64_t db_bytes = 0, wal_bytes = 0;
    bool operator==(const FileState&) const = default;
  };
  static FileState StateOf(const std::string& path);
  bool Due(const PartitionInfo& p, std::int64_t today, const FileState& state) const;
  // True when the partition was compacted or found compact; false when it
  // failed, or was stopped or dropped meanwhile.
  bool CompactOne(const PartitionInfo& p);
  // Re-indexes `db` (partition_reindex.h) when its meta says so: nullopt
  // when it does not; not swapped when there was no room or a write came
  // meanwhile (the day stays due). Errors: Unavailable when `pace` stopped
  // it; a failure, logged.
  Result<std::optional<ReindexResult>> ReindexIfDue(const PartitionInfo& p, Db& db,
                                                    const CompactionPace& pace);
  // Waits `d` unless stopping; false when stopping.
  bool Pause(std::chrono::steady_clock::duration d);
  void Run();

  // Constant after construction.
  const CompactionPolicy policy_;
  PartitionSet& partitions_;
  const ClockFn now_;
  const RoomFn room_;
  const Log& log_;
  Counter* compacted_ = nullptr;
  Counter* returned_bytes_ = nullptr;

  std::mutex check_mu_;  // one check at a time
  // Guarded by check_mu_: each partition's files as its last compaction left
  // them; unchanged files are not due again.
  std::map<std::int64_t, FileState> compacted_state_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;    // guarded by mu_
  CompactionStatus status_;  // guarded by mu_
  std::thread thread_;
};

}  // namespace dashcam::storage
