#include "api/tail_hub.h"

#include <algorithm>
#include <string_view>
#include <tuple>

namespace dashcam::api {
namespace {

constexpr std::size_t kScanPageEvents = 500;
// Formatted events are queued in pieces of about this size, so that a client
// that keeps up never holds more than a few pieces (see --tail-queue-bytes).
constexpr std::size_t kTailPieceBytes = 64u << 10;

std::string_view Truncated(std::string_view s) {
  return s.substr(0, 200);
}

}  // namespace

struct TailHub::Audience {
  EventFormat format;
  TimeMs from, to;
  std::uint64_t since;  // deliver events of commits after this seq
  EventFormatter formatter;
  std::string text;  // formatted, not yet queued
  std::uint64_t events = 0;
  std::vector<std::shared_ptr<TailSubscription>> subs;  // null once ended
};

TailHub::TailHub(storage::EventStore& store, boost::asio::any_io_executor workers, const Log& log,
                 Metrics& metrics, TailOptions options)
    : store_(store),
      workers_(workers),
      log_(log),
      options_(options),
      totals_(std::make_shared<TailTotals>()),
      metrics_(metrics),
      connections_total_(
          metrics.GetCounter("dashcam_tail_connections_total", "Live tail subscriptions opened.")),
      events_total_(metrics.GetCounter("dashcam_tail_events_total",
                                       "Events queued to live tail clients (per client).")),
      dispatches_total_(metrics.GetCounter("dashcam_tail_dispatches_total",
                                           "Checks of newly committed events against tails.")),
      dispatch_us_total_(metrics.GetCounter(
          "dashcam_tail_dispatch_microseconds_total",
          "Wall time spent checking newly committed events against tails and queueing them.")),
      timer_(workers) {
  store_.SetCommitObserver([this](const storage::CommitNotice& n) { OnCommit(n); });
}

TailHub::~TailHub() {
  store_.SetCommitObserver(nullptr);
  std::lock_guard lock(mu_);
  timer_.cancel();
}

Result<std::shared_ptr<TailSubscription>> TailHub::Subscribe(TailSubscription::Filter filter,
                                                             boost::asio::any_io_executor strand) {
  std::lock_guard lock(mu_);
  if (totals_->subscribers.load() >= options_.max_tails) {
    return Status::Overloaded("too many live tails are connected");
  }
  auto sub = std::make_shared<TailSubscription>(std::move(filter), commit_seq_,
                                                options_.queue_bytes, strand, totals_);
  std::erase_if(subs_, [](const std::weak_ptr<TailSubscription>& w) { return w.expired(); });
  subs_.push_back(sub);
  connections_total_.Add();
  return sub;
}

void TailHub::OnCommit(const storage::CommitNotice& notice) {
  if (totals_->subscribers.load() == 0) return;
  std::lock_guard lock(mu_);
  if (overflowed_) return;
  if (pending_keys_ + notice.keys.size() > options_.max_pending_keys) {
    overflowed_ = true;
    pending_.clear();
    pending_keys_ = 0;
  } else {
    pending_.push_back(Notice{++commit_seq_, {notice.keys.begin(), notice.keys.end()}});
    pending_keys_ += notice.keys.size();
  }
  ScheduleLocked();
}

void TailHub::ScheduleLocked() {
  if (scheduled_) return;
  scheduled_ = true;
  timer_.expires_after(options_.batch_delay);
  timer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) Dispatch();
  });
}

void TailHub::Dispatch() {
  const auto start = storage::Clock::now();
  std::vector<Notice> batch;
  bool overflowed = false;
  std::vector<std::shared_ptr<TailSubscription>> subs;
  {
    std::lock_guard lock(mu_);
    batch.swap(pending_);
    pending_keys_ = 0;
    overflowed = std::exchange(overflowed_, false);
    std::erase_if(subs_, [](const std::weak_ptr<TailSubscription>& w) { return w.expired(); });
    for (const auto& w : subs_) {
      if (auto s = w.lock(); s && !s->ended()) subs.push_back(std::move(s));
    }
  }
  dispatches_total_.Add();
  if (overflowed) {
    log_.Warn("tail_lagging",
              {{"tails", static_cast<std::uint64_t>(subs.size())},
               {"max_pending_keys", static_cast<std::uint64_t>(options_.max_pending_keys)}});
    for (const auto& s : subs) {
      s->End(TailSubscription::EndReason::kLagging);
      Dropped(*s, TailSubscription::EndReason::kLagging);
    }
  } else if (!batch.empty() && !subs.empty()) {
    NewKeys keys;
    for (const Notice& n : batch) {
      for (storage::EventKey k : n.keys) keys.emplace_back(k, n.seq);
    }
    std::sort(keys.begin(), keys.end());
    const std::vector<storage::KeyRange> ranges = RangesOf(keys);
    // One evaluation per distinct query (TailSubscription::Filter::share_key).
    std::map<std::string_view, std::vector<std::shared_ptr<TailSubscription>>> by_query;
    for (const auto& s : subs) by_query[s->filter().share_key].push_back(s);
    for (const auto& [key, group] : by_query) {
      const std::string& q = group.front()->filter().q;
      Status s = Deliver(group.front()->filter().query, keys, ranges, batch.front().seq, group);
      if (s.ok()) continue;
      log_.Error("tail_failed", {{"q", Truncated(q)}, {"error", s.ToString()}});
      for (const auto& sub : group) {
        sub->End(TailSubscription::EndReason::kError);
        Dropped(*sub, TailSubscription::EndReason::kError);
      }
    }
  }
  dispatch_us_total_.Add(static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(storage::Clock::now() - start)
          .count()));
  std::lock_guard lock(mu_);
  scheduled_ = false;
  if (!pending_.empty() || overflowed_) ScheduleLocked();
}

