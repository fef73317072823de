// ClickHouseCluster: a local ClickHouse cluster for a test, one node per
// shard, started from the configs in tests/clickhouse/ (the Debian 12
// package's clickhouse-server, 18.16), on loopback and free ports, each
// node in its own temporary directory, and stopped (SIGTERM, then SIGKILL)
// when the object goes. Nothing assumes a ClickHouse already running.
//
//   ClickHouseCluster cluster(2);
//   ASSERT_TRUE(cluster.Start()) << cluster.error();
//   cluster.StorageUrl("dc");  // clickhouse://127.0.0.1:P1,127.0.0.1:P2/dc?cluster=dashcam_test
//   cluster.Query(0, "SELECT count() FROM dc.events_local");
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "tests/common/test_server.h"

namespace dashcam::testing {

class ClickHouseCluster {
 public:
  static constexpr const char* kClusterName = "dashcam_test";

  explicit ClickHouseCluster(int shards = 2);
  ~ClickHouseCluster();
  ClickHouseCluster(const ClickHouseCluster&) = delete;
  ClickHouseCluster& operator=(const ClickHouseCluster&) = delete;

  // Writes the configs and starts every node; true once each answers a
  // query. On false, error() says why (with the node's log).
  bool Start();
  const std::string& error() const { return error_; }

  // Stops node `i` (SIGTERM, then SIGKILL after 10 s), or starts it again on
  // its ports and data.
  void StopNode(int i);
  bool StartNode(int i);

  int nodes() const { return static_cast<int>(nodes_.size()); }
  std::uint16_t http_port(int i) const { return nodes_[i].http_port; }
  // The dashcam --storage URL of the whole cluster with database `db`.
  std::string StorageUrl(const std::string& db) const;
  // Runs `sql` on node `i` over HTTP; the answer's body. Throws
  // std::runtime_error with ClickHouse's message when it fails.
  std::string Query(int i, const std::string& sql) const;

  // Where the clickhouse-server binary is, or "" when it is not installed.
  static std::string ServerBinary();

 private:
  struct Node {
    std::string dir;
    std::uint16_t http_port = 0;
    std::uint16_t tcp_port = 0;
    pid_t pid = -1;
  };
  bool WaitUntilAnswering(int i, std::chrono::seconds timeout);
  // SIGTERM to node `i`; then its exit, with SIGKILL after 10 s.
  void SignalNode(int i);
  void ReapNode(int i);
  std::string NodeLog(int i) const;

  TempDir dir_;
  std::vector<Node> nodes_;
  std::string error_;
};

}  // namespace dashcam::testing
