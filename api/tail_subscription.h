// TailSubscription: one live-tail client: what it asked for, and the bounded
// queue of formatted pieces waiting to be written to it. The TailHub fills the
// queue from its dispatch thread; the client's HTTP session drains it on its
// strand, one piece per write, so the queue is the only place a slow client's
// backlog can grow, and it cannot grow past `max_queue_bytes`: the piece that
// would overflow it ends the subscription instead (reason "slow_client"; the
// backlog is discarded and the client gets only the final message). While
// all queues together hold more than TailTotals::max_memory_bytes, a client
// with any backlog is ended the same way at its next piece; one that has
// kept up still gets it, so the overshoot is at most a piece per client.
//
// After the end (slow client, shutdown, lagging hub, storage error) the client
// receives what is still queued (nothing for a slow client), then a final
// message (SSE: `event: end` with `{"reason":..}`; text: a `-- tail ended: ..`
// line), then the body ends.
//
// Thread-safety: Push and End may be called from any thread; Next, Cancel and
// the destructor belong to the session's strand (the executor given at
// construction).
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>

#include "api/event_format.h"
#include "storage/query_ast.h"
#include "storage/status.h"
#include "storage/time_format.h"

namespace dashcam::api {

// Totals over every subscription of a hub, for /metrics and a bound on the
// memory of all queues together. Subscribers of the same query share pieces,
// so memory_bytes (each live piece once) is what the process holds, and
// queued_bytes (each piece once per queue holding it) what clients owe.
struct TailTotals {
  std::size_t max_memory_bytes = 256u << 20;
  std::atomic<std::size_t> subscribers{0};
  std::atomic<std::size_t> queued_bytes{0};
  std::atomic<std::size_t> memory_bytes{0};
};

class TailSubscription : public std::enable_shared_from_this<TailSubscription> {
 public:
  enum class EndReason { kSlowClient, kShutdown, kLagging, kError };

  struct Filter {
    std::string q;  // the query text, for logs
    // Subscriptions with the same key share one evaluation per commit: the
    // text, whether a row filter applies, and the query as resolved (its
    // dates and the row filter included), so that neither a filter nor an
    // older `now` leaks from one subscription to another.
    std::string share_key;
    query::Node query;
    TimeMs from = kMinEventTime;  // event time bounds, [from, to)
    TimeMs to = kMaxEventTime;
    EventFormat format = EventFormat::kSse;  // kSse or kText
  };

  // `since`: the hub's commit sequence number when subscribing; only later
  // commits are delivered.
  TailSubscription(Filter filter, std::uint64_t since, std::size_t max_queue_bytes,
                   boost::asio::any_io_executor strand, std::shared_ptr<TailTotals> totals);
  ~TailSubscription();
  TailSubscription(const TailSubscription&) = delete;
  TailSubscription& operator=(const TailSubscription&) = delete;

  const Filter& filter() const { return filter_; }
  std::uint64_t since() const { return since_; }

  enum class PushResult { kQueued, kEnded, kOverflowed };
  // Queues `piece` (formatted events, made by MakePiece). kEnded when the
  // subscription had ended already; kOverflowed when this piece ended it
  // (slow client).
  PushResult Push(std::shared_ptr<const std::string> piece);
  // Ends the subscription (the first reason wins).
  void End(EndReason reason);
  bool ended() const;

  // The next piece for the client: everything queued (up to ~256 KiB at a
  // time), else an SSE heartbeat comment after `heartbeat` of silence, else
  // after the end the final message, then "" (the body is complete).
  // Unavailable once cancelled.
  boost::asio::awaitable<Result<std::string>> Next(std::chrono::milliseconds heartbeat);
  // The client is gone: drops the queue and wakes a pending Next.
  void Cancel();

  static std::string_view ReasonName(EndReason reason);
  // A piece whose bytes count in totals->memory_bytes while it lives.
  static std::shared_ptr<const std::string> MakePiece(std::string text,
                                                      const std::shared_ptr<TailTotals>& totals);

 private:
  std::string FinalMessage(EndReason reason) const;
  void WakeLocked();  // REQUIRES: mu_ held

  // Constant after construction.
  const Filter filter_;
  const std::uint64_t since_;
  const std::size_t max_queue_bytes_;
  const boost::asio::any_io_executor strand_;
  const std::shared_ptr<TailTotals> totals_;

  mutable std::mutex mu_;
  std::deque<std::shared_ptr<const std::string>> queue_;  // guarded by mu_
  std::size_t queued_bytes_ = 0;                          // guarded by mu_
  std::optional<EndReason> end_;                          // guarded by mu_
  bool cancelled_ = false;                                // guarded by mu_
  bool waiting_ = false;  // guarded by mu_: Next is parked on timer_

  // On the strand only.
  boost::asio::steady_timer timer_;
  bool final_sent_ = false;
};

}  // namespace dashcam::api
