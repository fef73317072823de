#include "tests/bench/query_loop.h"

#include <chrono>
#include <thread>

#include "tests/bench/stream_load.h"
#include "tests/common/http_client.h"

namespace dashcam::bench {

QueryLoop::QueryLoop(std::uint16_t port, std::vector<std::string> targets, int clients)
    : port_(port),
      targets_(std::move(targets)),
      per_client_(static_cast<std::size_t>(clients),
                  std::vector<std::vector<double>>(targets_.size())),
      failed_per_client_(static_cast<std::size_t>(clients), 0),
      cpu_per_client_(static_cast<std::size_t>(clients), 0),
      latencies_(targets_.size()) {
  for (int i = 0; i < clients; ++i) threads_.emplace_back([this, i] { Client(i); });
}

QueryLoop::~QueryLoop() {
  Stop();
}

void QueryLoop::Stop() {
  if (threads_.empty()) return;
  stop_ = true;
  for (std::thread& t : threads_) t.join();
  threads_.clear();
  for (std::size_t c = 0; c < per_client_.size(); ++c) {
    for (std::size_t t = 0; t < targets_.size(); ++t) {
      latencies_[t].insert(latencies_[t].end(), per_client_[c][t].begin(), per_client_[c][t].end());
    }
    failed_ += failed_per_client_[c];
    cpu_seconds_ += cpu_per_client_[c];
  }
}

void QueryLoop::Client(int index) {
  testing::HttpClient conn("127.0.0.1", port_);
  auto& mine = per_client_[static_cast<std::size_t>(index)];
  for (std::size_t k = static_cast<std::size_t>(index); !stop_; ++k) {
    const std::size_t t = k % targets_.size();
    const auto start = std::chrono::steady_clock::now();
    const testing::HttpResult r = conn.Get(targets_[t]);
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (r.status == 200) {
      mine[t].push_back(ms);
    } else {
      ++failed_per_client_[static_cast<std::size_t>(index)];
      std::this_thread::sleep_for(std::chrono::milliseconds(10));  // no busy loop on errors
    }
  }
  cpu_per_client_[static_cast<std::size_t>(index)] = CallingThreadCpuSeconds();
}

}  // namespace dashcam::bench
