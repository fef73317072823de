// TestServer: runs the real dashcam binary for an integration test or a
// benchmark, on loopback and a free port (the server picks it: --listen
// 127.0.0.1:0, unless extra_args name --listen), with its own data
// directory, and stops it. Its stdout and
// stderr (the structured log) go to a file the caller can read.
//
// With $DASHCAM_TEST_STORAGE set (a --storage URL whose "{db}" stands for a
// database name), a server started without --storage of its own stores its
// events there, in a database named after its data directory, with a query
// budget of 60 s unless it sets one: how the integration suites run against
// the ClickHouse backend (tests/integration/backend_environment.cpp).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dashcam::testing {

// A directory removed with its contents on destruction (unless kept).
class TempDir {
 public:
  // A fresh directory under $TMPDIR (or /tmp). Aborts if it cannot be made.
  TempDir();
  // `dir` empty: a fresh directory as TempDir() makes. Otherwise `dir`,
  // created if missing, which must then be empty. With `keep` the directory
  // stays on destruction. Throws std::runtime_error if it cannot be made or
  // is not empty.
  TempDir(const std::string& dir, bool keep);
  TempDir(TempDir&& other) noexcept;
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  TempDir& operator=(TempDir&&) = delete;
  const std::string& path() const { return path_; }  // empty once moved from
  bool keep() const { return keep_; }

 private:
  std::string path_;
  bool keep_ = false;
};

// How a process ended.
struct ExitStatus {
  bool signaled = false;
  int value = 0;  // exit code, or signal number when signaled
  bool ok() const { return !signaled && value == 0; }
  std::string ToString() const;  // "exit code 0", "killed by signal 9 (Killed)"
};

// True when $DASHCAM_TEST_STORAGE sends the servers' events to an external
// store (ClickHouse) rather than SQLite files in their data directories:
// for the few checks that only one backend can make.
bool ExternalTestStorage();

struct TestServerOptions {
  std::string data_dir;                 // --data-dir; kept across Start/Stop
  std::string binary;                   // empty: TestServer::BinaryPath()
  int threads = 2;                      // --threads
  std::string log_path;                 // empty: "<data_dir>.server.log"
  std::vector<std::string> extra_args;  // appended to the command line
  // --compress-after, unless extra_args has it: tests store most documents
  // compressed, as a day does past its first few thousand. Empty: the
  // binary's default (benchmarks).
  std::string compress_after = "8";
};

// Thread-safety: Signal() may be called from any thread while no other
// thread calls Start() or Spawn(); everything else belongs to the owning
// thread.
class TestServer {
 public:
  // `data_dir` is kept across Start/Stop so restarts see the same data.
  explicit TestServer(std::string data_dir, std::vector<std::string> extra_args = {});
  explicit TestServer(TestServerOptions options);
  ~TestServer();  // kills the server if still running

  // Starts the binary and waits (up to 30 s) until it listens. False on
  // failure (error() says why). Start() is Spawn() then WaitUntilListening().
  bool Start();
  // Runs the binary (stdin /dev/null, stdout and stderr appended to the
  // log) without waiting. False if it could not be run.
  bool Spawn();
  // After Spawn(): waits until the server logs that it listens and learns
  // its port. False if it exited first (see exit_status()) or on timeout.
  bool WaitUntilListening(std::chrono::seconds timeout = std::chrono::seconds(30));

  // Sends `sig` and waits for exit (up to `timeout_s`); returns the exit
  // status as from waitpid's WEXITSTATUS, 128+signal if killed, -1 on timeout.
  int Stop(int sig = 15, int timeout_s = 60);
  void Kill();  // SIGKILL, wait
  // Sends `sig` to the last spawned process without waiting or reaping;
  // nothing if never spawned. Once that process has been reaped the pid may
  // have been reused: stop calling it by then.
  void Signal(int sig) const;
  // Without blocking: the exit status if the server has exited.
  std::optional<ExitStatus> Poll();
  // How the last run ended, once it is known (Poll, Stop, Kill, or a failed
  // start); empty while running or before the first Spawn().
  const std::optional<ExitStatus>& exit_status() const { return exit_; }
  // VmHWM from /proc/<pid>/status; empty if unreadable. REQUIRES: running.
  std::optional<std::uint64_t> PeakRssBytes() const;
  // Its resident memory now (VmRSS); nullopt when not running.
  std::optional<std::uint64_t> RssBytes() const;

  std::uint16_t port() const { return port_; }
  // The Beats listener's port, from its "beats_listening" line; 0 if off.
  // Unless extra_args name --beats-listen, the server gets 127.0.0.1:0.
  std::uint16_t beats_port() const { return beats_port_; }
  pid_t pid() const { return pid_; }  // -1 when not running
  const std::string& log_path() const { return log_path_; }
  std::string ReadLog() const;
  // Why the last Start, Spawn or WaitUntilListening failed.
  const std::string& error() const { return error_; }

  static std::string BinaryPath();

 private:
  void Reaped(int wait_status);

  TestServerOptions options_;
  std::string log_path_;
  std::size_t log_offset_ = 0;  // log size when last spawned
  pid_t pid_ = -1;
  pid_t spawned_pid_ = -1;  // set only by Spawn(), read by Signal()
  std::uint16_t port_ = 0;
  std::uint16_t beats_port_ = 0;
  std::optional<ExitStatus> exit_;
  std::string error_;
};

}  // namespace dashcam::testing
