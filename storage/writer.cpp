#include "storage/writer.h"

#include <pthread.h>
#include <sys/statvfs.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <future>

#include <fmt/format.h>

#include "storage/time_format.h"

namespace dashcam::storage {
namespace {

constexpr auto kDiskFullLogPeriod = std::chrono::minutes(1);

WriterOptions WithSharedDictionaries(WriterOptions options, SharedDictionaries& dictionaries) {
  options.partition.shared_dictionaries = &dictionaries;
  return options;
}

// Removes what a failed creation of a partition left behind, so that no
// empty or half-initialised file is registered on the next start.
void RemoveCreatedFiles(const std::string& path) {
  std::error_code ec;
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) {
    std::filesystem::remove(path + suffix, ec);
  }
}

// Bytes available to us on the filesystem holding `dir`; nullopt when
// statvfs fails (then only the probe decides).
std::optional<std::uint64_t> AvailableBytes(const std::string& dir) {
  struct statvfs st {};
  if (::statvfs(dir.c_str(), &st) != 0) return std::nullopt;
  return static_cast<std::uint64_t>(st.f_bavail) * st.f_frsize;
}

}  // namespace

Writer::Writer(PartitionSet& partitions, WriterOptions options, const Log& log)
    : partitions_(partitions),
      dictionaries_(options.partition.compression.level),
      options_(WithSharedDictionaries(std::move(options), dictionaries_)),
      log_(log),
      commits_(options_.metrics) {
  if (Metrics* m = options_.metrics) {
    disk_full_pauses_ =
        &m->GetCounter("dashcam_disk_full_pauses_total",
                       "Times ingestion paused because a write found the disk full.");
  }
}

Writer::~Writer() {
  Stop();
}

void Writer::Start() {
  thread_ = std::thread([this] { Run(); });
  // Named so that `top -H` (and the bench, which reads its CPU time from
  // /proc/PID/task/*/comm) can tell the one thread every commit waits for.
  pthread_setname_np(thread_.native_handle(), kWriterThreadName);
}

std::size_t Writer::queued_bytes() const {
  std::lock_guard lock(mu_);
  return queued_bytes_;
}

WriterStats Writer::Stats() const {
  WriterStats s;
  {
    std::lock_guard lock(mu_);
    s.queued_bytes = queued_bytes_;
    s.queued_events = queued_events_;
    s.committed_events = committed_events_;
    s.last_commit = last_commit_;
    s.stopping = stopping_;
    if (disk_full_) {
      s.disk_full = true;
      s.disk_full_since_ms = disk_full_->since_ms;
      s.disk_full_error = disk_full_->error;
    }
  }
  s.max_queue_bytes = options_.max_queue_bytes;
  s.events_last_minute = committed_rate_.LastMinute();
  return s;
}

void Writer::SetCommitObserver(CommitObserver observer) {
  std::lock_guard lock(observer_mu_);
  observer_ = std::move(observer);
}

void Writer::Submit(std::vector<Record> records, EventStore::AppendCallback done) {
  // On the caller's thread: what it compresses, the writer thread need not.
  dictionaries_.Precompress(records);
  Job job;
  for (const Record& r : records) job.bytes += r.ApproxBytes();
  {
    std::unique_lock lock(mu_);
    Status refusal;
    if (stopping_) {
      refusal = Status::Unavailable("storage is shutting down");
    } else if (disk_full_) {
      ++disk_full_->refused_batches;
      refusal = Status::NoSpace(fmt::format(
          "the data disk is full (since {}); ingestion is paused and resumes by itself when "
          "space returns",
          FormatRfc3339Ms(disk_full_->since_ms)));
    } else if (queued_bytes_ > 0 && queued_bytes_ + job.bytes > options_.max_queue_bytes) {
      refusal = Status::Overloaded("ingest queue is full");
    }
    if (refusal.ok()) {
      job.records = std::move(records);
      job.done = std::move(done);
      queued_bytes_ += job.bytes;
      queued_events_ += job.records.size();
      queue_.push_back(std::move(job));
      cv_.notify_one();
      return;
    }
    lock.unlock();
    done(AppendResult{refusal, {}, {}});
  }
}

