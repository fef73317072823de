// QueryLoop: clients that ask the query API continuously while something
// else happens (phase 11 of dashcam_bench: queries during ingest, ingest
// during queries). Each client is a thread with its own keep-alive
// connection that GETs the targets in turn, starting at a different one,
// until Stop(); every answer's wall time is kept per target.
//
// Thread-safety: the clients are internal; Stop() and the accessors are for
// the owning thread (the accessors after Stop()).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

namespace dashcam::bench {

class QueryLoop {
 public:
  QueryLoop(std::uint16_t port, std::vector<std::string> targets, int clients);
  ~QueryLoop();  // stops
  QueryLoop(const QueryLoop&) = delete;
  QueryLoop& operator=(const QueryLoop&) = delete;

  // Asks the clients to finish their current request, and waits for them.
  void Stop();

  // Per target (in the constructor's order): the wall times of its 200
  // answers, in ms.
  const std::vector<std::vector<double>>& latencies_ms() const { return latencies_; }
  std::int64_t failed() const { return failed_; }  // answers other than 200, transport errors
  // CPU seconds the client threads used (user + system): the clients share
  // the machine with the server they query.
  double cpu_seconds() const { return cpu_seconds_; }

 private:
  void Client(int index);

  const std::uint16_t port_;
  const std::vector<std::string> targets_;
  std::atomic<bool> stop_{false};
  std::vector<std::vector<std::vector<double>>> per_client_;  // [client][target]
  std::vector<std::int64_t> failed_per_client_;
  std::vector<double> cpu_per_client_;
  std::vector<std::thread> threads_;
  std::vector<std::vector<double>> latencies_;
  std::int64_t failed_ = 0;
  double cpu_seconds_ = 0;
};

}  // namespace dashcam::bench
