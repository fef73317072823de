#include "storage/partition_set.h"

#include <filesystem>
#include <system_error>

namespace dashcam::storage {

namespace fs = std::filesystem;

Status PartitionSet::Discover() {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) return Status::IoError("create data dir " + dir_ + ": " + ec.message());
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
  days_.insert(day);
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
    if (*it >= first && *it <= last) out.push_back(*it);
  }
  return out;
}

std::vector<PartitionInfo> PartitionSet::List() const {
  std::vector<std::int64_t> days;
  {
    std::lock_guard lock(mu_);
    days.assign(days_.begin(), days_.end());
  }
  std::vector<PartitionInfo> out;
  for (std::int64_t day : days) {
    PartitionInfo info{day, PathFor(day), 0};
    std::error_code ec;
    for (const char* suffix : {"", "-wal", "-shm"}) {
      const auto size = fs::file_size(info.path + suffix, ec);
      if (!ec) info.bytes += size;
    }
    out.push_back(std::move(info));
  }
  return out;
}

}  // namespace dashcam::storage
