// Asio adapters for calling an EventStore from coroutines on an I/O strand:
//   co_await RunBlocking(workers, fn)   runs a blocking call (a search) on the
//                                       worker pool and resumes on the caller's
//                                       executor with its result;
//   co_await AsyncAppend(store, records) queues records and resumes once the
//                                       writer has committed them.
// Neither ever blocks the calling (I/O) thread.
#pragma once

#include <memory>
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

template <class Token = boost::asio::use_awaitable_t<>>
auto AsyncAppend(EventStore& store, std::vector<Record> records, Token&& token = {}) {
  return boost::asio::async_initiate<Token, void(AppendResult)>(
      [&store](auto handler, std::vector<Record> recs) {
        using Handler = decltype(handler);
        auto shared = std::make_shared<Handler>(std::move(handler));
        store.Append(std::move(recs), [shared](AppendResult result) {
          auto ex = boost::asio::get_associated_executor(*shared);
          boost::asio::post(ex,
                            [shared, r = std::move(result)]() mutable { (*shared)(std::move(r)); });
        });
      },
      token, std::move(records));
}

}  // namespace dashcam::storage
