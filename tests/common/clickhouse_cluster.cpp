#include "tests/common/clickhouse_cluster.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>

#include "tests/common/http_client.h"
#include "tests/common/spawn.h"

namespace dashcam::testing {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void ReplaceAll(std::string& s, const std::string& from, const std::string& to) {
  for (std::size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) {
    s.replace(at, from.size(), to);
  }
}

// `n` free loopback ports, all held open while they are chosen so that none
// is chosen twice.
std::vector<std::uint16_t> FreePorts(int n) {
  std::vector<int> fds;
  std::vector<std::uint16_t> ports;
  for (int i = 0; i < n; ++i) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      throw std::runtime_error(std::string("no free port: ") + std::strerror(errno));
    }
    fds.push_back(fd);
    ports.push_back(ntohs(addr.sin_port));
  }
  for (int fd : fds) ::close(fd);
  return ports;
}

// Held while a cluster chooses its ports and until its nodes answer on them:
// FreePorts releases the ports before ClickHouse binds them, so two test
// processes starting clusters at once (ctest runs the ClickHouse suites in
// parallel) could pick the same port, and one cluster's shard would be the
// other's node. An flock on a file every test process shares serializes that.
class PortLock {
 public:
  PortLock() : fd_(::open("/tmp/dashcam-clickhouse-ports.lock", O_CREAT | O_RDWR, 0666)) {
    if (fd_ >= 0) ::flock(fd_, LOCK_EX);
  }
  ~PortLock() {
    if (fd_ >= 0) ::close(fd_);  // releases the lock
  }
  PortLock(const PortLock&) = delete;
  PortLock& operator=(const PortLock&) = delete;

 private:
  int fd_;
};

}  // namespace

std::string ClickHouseCluster::ServerBinary() {
  for (const char* path : {"/usr/sbin/clickhouse-server", "/usr/bin/clickhouse-server"}) {
    if (::access(path, X_OK) == 0) return path;
  }
  return "";
}

ClickHouseCluster::ClickHouseCluster(int shards) : nodes_(static_cast<std::size_t>(shards)) {}

ClickHouseCluster::~ClickHouseCluster() {
  // Every node is signalled before any is waited for, so that their
  // shutdowns overlap: each waits for the connections the others hold to it,
  // which end within poll_interval (1 s in tests/clickhouse/users.xml; 10 s,
  // ClickHouse's default, made every teardown take 10 s).
  for (int i = 0; i < nodes(); ++i) SignalNode(i);
  for (int i = 0; i < nodes(); ++i) ReapNode(i);
}

bool ClickHouseCluster::Start() {
  if (ServerBinary().empty()) {
    error_ = "clickhouse-server is not installed (make test installs it)";
    return false;
  }
  const PortLock lock;
  const std::vector<std::uint16_t> ports = FreePorts(2 * nodes());
  std::string shards;
  for (int i = 0; i < nodes(); ++i) {
    Node& n = nodes_[static_cast<std::size_t>(i)];
    n.http_port = ports[static_cast<std::size_t>(2 * i)];
    n.tcp_port = ports[static_cast<std::size_t>(2 * i + 1)];
    n.dir = fmt::format("{}/node{}", dir_.path(), i);
    ::mkdir(n.dir.c_str(), 0755);
    shards += fmt::format(
        "      <shard><replica><host>127.0.0.1</host><port>{}</port></replica></shard>\n",
        n.tcp_port);
  }
  const std::string configs = DASHCAM_CLICKHOUSE_CONFIGS;
  const std::string tmpl = ReadFile(configs + "/server.xml.in");
  if (tmpl.empty()) {
    error_ = "cannot read " + configs + "/server.xml.in";
    return false;
  }
  for (int i = 0; i < nodes(); ++i) {
    const Node& n = nodes_[static_cast<std::size_t>(i)];
    std::string config = tmpl;
    ReplaceAll(config, "@DIR@", n.dir);
    ReplaceAll(config, "@HTTP_PORT@", std::to_string(n.http_port));
    ReplaceAll(config, "@TCP_PORT@", std::to_string(n.tcp_port));
    ReplaceAll(config, "@USERS@", configs + "/users.xml");
    ReplaceAll(config, "@CLUSTER@", kClusterName);
    ReplaceAll(config, "@SHARDS@", shards);
    std::ofstream(n.dir + "/config.xml") << config;
  }
  for (int i = 0; i < nodes(); ++i) {
    if (!StartNode(i)) return false;
  }
  return true;
}

