// Streaming measurements for dashcam_bench:
//   TimeExport   one GET /api/v1/export read to the end as fast as this
//                process can: events (lines; CSV rows minus the header),
//                bytes, seconds, and the server's CPU seconds meanwhile
//                (from /proc), so a loaded machine's wall time can be told
//                from the server's own cost.
//   TailReaders  N live tails (GET /api/v1/tail) held open and read by one
//                thread that polls them all and counts the events received,
//                while the caller drives ingestion.
//
// Thread-safety: TimeExport blocks; a TailReaders object belongs to the
// thread that made it (its reader thread is internal).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "storage/status.h"

namespace dashcam::bench {

struct ExportTiming {
  double seconds = 0;
  double server_cpu_seconds = 0;
  std::uint64_t events = 0;
  std::uint64_t bytes = 0;  // body bytes, chunk framing excluded
};

// `params` is the query string ("format=csv&order=asc"); `server_pid` is
// read for CPU time (0: not measured). `progress`, when set, is called
// whenever a piece of the body arrives (a watchdog's tick).
Result<ExportTiming> TimeExport(std::uint16_t port, pid_t server_pid, const std::string& params,
                                const std::function<void()>& progress = {});

class TailReaders {
 public:
  // Opens one tail per query (SSE) and starts reading. Check status().
  TailReaders(std::uint16_t port, const std::vector<std::string>& queries);
  ~TailReaders();  // stops reading, closes
  TailReaders(const TailReaders&) = delete;
  TailReaders& operator=(const TailReaders&) = delete;

  const Status& status() const { return status_; }
  std::uint64_t events() const { return events_.load(); }
  // Tails the server ended (`event: end`) or that broke.
  std::uint64_t ended() const { return ended_.load(); }

 private:
  void Run();

  std::vector<int> fds_;
  std::vector<std::string> tails_;  // per fd: the last bytes, for split patterns
  Status status_;
  std::atomic<bool> stop_{false};
  std::atomic<std::uint64_t> events_{0};
  std::atomic<std::uint64_t> ended_{0};
  std::thread thread_;
};

// Server CPU seconds (user + system) so far; 0 if unreadable.
double ProcessCpuSeconds(pid_t pid);
// The same, summed over the process's threads named `name` (as in
// /proc/PID/task/TID/comm); 0 if none is.
double ThreadCpuSeconds(pid_t pid, std::string_view name);
// The calling thread's CPU seconds (user + system) so far.
double CallingThreadCpuSeconds();

}  // namespace dashcam::bench
