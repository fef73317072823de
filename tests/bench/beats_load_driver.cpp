#include "tests/bench/beats_load_driver.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <deque>
#include <string>
#include <thread>
#include <vector>

#include "tests/common/beats_client.h"

namespace dashcam::bench {
namespace {

using testing::BeatsClient;

constexpr int kPipelining = 2;
constexpr auto kAckTimeout = std::chrono::seconds(120);

struct Window {
  std::string bytes;  // W frame + one C frame
  uint32_t count = 0;
};

std::vector<Window> EncodeWindows(const EventCorpus& corpus, int batch) {
  std::vector<Window> out;
  for (size_t first = 0; first < corpus.size(); first += static_cast<size_t>(batch)) {
    const size_t n = std::min(corpus.size() - first, static_cast<size_t>(batch));
    std::string frames;
    for (size_t i = 0; i < n; ++i) {
      frames += testing::JsonFrame(static_cast<uint32_t>(i + 1), corpus.Json(first + i));
    }
    out.push_back(
        {testing::WindowFrame(static_cast<uint32_t>(n)) + testing::CompressedFrame(frames),
         static_cast<uint32_t>(n)});
  }
  return out;
}

// One connection: keeps up to kPipelining windows unACKed.
void RunConnection(uint16_t port, const std::vector<Window>& windows, std::atomic<size_t>& next,
                   std::atomic<int64_t>& events_ok, std::atomic<int64_t>& failed) {
  BeatsClient client(port);
  std::deque<const Window*> in_flight;
  for (;;) {
    while (static_cast<int>(in_flight.size()) < kPipelining) {
      const size_t i = next.fetch_add(1);
      if (i >= windows.size()) break;
      if (!client.connected() || !client.Send(windows[i].bytes)) {
        failed.fetch_add(1);
        continue;
      }
      in_flight.push_back(&windows[i]);
    }
    if (in_flight.empty()) return;
    auto ack =
        client.ReadFinalAck(std::chrono::duration_cast<std::chrono::milliseconds>(kAckTimeout));
    const Window* w = in_flight.front();
    in_flight.pop_front();
    if (ack && ack->seq == w->count) {
      events_ok.fetch_add(w->count);
    } else {
      failed.fetch_add(1 + static_cast<int64_t>(in_flight.size()));
      return;  // the connection is no longer in step
    }
  }
}

}  // namespace

BeatsLoadResult DriveBeatsLoad(uint16_t port, const EventCorpus& corpus, int batch,
                               int connections) {
  const std::vector<Window> windows = EncodeWindows(corpus, batch);
  std::atomic<size_t> next{0};
  std::atomic<int64_t> events_ok{0}, failed{0};
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int c = 0; c < connections; ++c) {
    threads.emplace_back([&] { RunConnection(port, windows, next, events_ok, failed); });
  }
  for (auto& t : threads) t.join();
  BeatsLoadResult result;
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  result.events_ok = events_ok.load();
  result.failed_windows = failed.load();
  return result;
}

}  // namespace dashcam::bench