Status Writer::RunExclusive(std::int64_t day, std::function<void()> task) {
  std::promise<void> ran;
  auto done = ran.get_future();
  {
    std::lock_guard lock(mu_);
    if (stopping_) return Status::Unavailable("storage is shutting down");
    Job job;
    job.task = [&ran, task = std::move(task)] {
      task();
      ran.set_value();
    };
    job.task_day = day;
    queue_.push_back(std::move(job));
    cv_.notify_one();
  }
  done.wait();  // a queued job always runs: Run drains the queue before returning
  return Status::Ok();
}

void Writer::Stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    cv_.notify_one();
  }
  if (thread_.joinable()) thread_.join();
  open_.clear();
}

bool Writer::TakeWork(std::vector<Job>& group, bool& probe) {
  std::unique_lock lock(mu_);
  while (queue_.empty()) {
    if (stopping_) return false;  // stopping and drained
    if (!disk_full_) {
      cv_.wait(lock);
    } else if (SteadyClock::now() >= disk_full_->next_probe) {
      probe = true;
      return true;
    } else {
      cv_.wait_until(lock, disk_full_->next_probe);
    }
  }
  std::size_t records = 0;
  while (!queue_.empty() && !queue_.front().task &&
         (group.empty() || records < options_.max_group_records)) {
    records += queue_.front().records.size();
    group.push_back(std::move(queue_.front()));
    queue_.pop_front();
  }
  if (group.empty()) {  // a RunExclusive task is first
    group.push_back(std::move(queue_.front()));
    queue_.pop_front();
    // A task may free space (retention drops a partition): probe next.
    if (disk_full_) disk_full_->next_probe = SteadyClock::now();
  }
  return true;
}

void Writer::Run() {
  for (;;) {
    std::vector<Job> group;
    bool probe = false;
    if (!TakeWork(group, probe)) return;
    if (probe) {
      Probe();
      continue;
    }
    if (group.front().task) {
      CloseWriter(group.front().task_day);
      group.front().task();
      continue;
    }
    Status paused;
    {
      std::lock_guard lock(mu_);
      if (disk_full_)
        paused = Status::NoSpace("the data disk is full: " + disk_full_->error.message());
    }
    const auto start = std::chrono::steady_clock::now();
    Status status;
    if (paused.ok()) {
      status = CommitGroup(group);
    } else {
      FailGroup(group, paused);  // queued before the pause: no write is tried
      status = paused;
    }
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    std::size_t bytes = 0, events = 0, stored = 0;
    for (const Job& job : group) {
      bytes += job.bytes;
      events += job.records.size();
      stored += static_cast<std::size_t>(
          std::count_if(job.result.outcomes.begin(), job.result.outcomes.end(),
                        [](RecordOutcome o) { return o != RecordOutcome::kFailed; }));
    }
    if (paused.ok()) commits_.Record(events, took.count(), status.ok());
    committed_rate_.Add(stored);
    if (paused.ok()) NoteCommitStatus(status);
    {
      // Before the callbacks, so that a client that saw its batch
      // acknowledged also sees it counted and no longer queued.
      std::lock_guard lock(mu_);
      committed_events_ += stored;
      if (paused.ok()) last_commit_ = std::move(status);
      queued_bytes_ -= bytes;
      queued_events_ -= events;
    }
    if (after_commit_) after_commit_();
    for (Job& job : group) job.done(std::move(job.result));
  }
}

void Writer::FailGroup(std::vector<Job>& group, const Status& status) {
  for (Job& job : group) {
    job.result.status = status;
    job.result.outcomes.assign(job.records.size(), RecordOutcome::kFailed);
    job.result.ids.assign(job.records.size(), std::string());
  }
}

void Writer::NoteCommitStatus(const Status& status) {
  if (status.code() != StatusCode::kNoSpace) return;
  const TimeMs since = WallClockMs();
  {
    std::lock_guard lock(mu_);
    if (disk_full_) return;
    const auto now = SteadyClock::now();
    disk_full_ =
        DiskFull{status, no_space_day_, since, now + options_.disk_full_probe_interval, now};
  }
  if (disk_full_pauses_) disk_full_pauses_->Add();
  log_.Error(
      "disk_full",
      {{"partition", FormatDay(no_space_day_)},
       {"error", status.ToString()},
       {"probe_interval_ms", static_cast<std::int64_t>(options_.disk_full_probe_interval.count())},
       {"action", "ingestion paused; it resumes by itself when space returns"}});
}

