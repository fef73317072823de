#include "storage/search_helpers.h"

#include <algorithm>

namespace dashcam::storage {

struct SearchHelpers::BatchState {
  BatchState(std::size_t n, Work work) : n(n), work(std::move(work)) {}

  const std::size_t n;
  const Work work;
  std::atomic<std::size_t> next{0};  // the next unclaimed item
  std::atomic<bool> stop{false};     // the work returned false, or cancelled

  std::mutex mu;
  std::condition_variable idle;
  std::size_t running = 0;  // helpers inside RunItems; guarded by mu
  std::size_t joined = 0;   // helpers that have taken part; guarded by mu
  bool closed = false;      // Finish/Cancel began waiting; guarded by mu
};

SearchHelpers::SearchHelpers(unsigned threads, std::function<void()> on_thread_start) {
  threads_.reserve(threads);
  for (unsigned i = 0; i < threads; ++i) {
    threads_.emplace_back([this, on_thread_start] {
      if (on_thread_start) on_thread_start();
      HelperLoop();
    });
  }
}

SearchHelpers::~SearchHelpers() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (std::thread& t : threads_) t.join();
}

SearchHelpers::Batch SearchHelpers::Start(std::size_t n, Work work) {
  auto state = std::make_shared<BatchState>(n, std::move(work));
  std::size_t invited = 0;
  {
    std::lock_guard lock(mu_);
    ++open_batches_;
    if (open_batches_ <= threads_.size() && n > 1) {
      // One entry per helper invited; each becomes a participant of its own.
      invited = std::min(idle_, n - 1);
      for (std::size_t i = 0; i < invited; ++i) offered_.push_back(state);
    }
  }
  for (std::size_t i = 0; i < invited; ++i) wake_.notify_one();
  return Batch(*this, std::move(state));
}

std::uint64_t SearchHelpers::RunItems(BatchState& state, std::size_t who) {
  std::uint64_t items = 0;
  while (!state.stop.load(std::memory_order_relaxed)) {
    const std::size_t item = state.next.fetch_add(1);
    if (item >= state.n) break;
    ++items;
    if (!state.work(item, who)) state.stop.store(true);
  }
  return items;
}

void SearchHelpers::HelperLoop() {
  std::unique_lock lock(mu_);
  for (;;) {
    ++idle_;
    wake_.wait(lock, [this] { return stopping_ || !offered_.empty(); });
    --idle_;
    if (stopping_) return;
    std::shared_ptr<BatchState> state = std::move(offered_.front());
    offered_.pop_front();
    lock.unlock();
    std::size_t who = 0;
    {
      std::lock_guard batch_lock(state->mu);
      if (!state->closed) {
        who = ++state->joined;
        ++state->running;
      }
    }
    if (who != 0) {
      helped_items_.fetch_add(RunItems(*state, who), std::memory_order_relaxed);
      std::lock_guard batch_lock(state->mu);
      if (--state->running == 0) state->idle.notify_all();
    }
    lock.lock();
  }
}

std::size_t SearchHelpers::pending_offers() const {
  std::lock_guard lock(mu_);
  return offered_.size();
}

void SearchHelpers::Close(BatchState& state) {
  {
    std::unique_lock lock(state.mu);
    state.closed = true;
    state.idle.wait(lock, [&state] { return state.running == 0; });
  }
  std::lock_guard lock(mu_);
  --open_batches_;
  // Invitations no helper took in time would otherwise be popped later, each
  // costing a helper a wake-up that could have gone to an open batch.
  std::erase_if(offered_, [&state](const auto& offer) { return offer.get() == &state; });
}

SearchHelpers::Batch::Batch(SearchHelpers& owner, std::shared_ptr<BatchState> state)
    : owner_(owner), state_(std::move(state)) {}

SearchHelpers::Batch::~Batch() {
  Cancel();
}

void SearchHelpers::Batch::Finish() {
  if (done_) return;
  done_ = true;
  RunItems(*state_, 0);
  owner_.Close(*state_);
}

void SearchHelpers::Batch::Cancel() {
  if (done_) return;
  done_ = true;
  state_->stop.store(true);
  owner_.Close(*state_);
}

}  // namespace dashcam::storage
