// SearchHelpers: a few threads that take part in a search's per-partition
// work (reading a query's hits and count day by day) while the machine's other
// cores would idle, so that one search over many days is answered sooner.
//
// A batch is n items that the starting thread and any helper that joins
// claim one at a time from a shared counter. The starting thread never waits
// for a helper to become free: when it finishes the batch it claims what is
// left itself, and then waits only for the items helpers have already
// started. A helper that comes late finds nothing left and moves on.
//
// A batch is offered to the helpers only when a helper is idle and no more
// batches are open than there are helpers. So with many searches at once
// (more than the helpers), each runs on its own thread as it would without
// helpers, and the helpers take no CPU from ingest beside them.
//
// Thread-safety: Start may be called from any thread, concurrently; a Batch
// belongs to the thread that started it.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace dashcam::storage {

class SearchHelpers {
 public:
  // Works on `item` as participant `who`: 0 is the thread that started the
  // batch, 1..threads() the helpers. A participant works on one item at a
  // time, always from the same thread, so per-participant state needs no
  // lock. Returns false to end the batch: the items not yet claimed are
  // skipped.
  using Work = std::function<bool(std::size_t item, std::size_t who)>;

 private:
  struct BatchState;

 public:
  class Batch {
   public:
    Batch(SearchHelpers& owner, std::shared_ptr<BatchState> state);
    ~Batch();  // Cancel()
    Batch(const Batch&) = delete;
    Batch& operator=(const Batch&) = delete;

    // Works on the unclaimed items on this thread, then waits until the
    // helpers' items are done. After it returns no helper calls the work.
    void Finish();
    // Skips the unclaimed items and waits for the helpers' items.
    void Cancel();

   private:
    SearchHelpers& owner_;
    std::shared_ptr<BatchState> state_;
    bool done_ = false;
  };

  // `threads` helpers (0: none, every batch runs on its starting thread).
  // `on_thread_start`, if set, runs first on each helper thread (the server
  // lowers their priority there as it does its query workers').
  SearchHelpers(unsigned threads, std::function<void()> on_thread_start);
  ~SearchHelpers();  // stops and joins the helpers; no batch may be open
  SearchHelpers(const SearchHelpers&) = delete;
  SearchHelpers& operator=(const SearchHelpers&) = delete;

  // Opens a batch of `n` items; helpers may start on it at once. `work` must
  // stay valid until the batch is finished or cancelled.
  Batch Start(std::size_t n, Work work);

  // Participants a batch can have: the starting thread and the helpers.
  std::size_t participants() const { return threads_.size() + 1; }

  // Items helpers have worked on since start (for tests and metrics).
  std::uint64_t helped_items() const { return helped_items_.load(std::memory_order_relaxed); }

  // Invitations waiting for a helper (for tests): a finished batch leaves none.
  std::size_t pending_offers() const;

 private:
  void HelperLoop();
  void Close(BatchState& state);
  static std::uint64_t RunItems(BatchState& state, std::size_t who);

  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::deque<std::shared_ptr<BatchState>> offered_;  // guarded by mu_
  std::size_t idle_ = 0;                             // guarded by mu_
  std::size_t open_batches_ = 0;                     // guarded by mu_
  bool stopping_ = false;                            // guarded by mu_
  std::atomic<std::uint64_t> helped_items_{0};
  std::vector<std::thread> threads_;
};

}  // namespace dashcam::storage