void Writer::Probe() {
  std::int64_t day = 0;
  {
    std::lock_guard lock(mu_);
    day = disk_full_->day;
  }
  // Retention may have dropped that day to make room: probing it would
  // create it again. Probe where new events go instead.
  if (!partitions_.Contains(day)) day = DayOf(WallClockMs());
  Status s;
  const auto available = AvailableBytes(partitions_.dir());
  if (available && *available < options_.disk_full_resume_free_bytes) {
    s = Status::NoSpace(fmt::format("{} bytes free on the data disk, fewer than the {} to resume",
                                    *available, options_.disk_full_resume_free_bytes));
  } else {
    auto writer = WriterFor(day);
    s = writer.ok() ? (*writer)->ProbeSpace() : writer.status();
    if (!s.ok()) CloseWriter(day);  // a connection that failed a write starts afresh
  }
  const auto now = SteadyClock::now();
  std::unique_lock lock(mu_);
  DiskFull& full = *disk_full_;
  if (s.ok()) {
    const DiskFull ended = std::move(full);
    disk_full_.reset();
    last_commit_ = Status::Ok();  // a write transaction committed
    lock.unlock();
    log_.Info("disk_space_recovered", {{"partition", FormatDay(day)},
                                       {"paused_ms", WallClockMs() - ended.since_ms},
                                       {"refused_batches", ended.refused_batches},
                                       {"failed_probes", ended.failed_probes}});
    return;
  }
  ++full.failed_probes;
  full.next_probe = now + options_.disk_full_probe_interval;
  const bool remind = now - full.last_log >= kDiskFullLogPeriod;
  if (remind) full.last_log = now;
  const DiskFull copy = full;
  lock.unlock();
  if (remind) {
    log_.Warn("disk_full", {{"partition", FormatDay(day)},
                            {"since", FormatRfc3339Ms(copy.since_ms)},
                            {"refused_batches", copy.refused_batches},
                            {"failed_probes", copy.failed_probes},
                            {"error", s.ToString()}});
  } else {
    log_.Debug("disk_full_probe_failed", {{"partition", FormatDay(day)}, {"error", s.ToString()}});
  }
}

Status Writer::CommitGroup(std::vector<Job>& group) {
  // Bucket every record by day: (job index, record index).
  std::map<std::int64_t, std::vector<std::pair<std::size_t, std::size_t>>> by_day;
  for (std::size_t j = 0; j < group.size(); ++j) {
    Job& job = group[j];
    job.result.outcomes.assign(job.records.size(), RecordOutcome::kFailed);
    job.result.ids.assign(job.records.size(), std::string());
    for (std::size_t i = 0; i < job.records.size(); ++i) {
      by_day[DayOf(job.records[i].ts_ms)].emplace_back(j, i);
    }
  }
  if (options_.test_commit_delay_ms > 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(options_.test_commit_delay_ms));
  }
  Status first_failure;
  for (auto& [day, refs] : by_day) {
    Status s = CommitDay(day, group, refs);
    // A full disk wins: it is what pauses ingestion (NoteCommitStatus).
    if (first_failure.ok() || s.code() == StatusCode::kNoSpace) first_failure = std::move(s);
  }
  std::vector<std::int64_t> written;
  for (const auto& entry : by_day) written.push_back(entry.first);
  CloseIdle(written);
  return first_failure;
}

// A partition that the last kIdleGroups group commits did not write is
// closed: its WAL file is cut back first (PartitionWriter::ReleaseCacheAndWal,
// without waiting for readers), then the connection goes, and with it the
// page cache, the vocabulary it remembers and its compression state. Giving
// back only the page cache left ~12 MiB per day written: 1M events a day for
// 6 days took the server from 84 to 152 MiB, and 50M over 25 days to 210 MiB
// (bench phase 5); closed, 6 days stay at ~105 MiB. A late event for a closed
// day reopens it (a few ms). Counted in group commits, not seconds: under
// load that is well within a second, and without load nothing grows.
void Writer::CloseIdle(const std::vector<std::int64_t>& written_days) {
  constexpr int kIdleGroups = 8;
  std::vector<std::int64_t> idle;
  for (auto& [day, open] : open_) {
    if (std::find(written_days.begin(), written_days.end(), day) != written_days.end()) {
      open.idle_groups = 0;
    } else if (++open.idle_groups == kIdleGroups) {
      open.writer->ReleaseCacheAndWal();
      idle.push_back(day);
    }
  }
  for (std::int64_t day : idle) CloseWriter(day);
}

