// The wall clock as an RFC 3339 UTC timestamp with milliseconds
// ("2026-11-30T08:01:02.345Z"), for the @timestamp of test events.
#pragma once

#include <chrono>
#include <cstdio>
#include <ctime>
#include <string>

namespace dashcam::testing {

inline std::string NowRfc3339() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&t, &tm);
  char date[40];
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%S", &tm);
  char out[48];
  std::snprintf(out, sizeof out, "%s.%03dZ", date, static_cast<int>(ms));
  return out;
}

}  // namespace dashcam::testing
