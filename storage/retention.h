// Retention: keeps the data directory within an age and a size, by dropping
// whole day partitions, oldest first.
//
// Rules (either or both):
//   max_age_days N: the partition of day D is dropped from the start of UTC
//       day D + N + 1, so every event is kept at least N days.
//   max_disk_bytes B: while the partitions' files (db, -wal, -shm) take more
//       than B bytes, the oldest is dropped.
// Today's partition (the UTC day of the wall clock) is never dropped, and
// neither are partitions dated after today (events from clients with a
// skewed clock): they age into the rules as the clock reaches them. The
// size rule can therefore be exceeded by today's and future partitions.
// Events older than the age limit are still accepted; the partition they
// create goes at the next check.
//
// RetentionEnforcer checks at Start() and then every check_period, and soon
// after a commit (Poke) when a size limit is set. Thread-safety: all methods
// may be called from any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "storage/log.h"
#include "storage/metrics.h"
#include "storage/record.h"

namespace dashcam::storage {

struct RetentionPolicy {
  std::uint32_t max_age_days = 0;    // Default: 0, no age limit
  std::uint64_t max_disk_bytes = 0;  // Default: 0, no size limit
  std::chrono::milliseconds check_period{60'000};
  bool enabled() const { return max_age_days > 0 || max_disk_bytes > 0; }
};

// A partition a rule wants gone. reason: "age" or "disk_bytes".
struct PlannedDrop {
  std::int64_t day = 0;
  std::string reason;
  // When the rule takes it: the past for a drop due now; 0 for the size rule
  // when under the limit (it takes it once the limit is exceeded).
  TimeMs due_ms = 0;
};

// The drops due now, oldest first, for partitions `parts` (any order) at
// wall-clock time `now`. Pure.
std::vector<PlannedDrop> PlanDrops(const RetentionPolicy& policy,
                                   std::span<const PartitionInfo> parts, TimeMs now);

// The next partition retention would drop if nothing else changed: the
// oldest droppable one, with the rule and time that would take it. nullopt
// when no rule ever would (no policy, or no partition up to today).
std::optional<PlannedDrop> NextDrop(const RetentionPolicy& policy,
                                    std::span<const PartitionInfo> parts, TimeMs now);

// A drop that happened.
struct DroppedPartition {
  std::int64_t day = 0;
  std::uint64_t events = 0;
  std::uint64_t bytes = 0;
  std::string reason;
  TimeMs at_ms = 0;
};

// What retention is doing, for /api/v1/status.
struct RetentionStatus {
  RetentionPolicy policy;
  std::int64_t today = 0;        // UTC day of the wall clock
  TimeMs last_check_ms = 0;      // 0: never checked
  std::uint64_t disk_bytes = 0;  // of the partitions' files, now
  std::size_t partitions = 0;    // now
  std::optional<DroppedPartition> last_drop;
  std::optional<PlannedDrop> next_drop;
  std::uint64_t dropped_partitions = 0;  // since start
  std::uint64_t dropped_bytes = 0;
  std::string last_error;  // of the last failed drop, empty if none
};

class RetentionEnforcer {
 public:
  // Lists the partitions with their sizes.
  using ListFn = std::function<std::vector<PartitionInfo>()>;
  // Drops one partition (reason filled in by the enforcer).
  using DropFn = std::function<Result<DroppedPartition>(std::int64_t day)>;
  using ClockFn = std::function<TimeMs()>;

  // `metrics` may be null; it must outlive the enforcer.
  RetentionEnforcer(RetentionPolicy policy, ListFn list, DropFn drop, ClockFn now, const Log& log,
                    Metrics* metrics);
  ~RetentionEnforcer();
  RetentionEnforcer(const RetentionEnforcer&) = delete;
  RetentionEnforcer& operator=(const RetentionEnforcer&) = delete;

  // Checks once (on the calling thread), then starts the periodic thread.
  // Does nothing without a policy beyond recording the status.
  void Start();
  void Stop();  // idempotent
  // A commit happened: with a size limit, check soon.
  void Poke();
  // Drops whatever is due now. Returns the number dropped.
  std::size_t CheckNow();

  RetentionStatus Status() const;

 private:
  void Run();

  // Constant after construction.
  const RetentionPolicy policy_;
  const ListFn list_;
  const DropFn drop_;
  const ClockFn now_;
  const Log& log_;
  Counter* dropped_partitions_ = nullptr;
  Counter* dropped_bytes_ = nullptr;

  std::mutex check_mu_;  // one check at a time
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool poked_ = false;      // guarded by mu_
  bool stopping_ = false;   // guarded by mu_
  RetentionStatus status_;  // guarded by mu_
  std::thread thread_;
};

}  // namespace dashcam::storage
