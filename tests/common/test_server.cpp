#include "tests/common/test_server.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <system_error>
#include <thread>
#include <utility>

#include <fmt/format.h>

#include "tests/common/spawn.h"

namespace dashcam::testing {

namespace fs = std::filesystem;

namespace {

constexpr std::chrono::milliseconds kPollEvery{10};

std::string ErrnoText(int err) {
  return std::generic_category().message(err);
}

// Makes a fresh directory under $TMPDIR (or /tmp) and names it in `path`.
// False on failure, with errno set and `path` the mkdtemp template.
bool MakeFreshDir(std::string& path) {
  const char* base = std::getenv("TMPDIR");
  path = std::string(base && *base ? base : "/tmp") + "/dashcam-test-XXXXXX";
  return mkdtemp(path.data()) != nullptr;
}

}  // namespace

TempDir::TempDir() {
  if (!MakeFreshDir(path_)) std::abort();
}

TempDir::TempDir(const std::string& dir, bool keep) : keep_(keep) {
  if (dir.empty()) {
    if (!MakeFreshDir(path_))
      throw std::runtime_error("mkdtemp " + path_ + ": " + ErrnoText(errno));
    return;
  }
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw std::runtime_error("create " + dir + ": " + ec.message());
  if (!fs::is_empty(dir, ec) || ec) throw std::runtime_error(dir + " must be missing or empty");
  path_ = fs::absolute(dir).string();
}

TempDir::TempDir(TempDir&& other) noexcept
    : path_(std::exchange(other.path_, {})), keep_(other.keep_) {}

TempDir::~TempDir() {
  if (path_.empty() || keep_) return;
  std::error_code ec;
  fs::remove_all(path_, ec);
}

std::string ExitStatus::ToString() const {
  if (!signaled) return "exit code " + std::to_string(value);
  return "killed by signal " + std::to_string(value) + " (" + strsignal(value) + ")";
}

namespace {

// The --storage URL that $DASHCAM_TEST_STORAGE asks for this data
// directory, or "" for the default (SQLite in the data directory). Its
// "{db}" becomes a database name of the directory's own, so that each
// server of a test run has a store of its own and a restart finds its data.
std::string TestStorageUrl(const std::string& data_dir) {
  if (!ExternalTestStorage()) return "";
  std::string url = std::getenv("DASHCAM_TEST_STORAGE");
  const std::size_t at = url.find("{db}");
  if (at != std::string::npos) {
    url.replace(at, 4, fmt::format("t{:016x}", std::hash<std::string>{}(data_dir)));
  }
  return url;
}

TestServerOptions WithArgs(std::string data_dir, std::vector<std::string> extra_args) {
  TestServerOptions options;
  options.data_dir = std::move(data_dir);
  options.extra_args = std::move(extra_args);
  return options;
}

}  // namespace

bool ExternalTestStorage() {
  const char* env = std::getenv("DASHCAM_TEST_STORAGE");
  return env != nullptr && *env != '\0';
}

TestServer::TestServer(std::string data_dir, std::vector<std::string> extra_args)
    : TestServer(WithArgs(std::move(data_dir), std::move(extra_args))) {}

TestServer::TestServer(TestServerOptions options) : options_(std::move(options)) {
  log_path_ = options_.log_path.empty() ? options_.data_dir + ".server.log" : options_.log_path;
}

TestServer::~TestServer() {
  if (pid_ > 0) Kill();
}

std::string TestServer::BinaryPath() {
  if (const char* env = std::getenv("DASHCAM_BINARY")) return env;
  return DASHCAM_BINARY;
}

std::string TestServer::ReadLog() const {
  std::ifstream in(log_path_);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool TestServer::Start() {
  return Spawn() && WaitUntilListening();
}

bool TestServer::Spawn() {
  log_offset_ = ReadLog().size();
  port_ = 0;
  exit_.reset();
  error_.clear();
  std::vector<std::string> args = {options_.binary.empty() ? BinaryPath() : options_.binary,
                                   "--data-dir", options_.data_dir, "--threads",
                                   std::to_string(options_.threads)};
  const auto& extra = options_.extra_args;
  if (std::find(extra.begin(), extra.end(), "--listen") == extra.end()) {
    args.insert(args.end(), {"--listen", "127.0.0.1:0"});
  }
  if (std::find(extra.begin(), extra.end(), "--beats-listen") == extra.end()) {
    args.insert(args.end(), {"--beats-listen", "127.0.0.1:0"});  // never the shared 5044
  }
  if (!options_.compress_after.empty() &&
      std::find(extra.begin(), extra.end(), "--compress-after") == extra.end()) {
    args.insert(args.end(), {"--compress-after", options_.compress_after});
  }
  if (std::find(extra.begin(), extra.end(), "--storage") == extra.end()) {
    if (std::string url = TestStorageUrl(options_.data_dir); !url.empty()) {
      args.insert(args.end(), {"--storage", url});
      // Views that ask ClickHouse once per run or per page (the runs list)
      // take seconds on a loaded test machine: the default budget of 10 s
      // would make them flaky there, and the budget is not what they test.
      if (std::find(extra.begin(), extra.end(), "--query-timeout-ms") == extra.end()) {
        args.insert(args.end(), {"--query-timeout-ms", "60000"});
      }
    }
  }
  args.insert(args.end(), extra.begin(), extra.end());
  pid_t pid = -1;
  const std::string program = args[0];
  const int rc = SpawnLogged(std::move(args), log_path_, pid);
  if (rc != 0) {
    error_ = "spawn " + program + ": " + ErrnoText(rc);
    return false;
  }
  pid_ = pid;
  spawned_pid_ = pid;
  return true;
}

namespace {

// The port of the first "127.0.0.1:PORT" at or after `from`; 0 if none.
// The port of the line's "addr":"host:port" (any host: 127.0.0.1, 0.0.0.0, ::).
std::uint16_t PortLoggedAt(const std::string& log, std::size_t from) {
  const auto addr = log.find("\"addr\":\"", from);
  if (addr == std::string::npos) return 0;
  const auto end = log.find('"', addr + 8);
  const auto colon = log.rfind(':', end);
  if (end == std::string::npos || colon == std::string::npos || colon < addr + 8) return 0;
  return static_cast<std::uint16_t>(std::atoi(log.c_str() + colon + 1));
}

}  // namespace

bool TestServer::WaitUntilListening(std::chrono::seconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (pid_ > 0 && std::chrono::steady_clock::now() < deadline) {
    const std::string log = ReadLog().substr(log_offset_);
    const auto at = log.find("\"event\":\"listening\"");
    if (at != std::string::npos) {
      port_ = PortLoggedAt(log, at);
      // "beats_listening" is logged before "listening" when the listener is on.
      const auto beats = log.find("\"event\":\"beats_listening\"");
      beats_port_ = beats != std::string::npos && beats < at ? PortLoggedAt(log, beats) : 0;
      if (port_ != 0) return true;
      error_ = "no port in the listening line of " + log_path_;
      return false;
    }
    if (Poll()) break;
    std::this_thread::sleep_for(kPollEvery);
  }
  if (exit_) {
    error_ = "the server exited during startup: " + exit_->ToString();
  } else if (pid_ <= 0) {
    error_ = "the server is not running";
  } else {
    error_ = "the server did not listen within " + std::to_string(timeout.count()) + " s";
  }
  return false;
}

void TestServer::Reaped(int wait_status) {
  if (WIFSIGNALED(wait_status)) {
    exit_ = ExitStatus{true, WTERMSIG(wait_status)};
  } else {
    exit_ = ExitStatus{false, WEXITSTATUS(wait_status)};
  }
  pid_ = -1;
}

std::optional<ExitStatus> TestServer::Poll() {
  int status = 0;
  if (pid_ > 0 && waitpid(pid_, &status, WNOHANG) == pid_) Reaped(status);
  return exit_;
}

int TestServer::Stop(int sig, int timeout_s) {
  if (pid_ <= 0) return -1;
  kill(pid_, sig);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  while (std::chrono::steady_clock::now() < deadline) {
    if (Poll()) return exit_->signaled ? 128 + exit_->value : exit_->value;
    std::this_thread::sleep_for(kPollEvery);
  }
  return -1;
}

void TestServer::Kill() {
  if (pid_ <= 0) return;
  kill(pid_, SIGKILL);
  int status = 0;
  waitpid(pid_, &status, 0);
  Reaped(status);
}

void TestServer::Signal(int sig) const {
  const pid_t pid = spawned_pid_;
  if (pid > 0) kill(pid, sig);
}

namespace {

// A "<key>  <n> kB" line of /proc/<pid>/status, in bytes.
std::optional<std::uint64_t> ProcStatusBytes(pid_t pid, std::string_view key) {
  if (pid <= 0) return std::nullopt;
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (!line.starts_with(key)) continue;
    const std::size_t digits = line.find_first_of("0123456789");
    std::uint64_t kib = 0;
    if (digits == std::string::npos ||
        std::from_chars(line.data() + digits, line.data() + line.size(), kib).ec != std::errc()) {
      return std::nullopt;
    }
    return kib * 1024;
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::uint64_t> TestServer::PeakRssBytes() const {
  return ProcStatusBytes(pid_, "VmHWM:");
}

std::optional<std::uint64_t> TestServer::RssBytes() const {
  return ProcStatusBytes(pid_, "VmRSS:");
}

}  // namespace dashcam::testing
