// Unit tests of server/failure_limiter.h: the bucket empties after `burst`
// failures, refills with time, counts IPv6 by /64, and stays bounded.
#include "server/failure_limiter.h"

#include <gtest/gtest.h>

namespace dashcam::server {
namespace {

using namespace std::chrono_literals;
namespace ip = boost::asio::ip;

TEST(FailureLimiterTest, BurstThenRefill) {
  FailureLimiter limiter({.burst = 3, .refill = 10'000ms, .max_addresses = 100});
  const auto a = ip::make_address("192.0.2.1");
  const auto b = ip::make_address("192.0.2.2");
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 3; ++i) {
    EXPECT_FALSE(limiter.Blocked(a, t0).has_value());
    limiter.RecordFailure(a, t0);
  }
  auto wait = limiter.Blocked(a, t0);
  ASSERT_TRUE(wait.has_value());
  EXPECT_EQ(*wait, 10s);
  EXPECT_FALSE(limiter.Blocked(b, t0).has_value());  // per address
  EXPECT_EQ(*limiter.Blocked(a, t0 + 4s), 6s);
  EXPECT_FALSE(limiter.Blocked(a, t0 + 10s).has_value());  // one token back
  limiter.RecordFailure(a, t0 + 10s);
  EXPECT_TRUE(limiter.Blocked(a, t0 + 10s).has_value());
}

TEST(FailureLimiterTest, Ipv6CountsBySlash64AndMappedV4AsV4) {
  FailureLimiter limiter({.burst = 1, .refill = 60'000ms, .max_addresses = 100});
  const auto t0 = std::chrono::steady_clock::now();
  limiter.RecordFailure(ip::make_address("2001:db8:1:2::1"), t0);
  EXPECT_TRUE(limiter.Blocked(ip::make_address("2001:db8:1:2:ffff::9"), t0).has_value());
  EXPECT_FALSE(limiter.Blocked(ip::make_address("2001:db8:1:3::1"), t0).has_value());
  limiter.RecordFailure(ip::make_address("::ffff:198.51.100.7"), t0);
  EXPECT_TRUE(limiter.Blocked(ip::make_address("198.51.100.7"), t0).has_value());
}

TEST(FailureLimiterTest, MemoryIsBounded) {
  FailureLimiter limiter({.burst = 2, .refill = 60'000ms, .max_addresses = 50});
  const auto t0 = std::chrono::steady_clock::now();
  for (unsigned i = 0; i < 10'000; ++i) {
    const ip::address_v4 a(0x0a000000u + i);
    limiter.RecordFailure(a, t0);
  }
  EXPECT_LE(limiter.tracked(), 50u);
  // Past the bound, new addresses share one bucket: it is empty by now.
  EXPECT_TRUE(limiter.Blocked(ip::make_address("203.0.113.5"), t0).has_value());
  // Once buckets have refilled they are dropped and addresses counted apart.
  limiter.RecordFailure(ip::make_address("203.0.113.6"), t0 + 1h);
  EXPECT_LE(limiter.tracked(), 50u);
  EXPECT_FALSE(limiter.Blocked(ip::make_address("203.0.113.6"), t0 + 1h).has_value());
}

}  // namespace
}  // namespace dashcam::server
