// A Beats protocol (Lumberjack v2) client written from the spec
// (PROTOCOLS.md section 2), for the integration tests and the benchmark:
// frame builders and a blocking client over a plain TCP socket. Not
// thread-safe: one client per thread.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dashcam::testing {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using std::chrono::seconds;

// --- Frames, from the spec ---------------------------------------------------

inline std::string U32(std::uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8),
          static_cast<char>(v)};
}
inline std::string WindowFrame(std::uint32_t count, char version = '2') {
  return std::string{version, 'W'} + U32(count);
}
inline std::string JsonFrame(std::uint32_t seq, std::string_view json) {
  return "2J" + U32(seq) + U32(static_cast<std::uint32_t>(json.size())) + std::string(json);
}
inline std::string CompressedFrame(std::string_view frames, char version = '2') {
  uLongf size = compressBound(static_cast<uLong>(frames.size()));
  std::string z(size, '\0');
  compress2(reinterpret_cast<Bytef*>(z.data()), &size,
            reinterpret_cast<const Bytef*>(frames.data()), static_cast<uLong>(frames.size()), 3);
  z.resize(size);
  return std::string{version, 'C'} + U32(static_cast<std::uint32_t>(z.size())) + z;
}
inline std::string DataFrame(std::uint32_t seq,
                             const std::vector<std::pair<std::string, std::string>>& kv) {
  std::string out = "1D" + U32(seq) + U32(static_cast<std::uint32_t>(kv.size()));
  for (const auto& [k, v] : kv) {
    out += U32(static_cast<std::uint32_t>(k.size())) + k +
           U32(static_cast<std::uint32_t>(v.size())) + v;
  }
  return out;
}

// --- A blocking client --------------------------------------------------------

struct Ack {
  char version = 0;
  std::uint32_t seq = 0;
};

class BeatsClient {
 public:
  explicit BeatsClient(std::uint16_t port) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) Close();
    const int one = 1;
    if (fd_ >= 0) setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  ~BeatsClient() { Close(); }
  BeatsClient(const BeatsClient&) = delete;
  BeatsClient& operator=(const BeatsClient&) = delete;

  bool connected() const { return fd_ >= 0; }
  void Close() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }

  bool Send(std::string_view bytes) {
    while (!bytes.empty()) {
      const ssize_t n = send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      bytes.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
  }

  // Up to `n` bytes; fewer when the peer closed (sets closed()) or on timeout.
  std::string Read(std::size_t n, milliseconds timeout) {
    std::string out;
    const auto deadline = Clock::now() + timeout;
    while (out.size() < n && !closed_) {
      const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
      if (left.count() <= 0) break;
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
      char buf[4096];
      const ssize_t got = recv(fd_, buf, std::min(sizeof buf, n - out.size()), 0);
      if (got <= 0) {
        closed_ = true;  // EOF or reset
        break;
      }
      out.append(buf, static_cast<std::size_t>(got));
    }
    return out;
  }

  std::optional<Ack> ReadAck(milliseconds timeout) {
    const std::string b = Read(6, timeout);
    if (b.size() < 6 || b[1] != 'A') return std::nullopt;
    const auto u = [&](int i) {
      return static_cast<std::uint32_t>(static_cast<unsigned char>(b[i]));
    };
    return Ack{b[0], u(2) << 24 | u(3) << 16 | u(4) << 8 | u(5)};
  }

  // The next ACK that is not a keepalive (seq 0); counts the keepalives.
  std::optional<Ack> ReadFinalAck(milliseconds timeout, int* keepalives = nullptr) {
    const auto deadline = Clock::now() + timeout;
    while (Clock::now() < deadline) {
      auto ack = ReadAck(std::chrono::duration_cast<milliseconds>(deadline - Clock::now()));
      if (!ack || ack->seq != 0) return ack;
      if (keepalives) ++*keepalives;
    }
    return std::nullopt;
  }

  // Waits for the server to close; false on timeout, or when an ACK other
  // than a keepalive arrives meanwhile.
  bool WaitClosed(milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    while (!closed_ && Clock::now() < deadline) {
      const std::string b =
          Read(6, std::chrono::duration_cast<milliseconds>(deadline - Clock::now()));
      if (b.size() == 6) {
        if (b.substr(1) != std::string("A\0\0\0\0", 5)) return false;  // not a keepalive
      }
    }
    return closed_;
  }

 private:
  int fd_ = -1;
  bool closed_ = false;
};

}  // namespace dashcam::testing