Status Writer::CommitDay(std::int64_t day, std::vector<Job>& group,
                         std::vector<std::pair<std::size_t, std::size_t>>& refs) {
  auto rec = [&](const std::pair<std::size_t, std::size_t>& r) -> const Record& {
    return group[r.first].records[r.second];
  };
  // Time order, so keys (and FTS5 rowids) grow within the transaction.
  std::stable_sort(refs.begin(), refs.end(),
                   [&](const auto& a, const auto& b) { return rec(a).ts_ms < rec(b).ts_ms; });
  std::vector<const Record*> records;
  records.reserve(refs.size());
  for (const auto& r : refs) records.push_back(&rec(r));
  std::vector<RecordOutcome> outcomes(refs.size(), RecordOutcome::kFailed);
  std::vector<EventKey> keys(refs.size(), 0);

  Status status;
  auto writer = WriterFor(day);
  if (!writer.ok())
    status = writer.status();
  else
    status = (*writer)->Write(records, outcomes, keys);

  if (!status.ok()) {
    // The transaction rolled back; a fresh connection clears whatever state
    // the failed one kept (an I/O error can leave it unusable).
    if (writer.ok()) CloseWriter(day);
    if (status.code() == StatusCode::kNoSpace) {
      no_space_day_ = day;  // logged once, as disk_full, by NoteCommitStatus
    } else {
      log_.Error("commit_failed", {{"partition", FormatDay(day)}, {"error", status.ToString()}});
    }
    for (const auto& r : refs) {
      if (group[r.first].result.status.ok()) group[r.first].result.status = status;
    }
    return status;
  }
  for (std::size_t k = 0; k < refs.size(); ++k) {
    AppendResult& res = group[refs[k].first].result;
    res.outcomes[refs[k].second] = outcomes[k];
    const Record& r = rec(refs[k]);
    res.ids[refs[k].second] = !r.doc_id.empty() ? r.doc_id : FormatEventKey(keys[k]);
  }
  NotifyCommitted(day, keys);
  return Status::Ok();
}

void Writer::NotifyCommitted(std::int64_t day, const std::vector<EventKey>& keys) {
  std::lock_guard lock(observer_mu_);
  if (!observer_) return;
  // Duplicates got key 0. Records were written in time order, so the stored
  // keys are ascending already; the sort is a guard for the contract.
  std::vector<EventKey> stored;
  stored.reserve(keys.size());
  for (EventKey k : keys) {
    if (k != 0) stored.push_back(k);
  }
  if (stored.empty()) return;
  if (!std::is_sorted(stored.begin(), stored.end())) std::sort(stored.begin(), stored.end());
  observer_(CommitNotice{day, stored});
}

void Writer::CloseWriter(std::int64_t day) {
  open_.erase(day);
  std::erase(open_order_, day);
}

Result<PartitionWriter*> Writer::WriterFor(std::int64_t day) {
  auto it = open_.find(day);
  if (it != open_.end()) return it->second.writer.get();
  if (open_.size() >= options_.max_open_partitions) {
    // Close the least recently opened partition; today's is reopened cheaply.
    open_.erase(open_order_.front());
    open_order_.pop_front();
  }
  const std::string path = partitions_.PathFor(day);
  std::error_code ec;
  const bool existed = std::filesystem::exists(path, ec);
  auto opened = PartitionWriter::Open(path, day, options_.partition);
  if (!opened.ok()) {
    // Creating a day's file can fail half way (a full disk): nothing in it
    // was registered or acknowledged, so take it away again.
    if (!existed) RemoveCreatedFiles(path);
    return opened.status();
  }
  partitions_.Add(day);
  PartitionWriter* w = opened->get();
  open_.emplace(day, OpenPartition{std::move(*opened)});
  open_order_.push_back(day);
  return w;
}

}  // namespace dashcam::storage
