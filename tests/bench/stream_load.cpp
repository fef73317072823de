#include "tests/bench/stream_load.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string_view>

#include "tests/common/http_client.h"
#include "tests/common/stream_client.h"

namespace dashcam::bench {
namespace {

using Clock = std::chrono::steady_clock;

// Occurrences of `what` in `text` that end past byte `old` (those before
// were counted already).
std::uint64_t Count(std::string_view text, std::string_view what, std::size_t old = 0) {
  std::uint64_t n = 0;
  for (std::size_t at = 0; (at = text.find(what, at)) != std::string_view::npos;
       at += what.size()) {
    if (at + what.size() > old) ++n;
  }
  return n;
}

int ConnectAndGet(std::uint16_t port, const std::string& target) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const std::string req = "GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::send(fd, req.data(), req.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(req.size())) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// utime + stime of a /proc .../stat file, in seconds; 0 if unreadable.
double StatCpuSeconds(const std::string& path) {
  std::ifstream in(path);
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::size_t close = stat.rfind(')');  // the command name may hold spaces
  if (close == std::string::npos) return 0;
  std::istringstream fields(stat.substr(close + 2));
  std::string skip;
  for (int i = 3; i < 14; ++i) fields >> skip;  // fields 3..13
  double utime = 0, stime = 0;
  fields >> utime >> stime;
  return (utime + stime) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

}  // namespace

double ProcessCpuSeconds(pid_t pid) {
  if (pid <= 0) return 0;
  return StatCpuSeconds("/proc/" + std::to_string(pid) + "/stat");
}

double CallingThreadCpuSeconds() {
  rusage usage{};
  if (::getrusage(RUSAGE_THREAD, &usage) != 0) return 0;
  const auto seconds = [](const timeval& t) { return t.tv_sec + t.tv_usec / 1e6; };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

double ThreadCpuSeconds(pid_t pid, std::string_view name) {
  if (pid <= 0) return 0;
  std::error_code ec;
  double seconds = 0;
  for (const auto& task :
       std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec)) {
    std::ifstream comm(task.path() / "comm");
    std::string thread_name;
    std::getline(comm, thread_name);
    if (thread_name == name) seconds += StatCpuSeconds((task.path() / "stat").string());
  }
  return seconds;
}

Result<ExportTiming> TimeExport(std::uint16_t port, pid_t server_pid, const std::string& params,
                                const std::function<void()>& progress) {
  testing::StreamClient client(port);
  if (!client.ok()) return Status::IoError("cannot connect");
  ExportTiming t;
  const double cpu_before = ProcessCpuSeconds(server_pid);
  const auto start = Clock::now();
  if (!client.SendGet("/api/v1/export?" + params) || !client.ReadHeader(std::chrono::seconds(60))) {
    return Status::IoError("no answer to GET /api/v1/export?" + params);
  }
  if (client.status() != 200) {
    return Status::Internal("export answered " + std::to_string(client.status()));
  }
  // Count and drop the body as it comes, so this process stays small.
  std::uint64_t lines = 0;
  while (!client.complete() && !client.closed()) {
    client.ReadSome(std::chrono::seconds(60));
    std::string piece = client.TakeBody();
    lines += Count(piece, "\n");
    t.bytes += piece.size();
    if (progress && !piece.empty()) progress();
  }
  t.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  t.server_cpu_seconds = ProcessCpuSeconds(server_pid) - cpu_before;
  if (!client.complete()) return Status::IoError("the export ended without its last chunk");
  const bool csv = params.find("format=csv") != std::string::npos;
  t.events = csv && lines > 0 ? lines - 1 : lines;
  return t;
}

TailReaders::TailReaders(std::uint16_t port, const std::vector<std::string>& queries) {
  for (const std::string& q : queries) {
    const int fd = ConnectAndGet(port, "/api/v1/tail?q=" + testing::UrlEncode(q));
    if (fd < 0) {
      status_ = Status::IoError("cannot open a tail");
      break;
    }
    fds_.push_back(fd);
    tails_.emplace_back();
  }
  thread_ = std::thread([this] { Run(); });
}

TailReaders::~TailReaders() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  for (int fd : fds_) ::close(fd);
}

void TailReaders::Run() {
  std::vector<pollfd> polls;
  for (int fd : fds_) polls.push_back({fd, POLLIN, 0});
  std::vector<char> buf(256 * 1024);
  std::vector<bool> saw_end(fds_.size(), false);
  while (!stop_) {
    if (::poll(polls.data(), polls.size(), 50) <= 0) continue;
    for (std::size_t i = 0; i < polls.size(); ++i) {
      if (polls[i].fd < 0 || !(polls[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t n = ::recv(polls[i].fd, buf.data(), buf.size(), 0);
      if (n <= 0) {
        if (!saw_end[i]) ++ended_;
        polls[i].fd = -1;
        continue;
      }
      // Reads cut anywhere: the last bytes of the previous read are kept so
      // that a pattern split between reads is counted, once.
      std::string& text = tails_[i];
      const std::size_t old = text.size();
      text.append(buf.data(), static_cast<std::size_t>(n));
      events_ += Count(text, "\nid: ", old);
      if (!saw_end[i] && Count(text, "event: end\n", old) > 0) {
        saw_end[i] = true;
        ++ended_;
      }
      text.erase(0, text.size() > 10 ? text.size() - 10 : 0);
    }
  }
}

}  // namespace dashcam::bench