// New keys further apart than the store's gap are scanned as separate
// ranges, so that a late event does not make a dispatch scan every event
// between it and the present; all of them in one scan, so that a dispatch of
// sparse keys (a backfill) does not compile the query once per key.
std::vector<storage::KeyRange> TailHub::RangesOf(const NewKeys& keys) const {
  std::vector<storage::KeyRange> ranges;
  for (const auto& [key, seq] : keys) {
    if (ranges.empty() || key - ranges.back().hi > store_.ScanGap()) {
      ranges.push_back({key, key});
    } else {
      ranges.back().hi = key;
    }
  }
  return ranges;
}

Status TailHub::Deliver(const query::Node& query, const NewKeys& keys,
                        std::span<const storage::KeyRange> ranges, std::uint64_t first_seq,
                        const std::vector<std::shared_ptr<TailSubscription>>& subs) {
  std::vector<Audience> audiences;
  for (const auto& s : subs) {
    const auto& f = s->filter();
    // A subscription older than the batch sees all of it.
    const std::uint64_t since = std::max(s->since(), first_seq - 1);
    auto same = [&](const Audience& a) {
      return std::tie(a.format, a.from, a.to, a.since) == std::tie(f.format, f.from, f.to, since);
    };
    auto it = std::find_if(audiences.begin(), audiences.end(), same);
    if (it == audiences.end()) {
      audiences.push_back(
          Audience{f.format, f.from, f.to, since, EventFormatter(f.format, {}), {}, 0, {}});
      it = std::prev(audiences.end());
    }
    it->subs.push_back(s);
  }
  if (ranges.empty()) return Status::Ok();
  storage::ScanRequest req;
  req.query = &query;
  req.ascending = true;
  req.limit = kScanPageEvents;
  req.lo = ranges.front().lo;
  req.hi = ranges.back().hi;
  req.ranges = ranges;
  for (bool more = true; more;) {
    req.deadline = storage::Clock::now() + options_.query_timeout;
    auto page = store_.Scan(req);
    if (!page.ok()) return page.status();
    for (const storage::StoredEvent& ev : page->events) {
      auto at =
          std::lower_bound(keys.begin(), keys.end(), std::make_pair(ev.key, std::uint64_t{0}));
      if (at == keys.end() || at->first != ev.key) continue;  // not new
      for (Audience& a : audiences) {
        if (at->second > a.since && ev.ts_ms >= a.from && ev.ts_ms < a.to) {
          a.formatter.Append(ev, a.text);
          ++a.events;
          if (a.text.size() >= kTailPieceBytes) Flush(a);
        }
      }
    }
    for (Audience& a : audiences) Flush(a);
    more = page->more;
    if (more) req.lo = page->events.back().key + 1;
  }
  return Status::Ok();
}

// Queues an audience's formatted events, one shared piece for all of its
// subscribers.
void TailHub::Flush(Audience& a) {
  if (a.text.empty()) return;
  auto piece = TailSubscription::MakePiece(std::move(a.text), totals_);
  a.text.clear();
  for (auto& sub : a.subs) {
    if (!sub) continue;
    switch (sub->Push(piece)) {
      case TailSubscription::PushResult::kQueued:
        events_total_.Add(a.events);
        break;
      case TailSubscription::PushResult::kOverflowed:
        Dropped(*sub, TailSubscription::EndReason::kSlowClient);
        sub.reset();
        break;
      case TailSubscription::PushResult::kEnded:
        sub.reset();
        break;
    }
  }
  a.events = 0;
}

void TailHub::Dropped(const TailSubscription& sub, TailSubscription::EndReason reason) {
  const std::string_view name = TailSubscription::ReasonName(reason);
  metrics_
      .GetCounter("dashcam_tail_dropped_total",
                  "Live tails ended by the server (slow_client, lagging, error).",
                  "reason=\"" + std::string(name) + "\"")
      .Add();
  if (reason == TailSubscription::EndReason::kSlowClient) {
    log_.Warn("tail_dropped", {{"reason", name},
                               {"q", Truncated(sub.filter().q)},
                               {"queue_bytes", static_cast<std::uint64_t>(options_.queue_bytes)}});
  }
}

}  // namespace dashcam::api
