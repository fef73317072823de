#include "server/server_status.h"

#include <unistd.h>

#include <algorithm>
#include <map>

#include <fmt/format.h>
#include <boost/json.hpp>

#include "server/version.h"
#include "storage/query_ast.h"
#include "storage/sqlite_memory.h"
#include "storage/time_format.h"

namespace dashcam::server {
namespace {

namespace json = boost::json;

constexpr auto kCountDeadline = std::chrono::seconds(5);

void Gauge(std::string& out, std::string_view name, std::string_view help, std::uint64_t value) {
  AppendMetricHeader(out, name, help, "gauge");
  AppendMetricLine(out, name, "", value);
}

std::uint64_t HighWater(const storage::WriterStats& w) {
  return static_cast<std::uint64_t>(w.max_queue_bytes) * kHighWaterPercent / 100;
}

// Why storage cannot take writes now; empty when it can. `data_dir`: the
// SQLite partitions' directory, empty for a ClickHouse store.
std::string NotReadyReason(const storage::WriterStats& w, bool draining,
                           const std::string& data_dir) {
  if (draining) return "the server is shutting down";
  if (w.stopping) return "storage is closed";
  if (w.disk_full) {
    return fmt::format(
        "the data disk is full since {}: ingestion is paused and resumes by itself when space "
        "returns ({})",
        FormatRfc3339Ms(w.disk_full_since_ms), w.disk_full_error.ToString());
  }
  if (!w.last_commit.ok()) return "the last commit failed: " + w.last_commit.ToString();
  if (!data_dir.empty() && ::access(data_dir.c_str(), W_OK) != 0) {
    return "the data directory is not writable";
  }
  if (w.queued_bytes >= HighWater(w)) {
    return fmt::format(
        "the ingest queue holds {} bytes, over its high-water mark of {} ({}% of "
        "--queue-bytes)",
        w.queued_bytes, HighWater(w), kHighWaterPercent);
  }
  return {};
}

// The directory the store writes to, empty when it is not local.
std::string DataDir(const Config& c) {
  return c.storage.empty() || c.storage == "sqlite" ? c.data_dir : std::string();
}

}  // namespace

ServerStatus::ServerStatus(StatusSources sources)
    : src_(sources),
      started_(std::chrono::steady_clock::now()),
      started_wall_(std::chrono::system_clock::now()) {}

void ServerStatus::SetListenAddresses(std::string http, std::string beats) {
  http_addr_ = std::move(http);
  beats_addr_ = std::move(beats);
}

void ServerStatus::AddSection(std::string name, std::function<json::value()> render) {
  sections_.emplace_back(std::move(name), std::move(render));
}

double ServerStatus::UptimeSeconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
}

std::string ServerStatus::MetricsText() const {
  std::string out = src_.metrics.Render();
  const ingest::BeatsMetrics& beats = src_.beats;
  const std::pair<const char*, const std::atomic<std::uint64_t>*> beats_counters[] = {
      {"dashcam_beats_connections_total", &beats.connections},
      {"dashcam_beats_windows_total", &beats.windows},
      {"dashcam_beats_events_total", &beats.events},
      {"dashcam_beats_protocol_errors_total", &beats.protocol_errors}};
  for (const auto& [name, value] : beats_counters) {
    AppendMetricHeader(out, name, "Beats protocol listener.", "counter");
    AppendMetricLine(out, name, "", value->load());
  }
  Gauge(out, "dashcam_beats_active_connections", "Open Beats connections.",
        beats.active_connections.load());
  Gauge(out, "dashcam_http_active_connections", "Open HTTP connections.", src_.sessions.size());
  const storage::WriterStats w = src_.store.writer_stats();
  Gauge(out, "dashcam_queue_bytes", "Bytes of events waiting for the writer.", w.queued_bytes);
  Gauge(out, "dashcam_queue_events", "Events waiting for the writer.", w.queued_events);
  Gauge(out, "dashcam_queue_limit_bytes",
        "Queue size past which ingest is refused with 429 (--queue-bytes).", w.max_queue_bytes);
  Gauge(out, "dashcam_disk_full",
        "1 while ingestion is paused because the data disk is full, else 0.", w.disk_full ? 1 : 0);
  Gauge(out, "dashcam_ready", "1 when GET /readyz answers 200, else 0.",
        NotReadyReason(w, src_.sessions.draining(), DataDir(src_.config)).empty() ? 1 : 0);
  const api::TailHub& tails = src_.tails;
  Gauge(out, "dashcam_tail_subscribers", "Connected live tails.", tails.subscribers());
  Gauge(out, "dashcam_tail_queued_bytes",
        "Bytes of events queued for live tail clients, per client.", tails.queued_bytes());
  Gauge(out, "dashcam_tail_memory_bytes",
        "Memory of the live tail queues (pieces shared by clients counted once).",
        tails.memory_bytes());
  const auto partitions = src_.store.Partitions();
  std::uint64_t disk = 0;
  for (const auto& p : partitions) disk += p.bytes;
  Gauge(out, "dashcam_partitions", "Day partitions on disk.", partitions.size());
  Gauge(out, "dashcam_disk_bytes", "Bytes of all partition files (with their WAL).", disk);
  Gauge(out, "dashcam_sqlite_memory_bytes",
        "Bytes of SQLite's page caches, every partition's connections together "
        "(--sqlite-memory-mib).",
        src_.sqlite_memory.PageCacheBytes());
  Gauge(out, "dashcam_uptime_seconds", "Seconds since the server started.",
        static_cast<std::uint64_t>(UptimeSeconds()));
  AppendMetricHeader(out, "dashcam_build_info", "The running version (value 1).", "gauge");
  AppendMetricLine(out, "dashcam_build_info", fmt::format("version=\"{}\"", kVersion), 1);
  return out;
}

