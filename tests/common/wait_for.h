// WaitFor: polls a condition the server reaches on its own (a compaction, a
// drop, a disk-full pause) until it holds or a time limit passes.
#pragma once

#include <chrono>
#include <functional>
#include <thread>

namespace dashcam::testing {

// Whether `done` held within `limit`, asking every 20 ms.
inline bool WaitFor(const std::function<bool()>& done, std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return done();
}

}  // namespace dashcam::testing
