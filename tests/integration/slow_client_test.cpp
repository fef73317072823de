// Slow clients (issue 6, section 4): connections that trickle their headers
// (slowloris) are closed at the read deadline, and a thousand idle
// connections cost neither the server's threads (a fresh request is answered
// promptly) nor much of its memory (RSS growth measured and printed).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/common/http_client.h"
#include "tests/common/test_server.h"

namespace dashcam::testing::slow_client_test {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// A connected loopback TCP socket; -1 on failure.
int Connect(std::uint16_t port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// Whether the peer has closed `fd` (EOF or reset); drains anything it sent
// first (a 408, say).
bool PeerClosed(int fd) {
  pollfd p{fd, POLLIN, 0};
  if (poll(&p, 1, 0) <= 0) return false;
  char buf[4096];
  const ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
  return n <= 0;
}

// The value of an unlabelled metric in /metrics; -1 if absent.
long Metric(std::uint16_t port, const std::string& name) {
  HttpClient http("127.0.0.1", port);
  const HttpResult res = http.Get("/metrics");
  const std::string prefix = "\n" + name + " ";
  const auto at = res.body.find(prefix);
  if (res.status != 200 || at == std::string::npos) return -1;
  return std::strtol(res.body.c_str() + at + prefix.size(), nullptr, 10);
}

TEST(SlowClientTest, TrickledHeadersAreCutOffAtTheReadTimeout) {
  constexpr int kReadTimeoutS = 2;
  constexpr int kConnections = 20;
  TempDir dir;
  TestServer server(dir.path() + "/data", {"--read-timeout-s", std::to_string(kReadTimeoutS)});
  ASSERT_TRUE(server.Start()) << server.error();

  std::vector<int> fds;
  for (int i = 0; i < kConnections; ++i) {
    const int fd = Connect(server.port());
    ASSERT_GE(fd, 0);
    fds.push_back(fd);
  }
  // Headers that never end: one byte per connection every 500 ms, for up to
  // 12 s, far past the 2 s deadline unless the server cuts it short.
  const std::string header =
      "GET /api/v1/status HTTP/1.1\r\nHost: localhost\r\nX-Trickle: " + std::string(64, 'a');
  const auto start = Clock::now();
  std::vector<double> closed_after(fds.size(), -1);
  std::size_t open = fds.size();
  for (std::size_t byte = 0; byte < header.size() && open > 0; ++byte) {
    for (std::size_t i = 0; i < fds.size(); ++i) {
      if (closed_after[i] >= 0) continue;
      if (PeerClosed(fds[i]) || send(fds[i], &header[byte], 1, MSG_NOSIGNAL) != 1) {
        closed_after[i] = std::chrono::duration<double>(Clock::now() - start).count();
        --open;
      }
    }
    std::this_thread::sleep_for(milliseconds(500));
  }
  for (int fd : fds) close(fd);

  const double first = *std::min_element(closed_after.begin(), closed_after.end());
  const double last = *std::max_element(closed_after.begin(), closed_after.end());
  std::printf(
      "slowloris: %d connections trickling 1 byte/500 ms, --read-timeout-s %d: "
      "%zu still open after the trickle, closed after %.1f-%.1f s\n",
      kConnections, kReadTimeoutS, open, first, last);
  EXPECT_EQ(open, 0u) << "the server let a trickling client keep its connection";
  EXPECT_GE(first, kReadTimeoutS - 0.6) << "closed before the deadline: not the timeout";
  // Detected at the next 500 ms tick after the deadline; slack for ASan.
  EXPECT_LE(last, kReadTimeoutS + 2.5);

  HttpClient http("127.0.0.1", server.port());
  EXPECT_EQ(http.Get("/healthz").status, 200);
  EXPECT_EQ(server.Stop(), 0);
}

TEST(SlowClientTest, ThousandIdleConnectionsCostNeitherThreadsNorMuchMemory) {
  // Both this process and the server (which inherits the limit) hold one
  // descriptor per connection: raise the soft limit as far as allowed.
  rlimit lim{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &lim), 0);
  const rlim_t want = std::min<rlim_t>(lim.rlim_max, 4096);
  if (lim.rlim_cur < want) {
    lim.rlim_cur = want;
    setrlimit(RLIMIT_NOFILE, &lim);
    getrlimit(RLIMIT_NOFILE, &lim);
  }
  // Leave room for the server's partitions, logs and listeners.
  const int connections = static_cast<int>(std::min<rlim_t>(1000, lim.rlim_cur - 128));
  ASSERT_GE(connections, 100) << "ulimit -n is " << lim.rlim_cur;

  TempDir dir;
  TestServer server(dir.path() + "/data");
  ASSERT_TRUE(server.Start()) << server.error();
  HttpClient http("127.0.0.1", server.port());
  ASSERT_EQ(http.Post("/_bulk", "{\"create\":{}}\n{\"message\":\"idle connections probe\"}\n",
                      {{"Content-Type", "application/x-ndjson"}})
                .status,
            200);
  ASSERT_EQ(http.Get("/api/v1/search?q=probe").status, 200);
  const auto rss_before = server.RssBytes();
  ASSERT_TRUE(rss_before);
  const long active_before = Metric(server.port(), "dashcam_http_active_connections");

  std::vector<int> fds;
  for (int i = 0; i < connections; ++i) {
    const int fd = Connect(server.port());
    ASSERT_GE(fd, 0) << "connection " << i << ": " << std::strerror(errno);
    fds.push_back(fd);
  }
  // Until the server has accepted them all (the metric counts sessions).
  long active = 0;
  const auto deadline = Clock::now() + std::chrono::seconds(20);
  while (Clock::now() < deadline) {
    active = Metric(server.port(), "dashcam_http_active_connections");
    if (active >= active_before + connections) break;
    std::this_thread::sleep_for(milliseconds(50));
  }
  EXPECT_GE(active, active_before + connections);

  HttpClient fresh("127.0.0.1", server.port());
  const auto t0 = Clock::now();
  const HttpResult res = fresh.Get("/api/v1/search?q=probe");
  const double latency_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  EXPECT_EQ(res.status, 200) << res.error << res.body;
  EXPECT_NE(res.body.find("idle connections probe"), std::string::npos) << res.body;
  const auto rss_after = server.RssBytes();
  ASSERT_TRUE(rss_after);
  const double growth_mib =
      (static_cast<double>(*rss_after) - static_cast<double>(*rss_before)) / (1 << 20);
  std::printf(
      "idle connections: %d open (ulimit -n %llu), %ld sessions; a search on a fresh "
      "connection took %.1f ms; server RSS %.1f -> %.1f MiB (%+.1f MiB, %.1f KiB per "
      "connection)\n",
      connections, static_cast<unsigned long long>(lim.rlim_cur), active, latency_ms,
      static_cast<double>(*rss_before) / (1 << 20), static_cast<double>(*rss_after) / (1 << 20),
      growth_mib, growth_mib * 1024 / connections);
  // Served at all is the point (no thread is tied to an idle connection);
  // the bound only tells "hung" from "slow" on a loaded machine, and the
  // latency itself is printed above.
  EXPECT_LT(latency_ms, 30'000);
  EXPECT_LT(growth_mib, 64);

  for (int fd : fds) close(fd);
  // The server notices the closes and forgets the sessions. Judged on the
  // polled value: each probe is a connection of its own, and one more probe
  // after the loop could count the previous probe's not yet reaped close.
  const auto drained = Clock::now() + std::chrono::seconds(20);
  long left = 0;
  while (true) {
    left = Metric(server.port(), "dashcam_http_active_connections");
    if (left <= active_before + 1 || Clock::now() >= drained) break;
    std::this_thread::sleep_for(milliseconds(50));
  }
  EXPECT_LE(left, active_before + 1);
  EXPECT_EQ(server.Stop(), 0);
}

}  // namespace
}  // namespace dashcam::testing::slow_client_test