bool ClickHouseCluster::StartNode(int i) {
  Node& n = nodes_[static_cast<std::size_t>(i)];
  const std::string binary = ServerBinary();
  const std::string config_arg = "--config-file=" + n.dir + "/config.xml";
  const std::string out = n.dir + "/stdout.log";
  // Through setpriv, so that the node is killed with the test process even
  // when that dies without running destructors (a crash, ctest's timeout).
  pid_t pid = -1;
  const int rc =
      SpawnLogged({"/usr/bin/setpriv", "--pdeathsig", "KILL", "--", binary, config_arg}, out, pid);
  if (rc != 0) {
    error_ = fmt::format("spawn {} via setpriv: {}", binary, std::strerror(rc));
    return false;
  }
  n.pid = pid;
  return WaitUntilAnswering(i, std::chrono::seconds(60));
}

bool ClickHouseCluster::WaitUntilAnswering(int i, std::chrono::seconds timeout) {
  Node& n = nodes_[static_cast<std::size_t>(i)];
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  HttpClient client("127.0.0.1", n.http_port);
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (::waitpid(n.pid, &status, WNOHANG) == n.pid) {
      n.pid = -1;
      error_ = fmt::format("ClickHouse node {} exited during startup (status {}):\n{}", i, status,
                           NodeLog(i));
      return false;
    }
    const HttpResult r = client.Post("/", "SELECT 1");
    if (r.status == 200) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  error_ = fmt::format("ClickHouse node {} did not answer within {} s:\n{}", i, timeout.count(),
                       NodeLog(i));
  return false;
}

void ClickHouseCluster::StopNode(int i) {
  SignalNode(i);
  ReapNode(i);
}

void ClickHouseCluster::SignalNode(int i) {
  const Node& n = nodes_[static_cast<std::size_t>(i)];
  if (n.pid > 0) ::kill(n.pid, SIGTERM);
}

void ClickHouseCluster::ReapNode(int i) {
  Node& n = nodes_[static_cast<std::size_t>(i)];
  if (n.pid <= 0) return;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  int status = 0;
  while (::waitpid(n.pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(n.pid, SIGKILL);
      ::waitpid(n.pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  n.pid = -1;
}

std::string ClickHouseCluster::NodeLog(int i) const {
  const Node& n = nodes_[static_cast<std::size_t>(i)];
  std::string log = ReadFile(n.dir + "/stdout.log") + ReadFile(n.dir + "/error.log");
  if (log.size() > 4000) log = "..." + log.substr(log.size() - 4000);
  return log;
}

std::string ClickHouseCluster::StorageUrl(const std::string& db) const {
  std::string hosts;
  for (const Node& n : nodes_) {
    hosts += fmt::format("{}127.0.0.1:{}", hosts.empty() ? "" : ",", n.http_port);
  }
  return fmt::format("clickhouse://{}/{}?cluster={}", hosts, db, kClusterName);
}

std::string ClickHouseCluster::Query(int i, const std::string& sql) const {
  HttpClient client("127.0.0.1", nodes_[static_cast<std::size_t>(i)].http_port);
  const HttpResult r = client.Post("/", sql);
  if (r.status != 200) {
    throw std::runtime_error(
        fmt::format("ClickHouse node {}: {} {}{}", i, r.status, r.body, r.error));
  }
  return r.body;
}

}  // namespace dashcam::testing
