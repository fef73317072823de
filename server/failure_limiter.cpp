#include "server/failure_limiter.h"

#include <algorithm>
#include <cmath>

namespace dashcam::server {

std::string FailureLimiter::KeyOf(const boost::asio::ip::address& addr) {
  if (addr.is_v6() && !addr.to_v6().is_v4_mapped()) {
    const auto bytes = addr.to_v6().to_bytes();
    return std::string(reinterpret_cast<const char*>(bytes.data()), 8);  // the /64
  }
  const auto v4 = addr.is_v4()
                      ? addr.to_v4()
                      : boost::asio::ip::make_address_v4(boost::asio::ip::v4_mapped, addr.to_v6());
  const auto bytes = v4.to_bytes();
  return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

void FailureLimiter::Refill(Bucket& b, TimePoint now) const {
  if (now <= b.updated) return;
  const double elapsed = std::chrono::duration<double, std::milli>(now - b.updated).count();
  b.tokens = std::min<double>(options_.burst,
                              b.tokens + elapsed / static_cast<double>(options_.refill.count()));
  b.updated = now;
}

FailureLimiter::Bucket& FailureLimiter::BucketFor(const std::string& key, TimePoint now) {
  if (auto it = buckets_.find(key); it != buckets_.end()) return it->second;
  if (buckets_.size() >= options_.max_addresses) {
    for (auto it = buckets_.begin(); it != buckets_.end();) {
      Refill(it->second, now);
      it = it->second.tokens >= options_.burst ? buckets_.erase(it) : std::next(it);
    }
  }
  if (buckets_.size() >= options_.max_addresses) {
    if (!overflow_init_) overflow_ = Bucket{static_cast<double>(options_.burst), now};
    overflow_init_ = true;
    return overflow_;
  }
  return buckets_.emplace(key, Bucket{static_cast<double>(options_.burst), now}).first->second;
}

std::optional<std::chrono::seconds> FailureLimiter::Blocked(const boost::asio::ip::address& addr,
                                                            TimePoint now) {
  std::lock_guard lock(mu_);
  auto it = buckets_.find(KeyOf(addr));
  Bucket* b = it != buckets_.end()                                          ? &it->second
              : buckets_.size() >= options_.max_addresses && overflow_init_ ? &overflow_
                                                                            : nullptr;
  if (b == nullptr) return std::nullopt;
  Refill(*b, now);
  if (b->tokens >= 1) return std::nullopt;
  return WaitFor(*b);
}

std::chrono::seconds FailureLimiter::WaitFor(const Bucket& b) const {
  const double ms = (1 - b.tokens) * static_cast<double>(options_.refill.count());
  return std::chrono::seconds(std::max<long long>(1, static_cast<long long>(std::ceil(ms / 1000))));
}

std::optional<std::chrono::seconds> FailureLimiter::Charge(const boost::asio::ip::address& addr,
                                                           TimePoint now) {
  std::lock_guard lock(mu_);
  Bucket& b = BucketFor(KeyOf(addr), now);
  Refill(b, now);
  if (b.tokens < 1) return WaitFor(b);
  b.tokens -= 1;
  return std::nullopt;
}

void FailureLimiter::RecordFailure(const boost::asio::ip::address& addr, TimePoint now) {
  std::lock_guard lock(mu_);
  Bucket& b = BucketFor(KeyOf(addr), now);
  Refill(b, now);
  b.tokens = std::max(0.0, b.tokens - 1);
}

void FailureLimiter::Refund(const boost::asio::ip::address& addr) {
  std::lock_guard lock(mu_);
  auto it = buckets_.find(KeyOf(addr));
  Bucket* b = it != buckets_.end() ? &it->second : overflow_init_ ? &overflow_ : nullptr;
  if (b != nullptr) b->tokens = std::min(static_cast<double>(options_.burst), b->tokens + 1);
}

std::size_t FailureLimiter::tracked() const {
  std::lock_guard lock(mu_);
  return buckets_.size();
}

}  // namespace dashcam::server