Readiness ServerStatus::Ready() const {
  const storage::WriterStats w = src_.store.writer_stats();
  const std::string reason = NotReadyReason(w, src_.sessions.draining(), DataDir(src_.config));
  json::object body{{"status", reason.empty() ? "ready" : "not_ready"},
                    {"queued_bytes", w.queued_bytes},
                    {"high_water_bytes", HighWater(w)}};
  if (!reason.empty()) body["reason"] = reason;
  return Readiness{reason.empty(), json::serialize(body)};
}

// Newest first. Event counts come from the per-minute level counts (a match-
// all histogram by day), so this reads a few thousand rows per partition.
namespace {

// /api/v1/status's "ingest.disk_full": null, or since when and why ingestion
// is paused for lack of space.
json::value DiskFullJson(const storage::WriterStats& w) {
  if (!w.disk_full) return nullptr;
  return json::object{{"since", FormatRfc3339Ms(w.disk_full_since_ms)},
                      {"error", w.disk_full_error.ToString()}};
}

// /api/v1/status's "compaction": whether past days are compacted, and what
// that has returned since start.
json::value CompactionJson(const storage::CompactionStatus& c) {
  json::object o{{"enabled", c.policy.enabled},
                 {"quiet_period_ms", c.policy.quiet_period.count()},
                 {"compacted_partitions", c.compacted_partitions},
                 {"returned_bytes", c.returned_bytes},
                 {"running", c.running ? json::value(FormatDay(*c.running)) : nullptr}};
  o["last"] = nullptr;
  if (c.last) {
    const storage::CompactionResult& r = c.last->result;
    o["last"] = json::object{{"day", FormatDay(c.last->day)},
                             {"bytes_before", r.bytes_before},
                             {"bytes_after", r.bytes_after},
                             {"merge_steps", r.merge_steps},
                             {"vacuum_steps", r.vacuum_steps},
                             {"returns_pages", r.returns_pages},
                             {"reindexed_events", r.reindexed_events},
                             {"documents_encoded", r.documents_encoded},
                             {"seconds", c.last->seconds},
                             {"at", FormatRfc3339Ms(c.last->at_ms)}};
  }
  if (!c.last_error.empty()) o["last_error"] = c.last_error;
  return o;
}

// /api/v1/status's "retention": the policy, what was dropped, what goes next.
json::value RetentionJson(const storage::RetentionStatus& r) {
  const auto limit = [](auto v) { return v ? json::value(v) : json::value(nullptr); };
  json::object o{{"max_age_days", limit(r.policy.max_age_days)},
                 {"max_disk_bytes", limit(r.policy.max_disk_bytes)},
                 {"disk_bytes", r.disk_bytes},
                 {"partitions", r.partitions},
                 {"last_check", r.last_check_ms ? json::value(FormatRfc3339Ms(r.last_check_ms))
                                                : json::value(nullptr)},
                 {"dropped_partitions", r.dropped_partitions},
                 {"dropped_bytes", r.dropped_bytes}};
  o["last_drop"] = nullptr;
  if (r.last_drop) {
    o["last_drop"] = json::object{{"day", FormatDay(r.last_drop->day)},
                                  {"events", r.last_drop->events},
                                  {"bytes", r.last_drop->bytes},
                                  {"reason", r.last_drop->reason},
                                  {"at", FormatRfc3339Ms(r.last_drop->at_ms)}};
  }
  o["next_drop"] = nullptr;
  if (r.next_drop) {
    o["next_drop"] =
        json::object{{"day", FormatDay(r.next_drop->day)},
                     {"reason", r.next_drop->reason},
                     {"due", r.next_drop->due_ms ? json::value(FormatRfc3339Ms(r.next_drop->due_ms))
                                                 : json::value(nullptr)}};
  }
  if (!r.last_error.empty()) o["last_error"] = r.last_error;
  return o;
}

}  // namespace

