// WorkDir: see work_dir.h.
#include "tests/bench/work_dir.h"

#include <stdlib.h>

#include <system_error>

namespace dashcam::bench {

namespace fs = std::filesystem;

Result<WorkDir> WorkDir::Create(const std::string& requested, bool keep) {
  if (requested.empty()) {
    std::string templ = "/tmp/dashcam-bench-XXXXXX";
    if (::mkdtemp(templ.data()) == nullptr) {
      return Status::IoError("mkdtemp " + templ + ": " + std::generic_category().message(errno));
    }
    return WorkDir(fs::path(templ), keep);
  }
  std::error_code ec;
  fs::create_directories(requested, ec);
  if (ec) return Status::IoError("create " + requested + ": " + ec.message());
  if (!fs::is_empty(requested, ec) || ec) {
    return Status::InvalidArgument("--work-dir " + requested + " must be missing or empty");
  }
  return WorkDir(fs::absolute(requested), keep);
}

WorkDir::WorkDir(WorkDir&& other) noexcept
    : path_(std::exchange(other.path_, {})), keep_(other.keep_) {}

WorkDir::~WorkDir() {
  if (path_.empty() || keep_) return;
  std::error_code ec;
  fs::remove_all(path_, ec);
}

uint64_t DiskBytesUnder(const fs::path& dir) {
  std::error_code ec;
  uint64_t total = 0;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code size_ec;
    if (!it->is_regular_file(size_ec)) continue;
    uint64_t size = it->file_size(size_ec);
    if (!size_ec) total += size;
  }
  return total;
}

}  // namespace dashcam::bench
