#include "storage/partition_set.h"

#include <chrono>
#include <filesystem>
#include <system_error>

#include <fmt/format.h>

namespace dashcam::storage {

namespace fs = std::filesystem;

namespace {

constexpr const char* kDroppedDir = ".dropped";
constexpr const char* kQuarantineDir = "quarantine";
// The -wal and -shm files go first: a -wal left behind by a crash between
// renames would otherwise be replayed into a fresh partition of that day.
constexpr const char* kSuffixes[] = {"-wal", "-shm", ""};

std::uint64_t FileBytes(const std::string& path) {
  std::uint64_t bytes = 0;
  std::error_code ec;
  for (const char* suffix : kSuffixes) {
    const auto size = fs::file_size(path + suffix, ec);
    if (!ec) bytes += size;
  }
  return bytes;
}

// 20260129T101500Z: the wall-clock time, for quarantine names.
std::string CompactUtcNow() {
  std::string t = FormatRfc3339Ms(WallClockMs());  // 2026-01-29T10:15:00.123Z
  std::string out;
  for (char c : t.substr(0, 19)) {
    if (c != '-' && c != ':') out += c;
  }
  return out + "Z";
}

}  // namespace

PartitionFiles::~PartitionFiles() {
  std::error_code ec;
  for (const std::string& path : unlink_on_release_) fs::remove(path, ec);
}

Status PartitionSet::Discover() {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) return Status::IoError("create data dir " + dir_ + ": " + ec.message());
  // Files of partitions dropped by a run that ended before unlinking them.
  fs::remove_all(fs::path(dir_) / kDroppedDir, ec);
  for (const auto& entry : fs::directory_iterator(dir_, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.size() != 13 || name.substr(10) != ".db") continue;
    if (auto day = ParseDay(name.substr(0, 10))) Add(*day);
  }
  if (ec) return Status::IoError("list data dir " + dir_ + ": " + ec.message());
  return Status::Ok();
}

std::string PartitionSet::PathFor(std::int64_t day) const {
  return (fs::path(dir_) / (FormatDay(day) + ".db")).string();
}

void PartitionSet::Add(std::int64_t day) {
  std::lock_guard lock(mu_);
  auto& files = days_[day];
  if (!files) files = std::make_shared<PartitionFiles>(PathFor(day));
}

bool PartitionSet::Contains(std::int64_t day) const {
  std::lock_guard lock(mu_);
  return days_.count(day) > 0;
}

std::vector<std::int64_t> PartitionSet::DaysOverlapping(TimeMs from, TimeMs to) const {
  std::vector<std::int64_t> out;
  if (from >= to) return out;
  const std::int64_t first = DayOf(from), last = DayOf(to - 1);
  std::lock_guard lock(mu_);
  for (auto it = days_.rbegin(); it != days_.rend(); ++it) {
    if (it->first >= first && it->first <= last) out.push_back(it->first);
  }
  return out;
}

std::vector<PartitionInfo> PartitionSet::List() const {
  std::vector<std::int64_t> days;
  {
    std::lock_guard lock(mu_);
    for (const auto& entry : days_) days.push_back(entry.first);
  }
  std::vector<PartitionInfo> out;
  for (std::int64_t day : days) {
    PartitionInfo info{day, PathFor(day), 0};
    info.bytes = FileBytes(info.path);
    out.push_back(std::move(info));
  }
  return out;
}

Result<PartitionPin> PartitionSet::OpenPinned(
    std::int64_t day, const std::function<Status(const std::string&)>& open) {
  std::shared_lock files_lock(files_mu_);
  PartitionPin pin;
  {
    std::lock_guard lock(mu_);
    auto it = days_.find(day);
    if (it != days_.end()) pin = it->second;
  }
  if (!pin) return pin;  // dropped or quarantined since the caller listed it
  if (auto s = open(pin->path()); !s.ok()) return s;
  return pin;
}

Result<RemovedPartition> PartitionSet::Drop(std::int64_t day) {
  return Remove(day, /*keep=*/false);
}

Result<RemovedPartition> PartitionSet::Quarantine(std::int64_t day) {
  return Remove(day, /*keep=*/true);
}

Result<RemovedPartition> PartitionSet::Remove(std::int64_t day, bool keep) {
  PartitionPin released;  // the set's reference, released after the locks
  RemovedPartition out{day, 0, {}};
  std::unique_lock files_lock(files_mu_);
  {
    std::lock_guard lock(mu_);
    auto it = days_.find(day);
    if (it == days_.end()) return Status::NotFound("no partition " + FormatDay(day));
    released = std::move(it->second);
    days_.erase(it);
  }
  const std::string& path = released->path();
  out.bytes = FileBytes(path);
  const fs::path to_dir = fs::path(dir_) / (keep ? kQuarantineDir : kDroppedDir);
  std::error_code ec;
  fs::create_directories(to_dir, ec);
  const std::string tag = keep ? CompactUtcNow() : std::to_string(++removals_);
  Status status;
  for (const char* suffix : kSuffixes) {
    const std::string from = path + suffix;
    if (!fs::exists(from, ec)) continue;
    const std::string to = (to_dir / (fs::path(from).filename().string() + "." + tag)).string();
    fs::rename(from, to, ec);
    if (ec) {
      status = Status::IoError(fmt::format("rename {} to {}: {}", from, to, ec.message()));
      break;
    }
    out.moved.push_back(to);
  }
  released->dropped_.store(true, std::memory_order_release);
  if (!keep) released->unlink_on_release_ = out.moved;
  if (!status.ok()) {
    // The day stays out of the set: a partition that cannot be moved aside
    // is not served. Whatever did move is unlinked (drop) or kept.
    return status;
  }
  return out;
}

}  // namespace dashcam::storage
