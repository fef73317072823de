// ServerStatus: what the server reports about itself to its operator.
//
//   GET /metrics        MetricsText(): the registry's counters and histograms
//                       plus gauges read from the parts that keep them
//                       (writer queue, connections, tails, partitions).
//   GET /readyz         Ready(): 200 when storage takes writes, else 503 with
//                       the reason (below).
//   GET /api/v1/status  StatusJson(): version, uptime, listen addresses,
//                       partitions, ingest rate, connections, a configuration
//                       summary (never secrets: no rule file contents, no keys).
//
// Not ready when: the server is draining; the writer has stopped; ingestion
// is paused because the data disk is full (storage/writer.h; also the gauge
// dashcam_disk_full and the status's "ingest.disk_full"); the last
// commit failed (until one succeeds); the data directory is not writable; or
// the writer queue holds at least 3/4 of --queue-bytes (kHighWaterPercent),
// the point past which ingest requests are about to be refused with 429.
//
// Extra sections: AddSection("name", fn) makes StatusJson() carry a
// member "name" whose value fn returns, called on each request (on a
// worker thread, concurrently with anything; fn must be thread-safe). This is
// how parts that the status does not know of (retention) report there.
//
// Thread-safety: SetListenAddresses and AddSection before the server serves;
// then every method may be called concurrently from any thread. Everything
// referenced must outlive this object.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <boost/json/value.hpp>

#include "api/tail_hub.h"
#include "ingest/beats_session.h"
#include "server/config.h"
#include "server/http_session.h"
#include "server/router.h"
#include "storage/event_store.h"
#include "storage/metrics.h"
#include "storage/sqlite_memory.h"

namespace dashcam::server {

inline constexpr std::size_t kHighWaterPercent = 75;

struct StatusSources {
  const Config& config;
  storage::EventStore& store;
  const Metrics& metrics;
  const ingest::BeatsMetrics& beats;
  const api::TailHub& tails;
  const SessionRegistry& sessions;
  const storage::SqliteMemory& sqlite_memory;
};

class ServerStatus {
 public:
  explicit ServerStatus(StatusSources sources);

  // The bound addresses ("127.0.0.1:9200"); `beats` empty when off.
  void SetListenAddresses(std::string http, std::string beats);
  void AddSection(std::string name, std::function<boost::json::value()> render);

  // Blocks (reads partition file sizes): call on a worker.
  std::string MetricsText() const;
  // Quick (one access(2) call): may run on an I/O thread.
  Readiness Ready() const;
  // Blocks (counts events per partition): call on a worker.
  std::string StatusJson() const;

 private:
  double UptimeSeconds() const;
  boost::json::value ConfigSummary() const;
  boost::json::value PartitionsJson(std::uint64_t& events, std::uint64_t& bytes) const;

  // Constant after construction (and the setters).
  const StatusSources src_;
  const std::chrono::steady_clock::time_point started_;
  const std::chrono::system_clock::time_point started_wall_;
  std::string http_addr_, beats_addr_;
  std::vector<std::pair<std::string, std::function<boost::json::value()>>> sections_;
};

}  // namespace dashcam::server
