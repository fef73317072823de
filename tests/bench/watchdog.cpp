// Watchdog: see watchdog.h.
#include "tests/bench/watchdog.h"

namespace dashcam::bench {
namespace {

constexpr std::chrono::milliseconds kCheckEvery{250};

}  // namespace

Watchdog::Watchdog(std::chrono::milliseconds limit, std::function<void()> on_stall)
    : limit_(limit), on_stall_(std::move(on_stall)), last_tick_ns_(NowNs()) {
  thread_ = std::thread([this] { Loop(); });
}

Watchdog::~Watchdog() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void Watchdog::Tick() {
  last_tick_ns_.store(NowNs(), std::memory_order_relaxed);
}

int64_t Watchdog::NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void Watchdog::Loop() {
  const int64_t limit_ns = std::chrono::nanoseconds(limit_).count();
  std::unique_lock<std::mutex> lock(mutex_);
  while (!wake_.wait_for(lock, kCheckEvery, [this] { return stop_; })) {
    if (NowNs() - last_tick_ns_.load(std::memory_order_relaxed) < limit_ns) continue;
    fired_.store(true);
    on_stall_();
    return;
  }
}

}  // namespace dashcam::bench
