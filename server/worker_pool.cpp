#include "server/worker_pool.h"

#include <sys/resource.h>
#include <unistd.h>

namespace dashcam::server {

void LowerThisThreadPriority(int nice_increment) {
  if (nice_increment <= 0) return;
  // This thread only: Linux keeps a nice value per thread. Raising it needs
  // no privilege; failing to is harmless.
  const id_t self = static_cast<id_t>(::gettid());
  (void)::setpriority(PRIO_PROCESS, self, ::getpriority(PRIO_PROCESS, self) + nice_increment);
}

WorkerPool::WorkerPool(unsigned threads, int nice_increment)
    : ioc_(static_cast<int>(threads)), work_(boost::asio::make_work_guard(ioc_)) {
  for (unsigned i = 0; i < threads; ++i) {
    threads_.emplace_back([this, nice_increment] {
      LowerThisThreadPriority(nice_increment);
      ioc_.run();
    });
  }
}

WorkerPool::~WorkerPool() {
  Join();
}

void WorkerPool::Join() {
  work_.reset();
  for (std::thread& t : threads_) t.join();
  threads_.clear();
}

}  // namespace dashcam::server
