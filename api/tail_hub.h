// TailHub: live tail. It observes the store's commits (EventStore::
// SetCommitObserver) and hands each subscription the newly committed events
// that match its query.
//
// How: the writer reports the keys of every commit; the hub collects them and,
// at most every `batch_delay`, runs one dispatch on the worker pool. A
// dispatch evaluates each distinct query text once, whatever the number of
// subscribers asking it: one scan of only the key ranges the new keys span
// (EventStore::Scan with ScanRequest::ranges, cut where keys are more than a
// second of event time apart) keeps the events whose keys are new, so
// nothing is re-queried and late events (old timestamps) are found too.
// Each matching event is formatted once per (format, time filter) and the
// same piece is queued to every subscriber sharing them. Events reach a client in commit order (by
// time within a commit), normally within batch_delay plus the scan of a
// commit's worth of events of their commit.
//
// Bounds: per-client queues (TailSubscription), the memory of all queues
// together (TailTotals), `max_tails` subscriptions (more are refused), and
// `max_pending_keys` committed keys waiting for a dispatch: a hub that falls
// that far behind ingestion ends every tail (reason "lagging") rather than
// grow. With no subscribers a commit costs one atomic load.
//
// Thread-safety: all public methods may be called from any thread. The hub
// must outlive its subscriptions' use of it, and must be destroyed before the
// store (it removes its observer).
#pragma once

#include <chrono>
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>

#include "api/tail_subscription.h"
#include "storage/event_store.h"
#include "storage/log.h"
#include "storage/metrics.h"

namespace dashcam::api {

struct TailOptions {
  // Events queued per client, at most. Each dispatch queues a burst (up to
  // batch_delay's worth of matching events, in pieces of about 64 KiB) that a
  // client that keeps up writes out before the next one; the bound must hold
  // a few bursts at the ingest rate (~4 MB per 100 ms at 35k events/s for a
  // tail of everything). REQUIRES: >= 256 KiB. Default: 4 MiB.
  std::size_t queue_bytes = 4u << 20;
  std::size_t max_tails = 1000;  // concurrent subscriptions
  std::size_t max_pending_keys = 500'000;
  std::chrono::milliseconds batch_delay{100};       // commits gathered into a dispatch
  std::chrono::milliseconds query_timeout{10'000};  // per scan page
};

class TailHub {
 public:
  TailHub(storage::EventStore& store, boost::asio::any_io_executor workers, const Log& log,
          Metrics& metrics, TailOptions options);
  ~TailHub();
  TailHub(const TailHub&) = delete;
  TailHub& operator=(const TailHub&) = delete;

  // A new subscription whose Next runs on `strand`. Overloaded when max_tails
  // are connected.
  Result<std::shared_ptr<TailSubscription>> Subscribe(TailSubscription::Filter filter,
                                                      boost::asio::any_io_executor strand);

  std::size_t subscribers() const { return totals_->subscribers.load(); }
  std::size_t queued_bytes() const { return totals_->queued_bytes.load(); }
  std::size_t memory_bytes() const { return totals_->memory_bytes.load(); }

 private:
  // One commit's keys, numbered in commit order.
  struct Notice {
    std::uint64_t seq = 0;
    std::vector<storage::EventKey> keys;
  };
  // A dispatch's new keys, ascending, each with its commit's seq. Keys
  // order events by time, so those of different days never meet.
  using NewKeys = std::vector<std::pair<storage::EventKey, std::uint64_t>>;
  struct Audience;  // subscribers of one query sharing a format and filters

  void OnCommit(const storage::CommitNotice& notice);
  void ScheduleLocked();  // REQUIRES: mu_ held
  void Dispatch();
  // The ranges of `keys` to scan (see Dispatch).
  std::vector<storage::KeyRange> RangesOf(const NewKeys& keys) const;
  // Scans `ranges` for `query`, keeps the events of `keys` and queues the
  // matches to `subs`.
  Status Deliver(const query::Node& query, const NewKeys& keys,
                 std::span<const storage::KeyRange> ranges, std::uint64_t first_seq,
                 const std::vector<std::shared_ptr<TailSubscription>>& subs);
  void Flush(Audience& audience);
  void Dropped(const TailSubscription& sub, TailSubscription::EndReason reason);

  // Constant after construction.
  storage::EventStore& store_;
  const boost::asio::any_io_executor workers_;
  const Log& log_;
  const TailOptions options_;
  const std::shared_ptr<TailTotals> totals_;
  Metrics& metrics_;
  Counter& connections_total_;
  Counter& events_total_;
  Counter& dispatches_total_;
  Counter& dispatch_us_total_;

  mutable std::mutex mu_;
  std::vector<std::weak_ptr<TailSubscription>> subs_;  // guarded by mu_
  std::vector<Notice> pending_;                        // guarded by mu_
  std::size_t pending_keys_ = 0;                       // guarded by mu_
  std::uint64_t commit_seq_ = 0;                       // guarded by mu_: last Notice::seq
  bool overflowed_ = false;                            // guarded by mu_
  bool scheduled_ = false;           // guarded by mu_: a dispatch is due or running
  boost::asio::steady_timer timer_;  // used under mu_ only
};

}  // namespace dashcam::api
