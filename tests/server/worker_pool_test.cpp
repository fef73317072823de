// Tests for server/worker_pool.h: the pool's threads run what is posted,
// Join() finishes the queue, and the query pool's threads run at the lower
// priority asked for while the caller's priority is left alone.
#include "server/worker_pool.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <future>

#include <gtest/gtest.h>
#include <boost/asio/post.hpp>

namespace dashcam::server {
namespace {

int ThreadNice() {
  return ::getpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()));
}

// The nice value of the pool thread that runs a posted task.
int NiceInPool(WorkerPool& pool) {
  std::promise<int> nice;
  boost::asio::post(pool.executor(), [&] { nice.set_value(ThreadNice()); });
  return nice.get_future().get();
}

TEST(WorkerPoolTest, ThreadsRunAtTheRequestedLowerPriority) {
  const int caller = ThreadNice();
  WorkerPool ingest(2, 0);
  WorkerPool queries(2, 7);
  EXPECT_EQ(NiceInPool(ingest), caller);
  EXPECT_EQ(NiceInPool(queries), std::min(caller + 7, 19));
  EXPECT_EQ(ThreadNice(), caller);  // the caller's own thread is unchanged
}

TEST(WorkerPoolTest, JoinRunsWhatIsQueued) {
  std::atomic<int> ran{0};
  {
    WorkerPool pool(1, 3);
    for (int i = 0; i < 100; ++i) {
      boost::asio::post(pool.executor(), [&] {
        // Work posted by work: still done before Join returns.
        boost::asio::post(pool.executor(), [&] { ++ran; });
      });
    }
    pool.Join();
    EXPECT_EQ(ran.load(), 100);
  }
  EXPECT_EQ(ran.load(), 100);
}

}  // namespace
}  // namespace dashcam::server
