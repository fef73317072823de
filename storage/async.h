// Asio adapters for calling an EventStore from coroutines on an I/O strand:
//   co_await RunBlocking(workers, fn)   runs a blocking call (a search) on the
//                                       worker pool and resumes on the caller's
//                                       executor with its result;
//   co_await AsyncAppend(store, records) queues records and resumes once the
//                                       writer has committed them;
//   PartedAppend                        queues one batch in parts from any
//                                       thread, and co_await Wait() resumes
//                                       once every part is committed.
// Neither ever blocks the calling (I/O) thread.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <type_traits>
#include <utility>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "storage/event_store.h"

namespace dashcam::storage {

// `fn` is called on a worker thread; it lives in this coroutine's frame until
// then. The task handed to co_spawn captures it by reference only: g++ 12 can
// destroy a temporary of a co_await expression twice, which is harmless only
// for trivially destructible objects (a by-value capture of a std::function
// was freed twice).
template <class Fn>
auto RunBlocking(boost::asio::any_io_executor workers, Fn fn)
    -> boost::asio::awaitable<std::invoke_result_t<Fn&>> {
  using R = std::invoke_result_t<Fn&>;
  const auto task = [&fn]() -> boost::asio::awaitable<R> { co_return fn(); };
  co_return co_await boost::asio::co_spawn(workers, task, boost::asio::use_awaitable);
}

// A completion handler (from async_initiate) as a copyable callback that
// may run on any thread: it hands the result to the handler on the
// handler's own executor.
template <class Handler>
auto ResumeWith(Handler handler) {
  auto shared = std::make_shared<Handler>(std::move(handler));
  return [shared](AppendResult result) {
    auto ex = boost::asio::get_associated_executor(*shared);
    boost::asio::post(ex, [shared, r = std::move(result)]() mutable { (*shared)(std::move(r)); });
  };
}

template <class Token = boost::asio::use_awaitable_t<>>
auto AsyncAppend(EventStore& store, std::vector<Record> records, Token&& token = {}) {
  return boost::asio::async_initiate<Token, void(AppendResult)>(
      [&store](auto handler, std::vector<Record> recs) {
        store.Append(std::move(recs), ResumeWith(std::move(handler)));
      },
      token, std::move(records));
}

// One batch queued in parts (EventStore::AppendPart) under `stream` (from
// the store's NewAppendStream, not 0): Send them in order, from whatever
// thread decodes them, the last with more = false; Wait then gives the
// batch's result as one AppendResult, the parts' outcomes and ids joined in
// order. A part refused whole counts as that many failed records; when every
// part was, the result has no outcomes, as a refused Append's.
class PartedAppend {
 public:
  PartedAppend(EventStore& store, std::uint64_t stream)
      : store_(store), stream_(stream), state_(std::make_shared<State>()) {}

  void Send(std::vector<Record> records, bool more) {
    const std::size_t index = parts_++;
    const std::size_t size = records.size();
    {
      std::lock_guard lock(state_->mu);
      state_->results.emplace_back();
      state_->sizes.push_back(size);
      ++state_->outstanding;
    }
    store_.AppendPart(
        std::move(records),
        [state = state_, index](AppendResult r) {
          std::function<void()> wake;
          {
            std::lock_guard lock(state->mu);
            state->results[index] = std::move(r);
            if (--state->outstanding == 0) wake = std::move(state->waiter);
          }
          if (wake) wake();
        },
        stream_, more);
  }

  std::size_t parts() const { return parts_; }

  // REQUIRES: the last part was sent.
  template <class Token = boost::asio::use_awaitable_t<>>
  auto Wait(Token&& token = {}) {
    return boost::asio::async_initiate<Token, void(AppendResult)>(
        [state = state_](auto handler) {
          auto finish = [state, resume = ResumeWith(std::move(handler))] {
            resume(Joined(*state));
          };
          std::unique_lock lock(state->mu);
          if (state->outstanding == 0) {
            lock.unlock();
            finish();
          } else {
            state->waiter = finish;
          }
        },
        token);
  }

 private:
  struct State {
    std::mutex mu;
    std::vector<AppendResult> results;  // by part
    std::vector<std::size_t> sizes;     // records per part
    std::size_t outstanding = 0;        // parts not reported yet
    std::function<void()> waiter;       // set by Wait while some are
  };

  static AppendResult Joined(State& state) {
    std::lock_guard lock(state.mu);
    AppendResult all;
    bool any_taken = false;
    for (std::size_t i = 0; i < state.results.size(); ++i) {
      AppendResult& r = state.results[i];
      const bool refused = r.outcomes.empty() && state.sizes[i] > 0;
      any_taken = any_taken || (state.sizes[i] > 0 && !refused);
      if (!r.status.ok() && (all.status.ok() || r.status.code() == StatusCode::kNoSpace)) {
        all.status = r.status;
      }
      if (refused) {
        all.outcomes.insert(all.outcomes.end(), state.sizes[i], RecordOutcome::kFailed);
        all.ids.insert(all.ids.end(), state.sizes[i], std::string());
      } else {
        all.outcomes.insert(all.outcomes.end(), r.outcomes.begin(), r.outcomes.end());
        all.ids.insert(all.ids.end(), std::make_move_iterator(r.ids.begin()),
                       std::make_move_iterator(r.ids.end()));
      }
    }
    if (!any_taken) {
      all.outcomes.clear();
      all.ids.clear();
    }
    return all;
  }

  EventStore& store_;
  const std::uint64_t stream_;
  std::shared_ptr<State> state_;
  std::size_t parts_ = 0;  // the sending thread's
};

}  // namespace dashcam::storage
