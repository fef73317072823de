// WorkerPool: threads that run the handlers posted to one io_context. The
// server keeps two: one for ingest's CPU work (decoding, parsing, redaction,
// detection) and one for queries' (search, aggregations, export, tails).
//
// Apart, because in one shared pool the queries' long handlers queued ahead
// of ingest's parsing: with 8 clients querying continuously the _bulk rate
// fell to 0.33x its rate alone (bench phase 11, 1M events, 2 vCPU).
//
// The query pool has one thread fewer than --threads by default, so that
// searches leave ingest a core's worth of workers, but at least two, so
// that one slow search (up to the query deadline) cannot hold up every
// other. On 2 cores, `--query-threads 1` trades that for ingest's rate.
// `nice_increment` > 0 also lowers the priority of the pool's threads (on
// Linux the nice value is per thread): on a machine with no idle core the
// kernel then gives ingest's threads and the writer the larger share. It is
// off by default: on a GPU server shared with training jobs it would rank
// searches below everyone else's work too, not only below ingest.
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

// Adds `nice_increment` (if > 0) to the calling thread's nice value.
void LowerThisThreadPriority(int nice_increment);

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
