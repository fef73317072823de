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

void Writer::Submit(std::vector<Record> records, EventStore::AppendCallback done, BatchPart part) {
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
      job.part = part;
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

std::uint64_t Writer::NewStream() {
  std::lock_guard lock(mu_);
  return queued_events_ > 0 ? 0 : ++next_stream_;
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

bool Writer::TakeWork(std::vector<Job>& group, bool& probe,
                      std::optional<SteadyClock::time_point> until) {
  std::unique_lock lock(mu_);
  while (queue_.empty()) {
    if (stopping_) return false;  // stopping and drained
    if (until) {
      if (cv_.wait_until(lock, *until) == std::cv_status::timeout && queue_.empty()) return true;
    } else if (!disk_full_) {
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
  Transaction tx;
  for (;;) {
    std::vector<Job> group;
    bool probe = false;
    std::optional<SteadyClock::time_point> until;
    if (WaitsForParts(tx)) until = SteadyClock::now() + options_.part_wait;
    if (!TakeWork(group, probe, until)) {
      EndTransaction(tx);
      return;
    }
    if (probe) {
      Probe();
      continue;
    }
    if (group.empty() || group.front().task) EndTransaction(tx);  // no part came in time, or a task
    if (group.empty()) continue;
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
    if (!paused.ok()) {
      // Queued before the pause: no write is tried. (A pause starts only
      // when a transaction ends, so none is open here.)
      FailGroup(group, paused);
      Report(group, paused, 0, /*attempted=*/false);
      continue;
    }
    WriteGroup(tx, group);
    if (!WaitsForParts(tx)) EndTransaction(tx);
  }
}

bool Writer::WaitsForParts(const Transaction& tx) const {
  return !tx.open_streams.empty() && !tx.has_whole && tx.records < options_.max_group_records &&
         SteadyClock::now() - tx.started < options_.max_transaction_open;
}

void Writer::WriteGroup(Transaction& tx, std::vector<Job>& group) {
  // Bucket every record by day: (job index in group, record index).
  std::map<std::int64_t, std::vector<std::pair<std::size_t, std::size_t>>> by_day;
  for (std::size_t j = 0; j < group.size(); ++j) {
    for (std::size_t i = 0; i < group[j].records.size(); ++i) {
      by_day[DayOf(group[j].records[i].ts_ms)].emplace_back(j, i);
    }
  }
  // Each day in the transaction holds a connection open: end it before it
  // would need more than may be open at once.
  std::size_t all_days = tx.days.size();
  for (const auto& entry : by_day) all_days += tx.days.contains(entry.first) ? 0 : 1;
  if (!tx.days.empty() && all_days > options_.max_open_partitions) EndTransaction(tx);
  if (tx.jobs.empty()) tx.started = SteadyClock::now();

  const std::size_t base = tx.jobs.size();  // the group's jobs go after tx's
  for (auto& entry : by_day) {
    for (auto& ref : entry.second) ref.first += base;
  }
  for (Job& job : group) {
    job.result.outcomes.assign(job.records.size(), RecordOutcome::kFailed);
    job.result.ids.assign(job.records.size(), std::string());
    tx.records += job.records.size();
    if (job.part.stream != 0 && job.part.more) tx.open_streams.insert(job.part.stream);
    if (job.part.stream != 0 && !job.part.more) tx.open_streams.erase(job.part.stream);
    if (job.part.stream == 0) tx.has_whole = true;
    tx.jobs.push_back(std::move(job));
  }
  group.clear();

  for (auto& [day, refs] : by_day) WriteDay(tx, day, refs);
}

void Writer::WriteDay(Transaction& tx, std::int64_t day,
                      std::vector<std::pair<std::size_t, std::size_t>>& refs) {
  auto rec = [&](const std::pair<std::size_t, std::size_t>& r) -> const Record& {
    return tx.jobs[r.first].records[r.second];
  };
  // Time order, so keys (and FTS5 rowids) grow within the group.
  std::stable_sort(refs.begin(), refs.end(),
                   [&](const auto& a, const auto& b) { return rec(a).ts_ms < rec(b).ts_ms; });
  Transaction::Day& d = tx.days[day];
  if (d.failed.ok() && d.writer == nullptr) {
    auto writer = WriterFor(day);
    d.failed = writer.ok() ? (*writer)->Begin() : writer.status();
    if (d.failed.ok()) {
      d.writer = *writer;
    } else if (writer.ok()) {
      CloseWriter(day);  // a connection that failed to begin starts afresh
    }
  }
  const std::size_t first = d.refs.size();
  d.refs.insert(d.refs.end(), refs.begin(), refs.end());
  d.outcomes.resize(d.refs.size(), RecordOutcome::kFailed);
  d.keys.resize(d.refs.size(), 0);
  if (!d.failed.ok()) return;
  std::vector<const Record*> records;
  records.reserve(refs.size());
  for (const auto& r : refs) records.push_back(&rec(r));
  d.failed = d.writer->Add(records, std::span(d.outcomes).subspan(first),
                           std::span(d.keys).subspan(first));
  if (!d.failed.ok()) {
    // The day's transaction rolled back; a fresh connection clears whatever
    // state the failed one kept (an I/O error can leave it unusable).
    d.writer = nullptr;
    CloseWriter(day);
  }
}

void Writer::EndTransaction(Transaction& tx) {
  if (tx.jobs.empty()) return;
  if (options_.test_commit_delay_ms > 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(options_.test_commit_delay_ms));
  }
  Status first_failure;
  std::vector<std::int64_t> written;
  for (auto& [day, d] : tx.days) {
    written.push_back(day);
    Status s = d.failed;
    if (s.ok()) s = d.writer->Commit();
    if (!s.ok()) {
      if (d.writer != nullptr) CloseWriter(day);
      DayFailed(day, s, tx);
    } else {
      for (std::size_t k = 0; k < d.refs.size(); ++k) {
        const auto [j, i] = d.refs[k];
        AppendResult& res = tx.jobs[j].result;
        res.outcomes[i] = d.outcomes[k];
        const Record& r = tx.jobs[j].records[i];
        res.ids[i] = !r.doc_id.empty() ? r.doc_id : FormatEventKey(d.keys[k]);
      }
      NotifyCommitted(day, d.keys);
    }
    // A full disk wins: it is what pauses ingestion (NoteCommitStatus).
    if (first_failure.ok() || s.code() == StatusCode::kNoSpace) first_failure = std::move(s);
  }
  CloseIdle(written);
  // A group of more days than that keeps them all open till here.
  while (open_.size() > options_.max_open_partitions) CloseWriter(open_order_.front());
  const std::chrono::duration<double> took = SteadyClock::now() - tx.started;
  std::vector<Job> jobs = std::move(tx.jobs);
  tx = Transaction{};
  Report(jobs, first_failure, took.count(), /*attempted=*/true);
}

void Writer::DayFailed(std::int64_t day, const Status& status, Transaction& tx) {
  if (status.code() == StatusCode::kNoSpace) {
    no_space_day_ = day;  // logged once, as disk_full, by NoteCommitStatus
  } else {
    log_.Error("commit_failed", {{"partition", FormatDay(day)}, {"error", status.ToString()}});
  }
  for (const auto& [j, i] : tx.days[day].refs) {
    if (tx.jobs[j].result.status.ok()) tx.jobs[j].result.status = status;
  }
}

void Writer::Report(std::vector<Job>& jobs, const Status& status, double seconds, bool attempted) {
  std::size_t bytes = 0, events = 0, stored = 0;
  for (const Job& job : jobs) {
    bytes += job.bytes;
    events += job.records.size();
    stored += static_cast<std::size_t>(
        std::count_if(job.result.outcomes.begin(), job.result.outcomes.end(),
                      [](RecordOutcome o) { return o != RecordOutcome::kFailed; }));
  }
  if (attempted) commits_.Record(events, seconds, status.ok());
  committed_rate_.Add(stored);
  if (attempted) NoteCommitStatus(status);
  {
    // Before the callbacks, so that a client that saw its batch
    // acknowledged also sees it counted and no longer queued.
    std::lock_guard lock(mu_);
    committed_events_ += stored;
    if (attempted) last_commit_ = status;
    queued_bytes_ -= bytes;
    queued_events_ -= events;
  }
  if (after_commit_) after_commit_();
  for (Job& job : jobs) job.done(std::move(job.result));
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
    // Close the least recently opened partition not in a transaction;
    // today's is reopened cheaply. (WriteGroup keeps a transaction's days
    // within the limit, so there is one, unless a single group holds more
    // days: then all stay open till EndTransaction closes the extra.)
    const auto victim = std::find_if(open_order_.begin(), open_order_.end(), [&](std::int64_t d) {
      return !open_.at(d).writer->in_transaction();
    });
    if (victim != open_order_.end()) {
      open_.erase(*victim);
      open_order_.erase(victim);
    }
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
