#include "tests/common/test_server.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace dashcam::testing {

namespace fs = std::filesystem;

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = std::string(base && *base ? base : "/tmp") + "/dashcam-test-XXXXXX";
  if (mkdtemp(tmpl.data()) == nullptr) std::abort();
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

TestServer::TestServer(std::string data_dir, std::vector<std::string> extra_args)
    : data_dir_(std::move(data_dir)), extra_args_(std::move(extra_args)) {
  log_path_ = data_dir_ + ".server.log";
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
  const std::size_t log_offset = ReadLog().size();
  std::vector<std::string> args = {BinaryPath(), "--listen", "127.0.0.1:0", "--data-dir", data_dir_,
                                   "--threads",  "2"};
  args.insert(args.end(), extra_args_.begin(), extra_args_.end());
  pid_ = fork();
  if (pid_ == 0) {
    const int fd = open(log_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    dup2(fd, 2);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    const std::string log = ReadLog().substr(log_offset);
    const auto at = log.find("\"event\":\"listening\"");
    if (at != std::string::npos) {
      const auto addr = log.find("127.0.0.1:", at);
      port_ = static_cast<std::uint16_t>(std::atoi(log.c_str() + addr + 10));
      return port_ != 0;
    }
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

int TestServer::Stop(int sig, int timeout_s) {
  if (pid_ <= 0) return -1;
  kill(pid_, sig);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      if (WIFEXITED(status)) return WEXITSTATUS(status);
      return 128 + WTERMSIG(status);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return -1;
}

void TestServer::Kill() {
  if (pid_ <= 0) return;
  kill(pid_, SIGKILL);
  int status = 0;
  waitpid(pid_, &status, 0);
  pid_ = -1;
}

}  // namespace dashcam::testing
