// TestServer: runs the real dashcam binary for an integration test, on
// loopback and a free port (the server picks it: --listen 127.0.0.1:0), with
// its own temporary data directory, and stops it. Its stderr (the structured
// log) goes to a file the test can read.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace dashcam::testing {

// A fresh directory under $TMPDIR (or /tmp), removed with its contents.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

class TestServer {
 public:
  // `data_dir` is kept across Start/Stop so restarts see the same data.
  explicit TestServer(std::string data_dir, std::vector<std::string> extra_args = {});
  ~TestServer();  // kills the server if still running

  // Starts the binary and waits (up to 30 s) until it listens. False on failure.
  bool Start();
  // Sends `sig` and waits for exit (up to `timeout_s`); returns the exit
  // status as from waitpid's WEXITSTATUS, 128+signal if killed, -1 on timeout.
  int Stop(int sig = 15, int timeout_s = 60);
  void Kill();  // SIGKILL, wait

  std::uint16_t port() const { return port_; }
  pid_t pid() const { return pid_; }
  const std::string& log_path() const { return log_path_; }
  std::string ReadLog() const;

  static std::string BinaryPath();

 private:
  std::string data_dir_;
  std::vector<std::string> extra_args_;
  std::string log_path_;
  pid_t pid_ = -1;
  std::uint16_t port_ = 0;
};

}  // namespace dashcam::testing
