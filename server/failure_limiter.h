// FailureLimiter: rate-limits failed authentication per client address, so
// that keys cannot be guessed quickly (and PBKDF2's cost cannot be spent
// freely). Each address has a token bucket: `burst` failures at once, then
// one more per `refill`. An address with no token left is refused (429 with
// Retry-After) before its credentials are checked, except that credentials
// already verified recently (cached) still pass: a legitimate client behind
// the same NAT is not locked out by a neighbour.
//
// IPv4 addresses are counted one by one, IPv6 ones by /64 (one host usually
// has a whole /64 to rotate through). Memory is bounded: at most
// `max_addresses` buckets; when full, buckets that have refilled (the same
// as no bucket) are dropped, and if none has, new addresses share one
// overflow bucket.
//
// Thread-safety: all methods may be called from any thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include <boost/asio/ip/address.hpp>

namespace dashcam::server {

struct FailureLimiterOptions {
  unsigned burst = 10;                      // failures allowed at once. REQUIRES: >= 1
  std::chrono::milliseconds refill{6'000};  // one more failure allowed per this
  std::size_t max_addresses = 10'000;
};

class FailureLimiter {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;
  explicit FailureLimiter(FailureLimiterOptions options) : options_(options) {}

  // nullopt when `addr` may try now; else how long until it may (>= 1 s).
  std::optional<std::chrono::seconds> Blocked(const boost::asio::ip::address& addr, TimePoint now);
  // Takes a token from `addr`'s bucket.
  void RecordFailure(const boost::asio::ip::address& addr, TimePoint now);
  // Blocked and RecordFailure in one step: nullopt and a token taken when
  // `addr` may try now; else how long until it may, and nothing taken.
  std::optional<std::chrono::seconds> Charge(const boost::asio::ip::address& addr, TimePoint now);
  // Gives back what Charge took, for an attempt that turned out right.
  void Refund(const boost::asio::ip::address& addr);

  std::size_t tracked() const;

 private:
  struct Bucket {
    double tokens = 0;
    TimePoint updated;
  };
  static std::string KeyOf(const boost::asio::ip::address& addr);
  void Refill(Bucket& b, TimePoint now) const;
  std::chrono::seconds WaitFor(const Bucket& b) const;       // REQUIRES: b.tokens < 1
  Bucket& BucketFor(const std::string& key, TimePoint now);  // REQUIRES: mu_ held

  const FailureLimiterOptions options_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, Bucket> buckets_;  // guarded by mu_
  Bucket overflow_;                                  // guarded by mu_
  bool overflow_init_ = false;                       // guarded by mu_
};

}  // namespace dashcam::server
