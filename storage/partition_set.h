// PartitionSet: which day partitions exist under the data directory. Files
// are named YYYY-MM-DD.db (UTC day of event time).
//
// Thread-safety: all methods are safe to call concurrently.
#pragma once

#include <cstdint>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "storage/record.h"

namespace dashcam::storage {

class PartitionSet {
 public:
  explicit PartitionSet(std::string dir) : dir_(std::move(dir)) {}

  // Creates the directory if needed and registers every partition file in it.
  Status Discover();

  std::string PathFor(std::int64_t day) const;
  // Registers a partition once its file exists with a schema.
  void Add(std::int64_t day);
  bool Contains(std::int64_t day) const;

  // Days with a partition that may hold events in [from, to), newest first.
  std::vector<std::int64_t> DaysOverlapping(TimeMs from, TimeMs to) const;
  std::vector<PartitionInfo> List() const;
  const std::string& dir() const { return dir_; }

 private:
  const std::string dir_;
  mutable std::mutex mu_;
  std::set<std::int64_t> days_;  // guarded by mu_
};

}  // namespace dashcam::storage
