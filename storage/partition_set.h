// PartitionSet: which day partitions exist under the data directory. Files
// are named YYYY-MM-DD.db (UTC day of event time).
//
// Dropping a partition (retention) and quarantining one (damaged at startup)
// take it out of the set and rename its files aside at once, so that the
// writer may create a fresh file of that day at the same path. A dropped
// partition's files are renamed into DATA/.dropped/ and unlinked when the
// last reader holding a PartitionPin lets go: a query that already has the
// partition open reads on unharmed. Quarantined files are kept in
// DATA/quarantine/ for the operator.
//
// Thread-safety: all methods are safe to call concurrently.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <string>
#include <vector>

#include "storage/record.h"

namespace dashcam::storage {

// The files of one registered partition, shared by the set and every read
// connection open on them. Once the partition is dropped, the last holder
// unlinks the renamed files.
class PartitionFiles {
 public:
  explicit PartitionFiles(std::string path) : path_(std::move(path)) {}
  ~PartitionFiles();
  PartitionFiles(const PartitionFiles&) = delete;
  PartitionFiles& operator=(const PartitionFiles&) = delete;

  const std::string& path() const { return path_; }
  // True once the partition has been dropped or quarantined: connections
  // open on it still read, but no new one should be opened.
  bool dropped() const { return dropped_.load(std::memory_order_acquire); }
  // Changes when the file's index is replaced (a re-index: partition_reindex.h).
  // Connections opened before read on correctly, but take the new index's
  // meta (and so its faster query plans) only once they read it again.
  std::uint64_t generation() const { return generation_.load(std::memory_order_acquire); }
  void Renewed() { generation_.fetch_add(1, std::memory_order_acq_rel); }

 private:
  friend class PartitionSet;
  const std::string path_;
  std::atomic<bool> dropped_{false};
  std::atomic<std::uint64_t> generation_{0};
  std::vector<std::string> unlink_on_release_;  // set once, under the set's files lock
};
using PartitionPin = std::shared_ptr<PartitionFiles>;

// What Remove did.
struct RemovedPartition {
  std::int64_t day = 0;
  std::uint64_t bytes = 0;         // of the db, -wal and -shm files
  std::vector<std::string> moved;  // where the files went ("" for a dropped one)
};

class PartitionSet {
 public:
  explicit PartitionSet(std::string dir) : dir_(std::move(dir)) {}

  // Creates the directory if needed and registers every partition file in it.
  // Unlinks whatever a previous run left in DATA/.dropped/.
  Status Discover();

  std::string PathFor(std::int64_t day) const;
  // Registers a partition once its file exists with a schema.
  void Add(std::int64_t day);
  bool Contains(std::int64_t day) const;

  // Days with a partition that may hold events in [from, to), newest first.
  std::vector<std::int64_t> DaysOverlapping(TimeMs from, TimeMs to) const;
  std::vector<PartitionInfo> List() const;
  const std::string& dir() const { return dir_; }

  // Runs `open(path)` for `day`'s files while they cannot be moved, and
  // returns a pin that keeps them on disk until released; a null pin when
  // the day is not (or no longer) in the set; or whatever `open` returned.
  // `open` must leave the connection with its -wal and -shm files open (one
  // read does it): those are found by name, which a drop changes.
  Result<PartitionPin> OpenPinned(std::int64_t day,
                                  const std::function<Status(const std::string&)>& open);

  // Takes `day` out of the set and renames its files (-wal and -shm first)
  // into DATA/.dropped/, to be unlinked when the last pin is released.
  // REQUIRES: no connection writes to the partition (the writer closed its
  // own). NotFound when the day is not in the set.
  Result<RemovedPartition> Drop(std::int64_t day);
  // Takes `day` out of the set and moves its files to
  // DATA/quarantine/<name>.<UTC time>, where they stay.
  Result<RemovedPartition> Quarantine(std::int64_t day);

 private:
  Result<RemovedPartition> Remove(std::int64_t day, bool keep);

  const std::string dir_;
  // Shared while a reader opens files, exclusive while files are renamed.
  std::shared_mutex files_mu_;
  mutable std::mutex mu_;
  std::map<std::int64_t, PartitionPin> days_;  // guarded by mu_
  std::uint64_t removals_ = 0;                 // guarded by files_mu_: unique trash names
};

}  // namespace dashcam::storage
