// ServerProcess: see server_process.h.
#include "tests/bench/server_process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <charconv>
#include <cstring>
#include <fstream>
#include <sstream>
#include <system_error>
#include <thread>
#include <vector>

extern char** environ;

namespace dashcam::bench {
namespace {

constexpr std::chrono::milliseconds kPollEvery{20};

std::string ErrnoText(int err) {
  return std::generic_category().message(err);
}

ExitStatus DecodeWaitStatus(int status) {
  if (WIFSIGNALED(status)) return ExitStatus{true, WTERMSIG(status)};
  return ExitStatus{false, WEXITSTATUS(status)};
}

// posix_spawn rather than fork: the benchmark is multithreaded by then.
Result<pid_t> Spawn(const std::vector<std::string>& args, const std::filesystem::path& log_path) {
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND,
                                   0644);
  posix_spawn_file_actions_adddup2(&actions, 2, 1);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return Status::IoError("spawn " + args[0] + ": " + ErrnoText(rc));
  return pid;
}

}  // namespace

std::string ExitStatus::ToString() const {
  if (!signaled) return "exit code " + std::to_string(value);
  return "killed by signal " + std::to_string(value) + " (" + strsignal(value) + ")";
}

Result<ServerProcess> ServerProcess::Start(const ServerLaunch& launch) {
  std::vector<std::string> args = {launch.binary,
                                   "--listen",
                                   launch.listen,
                                   "--data-dir",
                                   launch.data_dir.string(),
                                   "--threads",
                                   std::to_string(launch.threads)};
  Result<pid_t> pid = Spawn(args, launch.log_path);
  if (!pid.ok()) return pid.status();
  return ServerProcess(*pid);
}

ServerProcess::ServerProcess(ServerProcess&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)), exit_(std::move(other.exit_)) {}

ServerProcess::~ServerProcess() {
  if (pid_ < 0 || exit_) return;
  ::kill(pid_, SIGKILL);
  int status = 0;
  ::waitpid(pid_, &status, 0);
}

std::optional<ExitStatus> ServerProcess::Poll() {
  if (exit_ || pid_ < 0) return exit_;
  int status = 0;
  if (::waitpid(pid_, &status, WNOHANG) == pid_) exit_ = DecodeWaitStatus(status);
  return exit_;
}

ExitStatus ServerProcess::Stop(std::chrono::milliseconds grace) {
  if (Poll()) return *exit_;
  ::kill(pid_, SIGTERM);
  auto deadline = std::chrono::steady_clock::now() + grace;
  while (!Poll() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(kPollEvery);
  }
  if (exit_) return *exit_;
  ::kill(pid_, SIGKILL);
  int status = 0;
  ::waitpid(pid_, &status, 0);
  exit_ = DecodeWaitStatus(status);
  return *exit_;
}

void ServerProcess::Kill() const {
  if (pid_ > 0) ::kill(pid_, SIGKILL);
}

Result<uint64_t> ServerProcess::PeakRssBytes() const {
  std::string path = "/proc/" + std::to_string(pid_) + "/status";
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmHWM:", 0) != 0) continue;
    size_t digits = line.find_first_of("0123456789");
    uint64_t kib = 0;
    if (digits == std::string::npos ||
        std::from_chars(line.data() + digits, line.data() + line.size(), kib).ec != std::errc()) {
      return Status::Internal("unparsable line in " + path + ": " + line);
    }
    return kib * 1024;
  }
  return Status::NotFound("no VmHWM in " + path);
}

Result<uint16_t> PickFreePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::IoError("socket: " + ErrnoText(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
            ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  int err = errno;
  ::close(fd);
  if (!ok) return Status::IoError("bind 127.0.0.1:0: " + ErrnoText(err));
  return static_cast<uint16_t>(ntohs(addr.sin_port));
}

std::string ReadFileTail(const std::filesystem::path& path, size_t max_bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  in.seekg(0, std::ios::end);
  auto size = static_cast<size_t>(in.tellg());
  in.seekg(static_cast<std::streamoff>(size > max_bytes ? size - max_bytes : 0));
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

}  // namespace dashcam::bench
