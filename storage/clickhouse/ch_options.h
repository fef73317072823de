// Where the ClickHouse backend's cluster is: the value of --storage.
//
//   clickhouse://HOST[:PORT][,HOST[:PORT]...]/DATABASE?cluster=NAME[&timeout_ms=N]
//
// PORT is a node's HTTP port (8123 when omitted); an IPv6 address is
// written in brackets. Every host listed is a node of the cluster NAME, as
// each server's `remote_servers` config declares it: dashcam creates its
// tables on each of them (ClickHouse 18.16 has no ON CLUSTER without
// ZooKeeper) and spreads its requests over them. DATABASE defaults to
// "dashcam"; `timeout_ms` (default 10000, at most an hour) bounds each
// request.
//
// Thread-safety: a pure function.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "storage/status.h"

namespace dashcam::storage::clickhouse {

struct ChHost {
  std::string host;
  std::uint16_t port = 8123;
};

struct ChOptions {
  std::vector<ChHost> hosts;  // at least one
  std::string database = "dashcam";
  std::string cluster;  // required
  std::chrono::milliseconds timeout{10'000};
};

// True when `storage` names the ClickHouse backend (a clickhouse:// URL).
bool IsClickHouseUrl(std::string_view storage);

// Errors: InvalidArgument naming what is wrong with `url`.
Result<ChOptions> ParseClickHouseUrl(std::string_view url);

}  // namespace dashcam::storage::clickhouse
