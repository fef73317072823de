// Watchdog: notices when the benchmark stops making progress. Workers call
// Tick() after every completed exchange; if no tick arrives for `limit`, a
// background thread calls `on_stall` once (dashcam_bench kills the server,
// which unblocks every synchronous socket call with an error).
//
// Thread-safety: Tick() and fired() may be called from any thread.
// `on_stall` runs on the watchdog's own thread. The destructor stops and
// joins that thread; after it returns `on_stall` will not be called.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace dashcam::bench {

class Watchdog {
 public:
  Watchdog(std::chrono::milliseconds limit, std::function<void()> on_stall);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  void Tick();
  bool fired() const { return fired_.load(); }

 private:
  static int64_t NowNs();
  void Loop();

  // Constant after construction
  const std::chrono::milliseconds limit_;
  const std::function<void()> on_stall_;

  std::atomic<int64_t> last_tick_ns_;
  std::atomic<bool> fired_{false};

  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;  // Guarded by mutex_

  std::thread thread_;  // last: starts once everything above is ready
};

}  // namespace dashcam::bench
