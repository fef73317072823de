// WorkerPool: threads that run the handlers posted to one io_context. The
// server keeps two: one for ingest's CPU work (decoding, parsing, redaction,
// detection) and one for queries' (search, aggregations, export, tails).
//
// Apart, because in one shared pool the queries' long handlers queued ahead
// of ingest's parsing: with 8 clients querying continuously the _bulk rate
// fell to 0.33x its rate alone (bench phase 11, 1M events, 2 vCPU).
//
// `nice_increment` > 0 lowers the priority of the pool's threads (on Linux
// the nice value is per thread): on a machine with no idle core the kernel
// then gives ingest's threads and the writer the larger share, and queries
// take what is left, so acknowledged ingest keeps its rate while people
// search. 0 leaves the threads as they are.
//
// Thread-safety: executor() may be used from any thread; Join() once, from
// the owner.
#pragma once

#include <optional>
#include <thread>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

namespace dashcam::server {

class WorkerPool {
 public:
  WorkerPool(unsigned threads, int nice_increment);
  ~WorkerPool();  // Join()
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  boost::asio::any_io_executor executor() { return ioc_.get_executor(); }

  // Runs what is queued (and what that posts), then stops the threads.
  void Join();

 private:
  boost::asio::io_context ioc_;
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work_;
  std::vector<std::thread> threads_;
};

}  // namespace dashcam::server