json::value ServerStatus::PartitionsJson(std::uint64_t& events, std::uint64_t& bytes) const {
  std::vector<storage::PartitionInfo> parts = src_.store.Partitions();
  std::sort(parts.begin(), parts.end(), [](const auto& a, const auto& b) { return a.day > b.day; });
  std::map<std::int64_t, std::uint64_t> per_day;
  bool counted = false;
  if (!parts.empty()) {
    const query::Node all = query::Node::MatchAll();
    storage::SearchRequest req;
    req.query = &all;
    req.from = DayStart(parts.back().day);
    req.to = DayStart(parts.front().day + 1);
    req.deadline = storage::Clock::now() + kCountDeadline;
    storage::HistogramSpec spec;
    spec.interval = kMsPerDay;
    if (auto table = src_.store.Histogram(req, spec); table.ok()) {
      counted = true;
      for (const auto& b : table->buckets) per_day[DayOf(b.start)] += b.total.count;
    }
  }
  json::array out;
  for (const auto& p : parts) {
    json::object o{{"day", FormatDay(p.day)}, {"bytes", p.bytes}};
    if (counted) {
      o["events"] = per_day[p.day];
      events += per_day[p.day];
    } else {
      o["events"] = nullptr;  // the count timed out or failed
    }
    bytes += p.bytes;
    out.push_back(std::move(o));
  }
  return out;
}

json::value ServerStatus::ConfigSummary() const {
  const Config& c = src_.config;
  return json::object{
      {"listen", c.listen},
      {"beats_listen", c.beats_listen},
      {"data_dir", c.data_dir},
      {"tls", !c.tls_cert.empty()},
      {"beats_client_certs", !c.tls_client_ca.empty()},
      {"threads", c.threads},
      {"sync", c.sync},
      {"max_body_bytes", c.max_body_bytes},
      {"max_search_body_bytes", c.max_search_body_bytes},
      {"sqlite_memory_mib", c.sqlite_memory_mib},
      {"max_event_bytes", c.max_event_bytes},
      {"queue_bytes", c.queue_bytes},
      {"query_timeout_ms", c.query_timeout_ms},
      {"read_timeout_s", c.read_timeout_s},
      {"es_version", c.es_version},
      {"beats_max_window", c.beats_max_window},
      // The rules file's path only: its contents may name secrets.
      {"redaction", json::object{{"enabled", !c.no_redaction}, {"rules_file", c.redaction_rules}}},
      {"context_scope", c.context_scope},
      {"tail_queue_bytes", c.tail_queue_bytes},
      {"max_tails", c.max_tails},
  };
}

std::string ServerStatus::StatusJson() const {
  const double uptime = UptimeSeconds();
  const storage::WriterStats w = src_.store.writer_stats();
  std::uint64_t events = 0, bytes = 0;
  json::value partitions = PartitionsJson(events, bytes);
  const std::size_t partition_count = partitions.as_array().size();
  const double minute = std::clamp(uptime, 1.0, 60.0);
  const TimeMs started_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(started_wall_.time_since_epoch())
          .count();
  json::object o{
      {"version", kVersion},
      {"started_at", FormatRfc3339Ms(started_ms)},
      {"uptime_seconds", static_cast<std::uint64_t>(uptime)},
      {"listen", json::object{{"http", http_addr_},
                              {"beats", beats_addr_.empty() ? json::value(nullptr)
                                                            : json::value(beats_addr_)}}},
      {"partitions", std::move(partitions)},
      {"totals",
       json::object{{"partitions", partition_count}, {"events", events}, {"bytes", bytes}}},
      {"ingest", json::object{{"events_since_start", w.committed_events},
                              {"events_last_minute", w.events_last_minute},
                              {"events_per_second_last_minute",
                               static_cast<double>(w.events_last_minute) / minute},
                              {"events_per_second_since_start",
                               static_cast<double>(w.committed_events) / std::max(uptime, 1e-3)},
                              {"queued_events", w.queued_events},
                              {"queued_bytes", w.queued_bytes},
                              {"queue_limit_bytes", w.max_queue_bytes},
                              {"disk_full", DiskFullJson(w)}}},
      {"connections", json::object{{"http", src_.sessions.size()},
                                   {"beats", src_.beats.active_connections.load()},
                                   {"tails", src_.tails.subscribers()}}},
      {"config", ConfigSummary()},
      {"retention", RetentionJson(src_.store.Retention())},
      {"compaction", CompactionJson(src_.store.Compaction())},
  };
  for (const auto& [name, render] : sections_) o[name] = render();
  return json::serialize(o);
}

}  // namespace dashcam::server
