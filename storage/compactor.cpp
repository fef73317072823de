#include "storage/compactor.h"

#include <sys/stat.h>

#include "storage/time_format.h"

namespace dashcam::storage {

namespace {

using SteadyClock = std::chrono::steady_clock;

struct FileStat {
  std::int64_t mtime_ns = 0;
  std::uint64_t bytes = 0;
};

FileStat StatFile(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return {};
  return {static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec,
          static_cast<std::uint64_t>(st.st_size)};
}

}  // namespace

Compactor::Compactor(CompactionPolicy policy, PartitionSet& partitions, ClockFn now, const Log& log,
                     Metrics* metrics, RoomFn room)
    : policy_(std::move(policy)),
      partitions_(partitions),
      now_(std::move(now)),
      room_(std::move(room)),
      log_(log) {
  status_.policy = policy_;
  if (metrics != nullptr) {
    compacted_ = &metrics->GetCounter("dashcam_compacted_partitions_total",
                                      "Past day partitions whose index was merged or whose free "
                                      "pages were returned by compaction.");
    returned_bytes_ = &metrics->GetCounter("dashcam_compaction_returned_bytes_total",
                                           "Bytes of partition files returned by compaction.");
  }
}

Compactor::~Compactor() {
  Stop();
}

void Compactor::Start() {
  if (!policy_.enabled) return;
  thread_ = std::thread([this] { Run(); });
}

void Compactor::Stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    cv_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
}

void Compactor::Run() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    cv_.wait_for(lock, policy_.check_period, [this] { return stopping_; });
    if (stopping_) break;
    lock.unlock();
    CheckNow();
    lock.lock();
  }
}

bool Compactor::Pause(SteadyClock::duration d) {
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, d, [this] { return stopping_; });
  return !stopping_;
}

Compactor::FileState Compactor::StateOf(const std::string& path) {
  const FileStat db = StatFile(path);
  const FileStat wal = StatFile(path + "-wal");
  return {db.mtime_ns, wal.mtime_ns, db.bytes, wal.bytes};
}

bool Compactor::Due(const PartitionInfo& p, std::int64_t today, const FileState& state) const {
  if (p.day >= today) return false;
  auto done = compacted_state_.find(p.day);
  if (done != compacted_state_.end() && done->second == state) return false;
  // Modification times are the filesystem's (the real clock), not now_.
  const auto now_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  const std::int64_t quiet_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(policy_.quiet_period).count();
  return now_ns - std::max(state.db_mtime_ns, state.wal_mtime_ns) >= quiet_ns;
}

std::size_t Compactor::CheckNow() {
  std::lock_guard check(check_mu_);
  const std::int64_t today = DayOf(now_());
  std::size_t compacted = 0;
  for (const PartitionInfo& p : partitions_.List()) {
    {
      std::lock_guard lock(mu_);
      if (stopping_) break;
    }
    if (!Due(p, today, StateOf(p.path))) continue;
    if (CompactOne(p)) ++compacted;
  }
  return compacted;
}

Result<std::optional<ReindexResult>> Compactor::ReindexIfDue(const PartitionInfo& p, Db& db,
                                                             const CompactionPace& pace) {
  auto due = NeedsReindex(db, !policy_.steps.drop_positions);
  if (!due.ok()) return due.status();
  if (!*due) return std::optional<ReindexResult>();
  // The file's size: more than its index.
  if (room_ && !room_(p.bytes)) return std::optional<ReindexResult>(ReindexResult{});
  auto r = ReindexPartition(db, policy_.steps, pace);
  if (!r.ok()) {
    // A failed re-index leaves the day as it was: it is still compacted.
    if (r.status().code() != StatusCode::kUnavailable) {
      log_.Error("reindex_failed",
                 {{"partition", FormatDay(p.day)}, {"error", r.status().ToString()}});
    }
    return r.status();
  }
  if (!r->swapped) {
    log_.Info("reindex_dropped", {{"partition", FormatDay(p.day)},
                                  {"reason", "written to meanwhile; due again when quiet"}});
  }
  return std::optional<ReindexResult>(*r);
}

bool Compactor::CompactOne(const PartitionInfo& p) {
  {
    std::lock_guard lock(mu_);
    status_.running = p.day;
  }
  const auto t0 = SteadyClock::now();
  Db db;
  auto pin = partitions_.OpenPinned(
      p.day, [&](const std::string& path) { return OpenForCompaction(path, db); });
  Result<CompactionResult> r = Status::Internal("compaction did not run");
  bool dropped = false;
  if (!pin.ok()) {
    r = pin.status();
  } else if (!*pin) {
    r = Status::Unavailable("no longer in the set");
    dropped = true;
  } else {
    const PartitionPin& files = *pin;
    const CompactionPace pace = [&](SteadyClock::duration step) {
      return !files->dropped() && Pause(step);
    };
    auto reindexed = ReindexIfDue(p, db, pace);
    if (reindexed.ok() && *reindexed && (*reindexed)->swapped) files->Renewed();
    if (reindexed.ok() || reindexed.status().code() != StatusCode::kUnavailable) {
      r = CompactPartition(db, policy_.steps, pace);
    } else {
      r = reindexed.status();  // stopped
    }
    // A re-index that failed was logged, and is tried again once the files
    // change; one dropped for a write meanwhile, once the day is quiet.
    if (r.ok() && reindexed.ok() && *reindexed) {
      r->reindexed_events = (*reindexed)->swapped ? (*reindexed)->events : 0;
      r->documents_encoded = (*reindexed)->swapped ? (*reindexed)->encoded : 0;
      r->reindex_pending = !(*reindexed)->swapped;
    }
    dropped = files->dropped();
  }
  db.Close();
  const double seconds = std::chrono::duration<double>(SteadyClock::now() - t0).count();

  std::lock_guard lock(mu_);
  status_.running.reset();
  if (!r.ok()) {
    // Stopping, or dropped meanwhile: not a failure.
    if (stopping_ || dropped) return false;
    status_.last_error = r.status().ToString();
    log_.Error("compaction_failed",
               {{"partition", FormatDay(p.day)}, {"error", r.status().ToString()}});
    return false;
  }
  // Late events that added segments, or came during a re-index, leave it
  // due (once quiet again).
  if (r->fully_merged && !r->reindex_pending) compacted_state_[p.day] = StateOf(p.path);
  if (r->merge_steps == 0 && r->vacuum_steps == 0 && r->reindexed_events == 0) {
    return true;  // already compact
  }
  const std::uint64_t returned =
      r->bytes_before > r->bytes_after ? r->bytes_before - r->bytes_after : 0;
  log_.Info("partition_compacted", {{"partition", FormatDay(p.day)},
                                    {"bytes_before", r->bytes_before},
                                    {"bytes_after", r->bytes_after},
                                    {"merge_steps", r->merge_steps},
                                    {"vacuum_steps", r->vacuum_steps},
                                    {"reindexed_events", r->reindexed_events},
                                    {"documents_encoded", r->documents_encoded},
                                    {"returns_pages", r->returns_pages},
                                    {"seconds", seconds}});
  if (compacted_) compacted_->Add();
  if (returned_bytes_) returned_bytes_->Add(returned);
  ++status_.compacted_partitions;
  status_.returned_bytes += returned;
  status_.last = CompactedPartition{p.day, *r, seconds, now_()};
  return true;
}

CompactionStatus Compactor::Status() const {
  std::lock_guard lock(mu_);
  return status_;
}

}  // namespace dashcam::storage
