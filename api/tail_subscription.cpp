#include "api/tail_subscription.h"

#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "api/json_writer.h"

namespace dashcam::api {

namespace {
// A piece for one write: big enough to carry a burst in one chunk, small
// enough that a write finishes quickly.
constexpr std::size_t kMaxPieceBytes = 256u << 10;
}  // namespace

TailSubscription::TailSubscription(Filter filter, std::uint64_t since, std::size_t max_queue_bytes,
                                   boost::asio::any_io_executor strand,
                                   std::shared_ptr<TailTotals> totals)
    : filter_(std::move(filter)),
      since_(since),
      max_queue_bytes_(max_queue_bytes),
      strand_(strand),
      totals_(std::move(totals)),
      timer_(strand) {
  ++totals_->subscribers;
}

TailSubscription::~TailSubscription() {
  totals_->queued_bytes -= queued_bytes_;
  --totals_->subscribers;
}

std::string_view TailSubscription::ReasonName(EndReason reason) {
  switch (reason) {
    case EndReason::kSlowClient:
      return "slow_client";
    case EndReason::kShutdown:
      return "shutdown";
    case EndReason::kLagging:
      return "lagging";
    case EndReason::kError:
      return "error";
  }
  return "error";
}

TailSubscription::PushResult TailSubscription::Push(std::shared_ptr<const std::string> piece) {
  std::lock_guard lock(mu_);
  if (end_ || cancelled_) return PushResult::kEnded;
  const std::size_t n = piece->size();
  if (queued_bytes_ + n > max_queue_bytes_ ||
      (queued_bytes_ > 0 && totals_->memory_bytes.load() > totals_->max_memory_bytes)) {
    // The backlog goes at once: a client that fell this far behind gets only
    // the final message.
    totals_->queued_bytes -= queued_bytes_;
    queued_bytes_ = 0;
    queue_.clear();
    end_ = EndReason::kSlowClient;
    WakeLocked();
    return PushResult::kOverflowed;
  }
  queue_.push_back(std::move(piece));
  queued_bytes_ += n;
  totals_->queued_bytes += n;
  WakeLocked();
  return PushResult::kQueued;
}

void TailSubscription::End(EndReason reason) {
  std::lock_guard lock(mu_);
  if (end_) return;
  end_ = reason;
  WakeLocked();
}

std::shared_ptr<const std::string> TailSubscription::MakePiece(
    std::string text, const std::shared_ptr<TailTotals>& totals) {
  totals->memory_bytes += text.size();
  return std::shared_ptr<const std::string>(new std::string(std::move(text)),
                                            [totals](const std::string* p) {
                                              totals->memory_bytes -= p->size();
                                              delete p;
                                            });
}

bool TailSubscription::ended() const {
  std::lock_guard lock(mu_);
  return end_.has_value() || cancelled_;
}

void TailSubscription::WakeLocked() {
  if (!waiting_) return;
  waiting_ = false;  // one wake per wait is enough
  boost::asio::post(strand_, [self = shared_from_this()] { self->timer_.cancel(); });
}

void TailSubscription::Cancel() {
  {
    std::lock_guard lock(mu_);
    cancelled_ = true;
    totals_->queued_bytes -= queued_bytes_;
    queued_bytes_ = 0;
    queue_.clear();
    waiting_ = false;
  }
  timer_.cancel();
}

std::string TailSubscription::FinalMessage(EndReason reason) const {
  const std::string_view name = ReasonName(reason);
  if (filter_.format == EventFormat::kText) {
    return "-- tail ended: " + std::string(name) + " --\n";
  }
  JsonWriter w;
  w.BeginObject().Key("reason").String(name).EndObject();
  return "event: end\ndata: " + w.Release() + "\n\n";
}

boost::asio::awaitable<Result<std::string>> TailSubscription::Next(
    std::chrono::milliseconds heartbeat) {
  for (;;) {
    std::string out;
    {
      std::lock_guard lock(mu_);
      if (cancelled_) co_return Status::Unavailable("tail cancelled");
      std::size_t taken = 0;
      while (!queue_.empty() && out.size() < kMaxPieceBytes) {
        out += *queue_.front();
        taken += queue_.front()->size();
        queue_.pop_front();
      }
      queued_bytes_ -= taken;
      totals_->queued_bytes -= taken;
      if (out.empty() && end_) {
        if (final_sent_) co_return std::string();
        final_sent_ = true;
        out = FinalMessage(*end_);
      }
      if (out.empty()) waiting_ = true;
    }
    if (!out.empty()) co_return out;
    // Woken early (timer cancelled) by a push, an end or a cancel; on expiry,
    // a heartbeat keeps an idle SSE connection (and proxies) alive.
    timer_.expires_after(heartbeat);
    boost::system::error_code ec;
    co_await timer_.async_wait(boost::asio::redirect_error(boost::asio::use_awaitable, ec));
    if (!ec && filter_.format == EventFormat::kSse) {
      std::lock_guard lock(mu_);
      waiting_ = false;
      if (queue_.empty() && !end_ && !cancelled_) co_return std::string(": heartbeat\n\n");
    }
  }
}

}  // namespace dashcam::api
