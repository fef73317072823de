// ServerProcess: the dashcam server under test, run as a child process:
//   <binary> --listen <listen> --data-dir <data_dir> --threads <threads>
// with stdin from /dev/null and stdout and stderr appended to `log_path`.
//
// Lifetime: the destructor kills (SIGKILL) and reaps a child that is still
// running, so an early return never leaves a server behind.
// Thread-safety: Kill() may be called from any thread (it only sends a
// signal, and the pid is not reaped while a Watchdog that may call it is
// alive); everything else belongs to the owning thread.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "storage/status.h"

namespace dashcam::bench {

struct ServerLaunch {
  std::string binary;  // path to the dashcam executable
  std::string listen;  // "127.0.0.1:<port>"
  std::filesystem::path data_dir;
  int threads = 2;
  std::filesystem::path log_path;
};

struct ExitStatus {
  bool signaled = false;
  int value = 0;  // exit code, or signal number when signaled
  bool ok() const { return !signaled && value == 0; }
  std::string ToString() const;  // "exit code 0", "killed by signal 9 (Killed)"
};

class ServerProcess {
 public:
  static Result<ServerProcess> Start(const ServerLaunch& launch);

  ServerProcess(ServerProcess&& other) noexcept;
  ServerProcess& operator=(ServerProcess&&) = delete;
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;
  ~ServerProcess();

  pid_t pid() const { return pid_; }

  // Without blocking: the exit status if the child has exited.
  std::optional<ExitStatus> Poll();
  // SIGTERM, wait up to `grace`, then SIGKILL and wait.
  ExitStatus Stop(std::chrono::milliseconds grace);
  // SIGKILL, without waiting.
  void Kill() const;
  // VmHWM from /proc/<pid>/status. REQUIRES: still running.
  Result<uint64_t> PeakRssBytes() const;

 private:
  explicit ServerProcess(pid_t pid) : pid_(pid) {}

  pid_t pid_ = -1;  // -1 once moved from
  std::optional<ExitStatus> exit_;
};

// A TCP port on 127.0.0.1 that was free a moment ago (bind port 0, close).
Result<uint16_t> PickFreePort();

// The last `max_bytes` of a file ("" if unreadable), for error reports.
std::string ReadFileTail(const std::filesystem::path& path, size_t max_bytes);

}  // namespace dashcam::bench
