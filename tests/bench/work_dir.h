// WorkDir: the benchmark's scratch directory (the baseline database, the
// server's data directory and its log). The benchmark owns it completely: a
// directory passed in must be missing or empty, and the whole directory is
// removed when the WorkDir is destroyed unless `keep` was set.
//
// Thread-safety: not thread-safe; owned by main.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "storage/status.h"

namespace dashcam::bench {

class WorkDir {
 public:
  // `requested` empty: a fresh mkdtemp directory under /tmp. Otherwise that
  // directory, created if missing. Fails if it exists and is not empty.
  static Result<WorkDir> Create(const std::string& requested, bool keep);

  WorkDir(WorkDir&& other) noexcept;
  WorkDir& operator=(WorkDir&&) = delete;
  WorkDir(const WorkDir&) = delete;
  WorkDir& operator=(const WorkDir&) = delete;
  ~WorkDir();  // removes the directory unless kept

  const std::filesystem::path& path() const { return path_; }
  bool keep() const { return keep_; }

 private:
  WorkDir(std::filesystem::path path, bool keep) : path_(std::move(path)), keep_(keep) {}

  std::filesystem::path path_;  // empty once moved from
  bool keep_ = false;
};

// Sum of the sizes of the regular files under `dir`, recursively; 0 if `dir`
// does not exist. Files vanishing during the walk are skipped.
uint64_t DiskBytesUnder(const std::filesystem::path& dir);

}  // namespace dashcam::bench
