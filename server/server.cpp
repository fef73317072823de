#include "server/server.h"

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <memory>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "api/context_handler.h"
#include "api/tail_hub.h"
#include "ingest/ingest_metrics.h"
#include "ingest/insight_detectors.h"
#include "ingest/redactor.h"
#include "ingest/training_anomalies.h"
#include "server/auth_gate.h"
#include "server/beats_listener.h"
#include "server/http_listener.h"
#include "server/listen_guard.h"
#include "server/router.h"
#include "server/server_status.h"
#include "server/tls_context.h"
#include "server/tls_handshake.h"
#include "server/version.h"
#include "server/worker_pool.h"
#include "storage/clickhouse/ch_options.h"
#include "storage/clickhouse/ch_store.h"
#include "storage/metrics.h"
#include "storage/sqlite_memory.h"
#include "storage/sqlite_store.h"

namespace dashcam::server {
namespace {

namespace asio = boost::asio;

constexpr auto kDrainDeadline = std::chrono::seconds(30);

storage::SqliteStoreOptions StoreOptions(const Config& c, Metrics& metrics) {
  storage::SqliteStoreOptions o;
  o.retention.max_age_days = c.retention_days;
  o.retention.max_disk_bytes = c.max_disk_bytes;
  o.retention.check_period = std::chrono::milliseconds(c.test_retention_check_ms);
  const auto compact_after = ParseDurationMs(c.compact_after);
  o.compaction.enabled = compact_after.has_value();
  if (compact_after) o.compaction.quiet_period = std::chrono::milliseconds(*compact_after);
  o.compaction.check_period = std::chrono::milliseconds(c.test_compaction_check_ms);
  o.now = WallClockMs;
  o.metrics = &metrics;
  o.data_dir = c.data_dir;
  o.writer.max_queue_bytes = c.queue_bytes;
  o.writer.partition.sync =
      c.sync == "normal" ? storage::SyncMode::kNormal : storage::SyncMode::kFull;
  o.writer.test_commit_delay_ms = c.test_commit_delay_ms;
  o.writer.partition.test_quota_file = c.test_disk_quota_file;
  o.writer.partition.test_two_column_index = c.test_two_column_index;
  o.writer.partition.compression.sample_events = c.compress_after;
  o.compaction.steps.day_dictionary_events = c.test_day_dictionary_events;
  o.compaction.steps.drop_positions = c.compacted_positions == "drop";
  o.writer.metrics = &metrics;
  o.search_helpers = static_cast<unsigned>(c.search_helpers);
  o.helper_thread_start = [nice = c.query_nice] { LowerThisThreadPriority(nice); };
  return o;
}

// The store --storage names: ClickHouse for a clickhouse:// URL, else the
// SQLite partitions in --data-dir.
Result<std::unique_ptr<storage::EventStore>> OpenStore(const Config& c, Metrics& metrics,
                                                       const Log& log) {
  if (storage::clickhouse::IsClickHouseUrl(c.storage)) {
    auto cluster = storage::clickhouse::ParseClickHouseUrl(c.storage);
    if (!cluster.ok()) return cluster.status();
    const storage::SqliteStoreOptions local = StoreOptions(c, metrics);
    storage::clickhouse::ChStoreOptions o;
    o.cluster = std::move(*cluster);
    o.max_queued_bytes = c.queue_bytes;
    o.allow_partial = c.allow_partial;
    o.retention = local.retention;
    o.now = local.now;
    o.metrics = local.metrics;
    auto store = storage::clickhouse::ClickHouseStore::Open(std::move(o), log);
    if (!store.ok()) return store.status();
    return std::unique_ptr<storage::EventStore>(std::move(*store));
  }
  if (!c.storage.empty() && c.storage != "sqlite") {
    return Status::InvalidArgument("--storage must be sqlite or a clickhouse:// URL, not " +
                                   c.storage);
  }
  auto store = storage::SqliteStore::Open(StoreOptions(c, metrics), log);
  if (!store.ok()) return store.status();
  return std::unique_ptr<storage::EventStore>(std::move(*store));
}

void LogConfig(const Log& log, const Config& c) {
  log.Info("starting", {{"version", kVersion},
                        {"listen", c.listen},
                        {"beats_listen", c.beats_listen},
                        {"data_dir", c.data_dir},
                        {"storage", c.storage},
                        {"threads", c.threads},
                        {"sync", c.sync},
                        {"compress_after", static_cast<std::uint64_t>(c.compress_after)},
                        {"redaction", !c.no_redaction},
                        {"auth_file", c.auth_file},
                        {"max_body_bytes", static_cast<std::uint64_t>(c.max_body_bytes)},
                        {"queue_bytes", static_cast<std::uint64_t>(c.queue_bytes)},
                        {"retention_days", c.retention_days},
                        {"max_disk_bytes", c.max_disk_bytes},
                        {"compact_after", c.compact_after},
                        {"compacted_positions", c.compacted_positions}});
}

// The redactor the configuration asks for; null with --no-redaction.
Result<std::unique_ptr<ingest::Redactor>> MakeRedactor(const Config& c, Metrics& metrics,
                                                       const Log& log) {
  if (c.no_redaction) {
    log.Warn("redaction_disabled",
             {{"reason", "--no-redaction: tokens, passwords and keys are stored as sent"}});
    return std::unique_ptr<ingest::Redactor>();
  }
  ingest::RedactionConfig rc;
  if (!c.redaction_rules.empty()) {
    auto loaded = ingest::LoadRedactionConfig(c.redaction_rules);
    if (!loaded.ok()) return loaded.status();
    rc = std::move(*loaded);
  }
  auto r = ingest::Redactor::Create(rc, &metrics);
  if (!r.ok()) return r.status();
  log.Info("redaction", {{"rules", static_cast<std::uint64_t>((*r)->Describe().size())},
                         {"rules_file", c.redaction_rules}});
  return r;
}

// Waits for the first signal, drains, then stops the io_context. A second
// signal ends the process at once.
asio::awaitable<void> DrainOnSignal(asio::io_context& ioc, asio::signal_set& signals,
                                    HttpListener& listener, SessionRegistry& registry,
                                    BeatsListener* beats, const Log& log) {
  boost::system::error_code ec;
  const int sig = co_await signals.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  if (ec) co_return;
  log.Info("draining",
           {{"signal", sig == SIGINT ? "SIGINT" : "SIGTERM"},
            {"connections", static_cast<std::uint64_t>(registry.size())},
            {"beats_connections",
             static_cast<std::uint64_t>(beats ? beats->active_sessions() : std::size_t{0})}});
  signals.async_wait([&log](const boost::system::error_code& e, int) {
    if (e) return;
    log.Warn("exit_now", {{"reason", "second signal"}});
    std::_Exit(2);
  });
  listener.Stop();
  registry.Drain();
  if (beats) beats->Drain();  // Beats sessions ACK their complete windows, then close
  const auto busy = [&] {
    return registry.size() + (beats ? beats->active_sessions() : std::size_t{0});
  };
  const auto deadline = std::chrono::steady_clock::now() + kDrainDeadline;
  asio::steady_timer timer(ioc);
  while (busy() > 0 && std::chrono::steady_clock::now() < deadline) {
    timer.expires_after(std::chrono::milliseconds(10));
    co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  }
  if (busy() > 0) {
    log.Warn("drain_deadline", {{"connections", static_cast<std::uint64_t>(busy())}});
  }
  signals.cancel();
  ioc.stop();
}

// Binds the Beats listener and logs its address ("beats_listening").
Status BindBeats(BeatsListener& beats, const HostPort& where, const Log& log) {
  if (auto s = beats.Bind(where); !s.ok()) return s;
  const auto ep = beats.local_endpoint();
  log.Info("beats_listening",
           {{"addr", fmt::format("{}:{}", ep.address().to_string(), ep.port())}});
  return Status::Ok();
}

api::TailOptions TailOptionsFrom(const Config& c) {
  api::TailOptions o;
  o.queue_bytes = c.tail_queue_bytes;
  o.max_tails = c.max_tails;
  o.query_timeout = std::chrono::milliseconds(c.query_timeout_ms);
  return o;
}

ingest::BeatsOptions BeatsOptionsFrom(const Config& c) {
  ingest::BeatsOptions o;
  o.max_window = c.beats_max_window;
  o.max_event_bytes = c.max_event_bytes;
  return o;
}

FailureLimiterOptions FailureLimitsFrom(const Config& c) {
  FailureLimiterOptions o;
  o.burst = c.auth_failure_burst;
  o.refill = std::chrono::milliseconds(c.auth_failure_refill_ms);
  return o;
}

// The exit code when the listeners may not open as configured
// (server/listen_guard.h); nullopt when they may.
std::optional<int> CheckListeners(const Config& c, const HostPort& http, const HostPort& beats,
                                  const Log& log) {
  std::optional<HostPort> beats_on;
  if (!c.beats_listen.empty()) beats_on = beats;
  const ListenerAuth auth{!c.auth_file.empty(), !c.tls_client_ca.empty()};
  if (auto problem = OpenListenerProblem(http, beats_on, auth, c.insecure_allow_open)) {
    log.Error("bad_config", {{"error", *problem}});
    return 2;
  }
  for (const auto& exposed : UnauthenticatedExposures(http, beats_on, auth)) {
    log.Warn("insecure_open",
             {{"listener", exposed},
              {"reason", "--insecure-allow-open: anyone who can reach it needs no credentials"}});
  }
  if (auth.http_keys && c.tls_cert.empty() && !IsLoopbackHost(http.host)) {
    log.Warn("cleartext_keys", {{"listener", "--listen " + http.host},
                                {"reason",
                                 "API keys and logs cross the network unencrypted: "
                                 "give --tls-cert and --tls-key"}});
  }
  return std::nullopt;
}

}  // namespace

int RunServer(const Config& config, const Log& log) {
  LogConfig(log, config);
  HostPort where;
  if (!SplitHostPort(config.listen, where)) {
    log.Error("bad_config", {{"error", "--listen must be host:port"}, {"listen", config.listen}});
    return 2;
  }
  HostPort beats_where;
  if (!config.beats_listen.empty() && !SplitHostPort(config.beats_listen, beats_where)) {
    log.Error("bad_config", {{"error", "--beats-listen must be host:port or empty"},
                             {"beats_listen", config.beats_listen}});
    return 2;
  }
  if (auto problem = CheckListeners(config, where, beats_where, log)) return *problem;
  TlsSetup http_tls, beats_tls;
  if (!config.tls_cert.empty()) {
    const TlsFiles files{config.tls_cert, config.tls_key, config.tls_client_ca};
    auto http_ctx = MakeServerTlsContext(files, false);
    auto beats_ctx = http_ctx.ok() ? MakeServerTlsContext(files, !files.client_ca.empty())
                                   : Result<std::shared_ptr<asio::ssl::context>>(http_ctx.status());
    if (!beats_ctx.ok()) {
      log.Error("bad_config", {{"error", beats_ctx.status().message()}});
      return 2;
    }
    http_tls.context = std::move(*http_ctx);
    beats_tls.context = std::move(*beats_ctx);
    beats_tls.handshake_timeout =
        std::min(beats_tls.handshake_timeout, std::chrono::seconds(config.read_timeout_s));
    log.Info("tls", {{"cert", config.tls_cert},
                     {"client_ca", config.tls_client_ca},
                     {"beats_client_certs", !config.tls_client_ca.empty()}});
  }
  std::unique_ptr<ApiKeySet> keys;
  if (!config.auth_file.empty()) {
    auto loaded = ApiKeySet::Load(config.auth_file);
    if (!loaded.ok()) {
      log.Error("bad_config", {{"error", loaded.status().message()}});
      return 2;
    }
    keys = std::move(*loaded);
    log.Info("auth",
             {{"keys", static_cast<std::uint64_t>(keys->size())}, {"auth_file", config.auth_file}});
  }
  Metrics metrics;
  ingest::RegisterIngestMetrics(metrics);
  TlsHandshakeReport http_tls_report("http", metrics, log), beats_tls_report("beats", metrics, log);
  http_tls.report = &http_tls_report;
  beats_tls.report = &beats_tls_report;
  // Made before the store's first connection; destroyed after its last.
  auto sqlite_memory = storage::SqliteMemory::Configure(config.sqlite_memory_mib << 20);
  if (!sqlite_memory.ok()) {
    log.Error("storage_open_failed", {{"error", sqlite_memory.status().ToString()}});
    return 1;
  }
  auto store = OpenStore(config, metrics, log);
  if (!store.ok()) {
    log.Error("storage_open_failed", {{"error", store.status().ToString()}});
    return 1;
  }
  auto redactor = MakeRedactor(config, metrics, log);
  if (!redactor.ok()) {
    log.Error("bad_config", {{"error", redactor.status().message()}});
    return 2;
  }
  asio::io_context ioc(static_cast<int>(config.threads));
  // Ingest's CPU work and queries' apart (server/worker_pool.h).
  WorkerPool ingest_workers(config.threads, 0);
  WorkerPool query_workers(config.query_threads, config.query_nice);
  std::unique_ptr<ingest::InsightDetectors> detectors;
  // Per-run loss/grad-norm history, shared by every connection (bounded LRU).
  std::unique_ptr<ingest::TrainingAnomalies> anomalies;
  if (!config.no_detectors) {
    detectors = std::make_unique<ingest::InsightDetectors>();
    anomalies = std::make_unique<ingest::TrainingAnomalies>();
  }
  ingest::ParserPool parsers(ingest::DocumentLimits{}, redactor->get(), detectors.get(),
                             anomalies.get());
  ingest::IngestContext ingest_ctx{
      **store,
      ingest_workers.executor(),
      parsers,
      log,
      ingest::IngestOptions{config.max_body_bytes, {config.max_event_bytes}},
      WallClockMs,
      metrics,
      redactor->get()};
  api::TailHub tails(**store, query_workers.executor(), log, metrics, TailOptionsFrom(config));
  api::ApiContext api_ctx{**store,
                          query_workers.executor(),
                          log,
                          std::chrono::milliseconds(config.query_timeout_ms),
                          config.es_version,
                          WallClockMs};
  auto scopes = api::ParseContextScopes(config.context_scope);
  if (auto* err = std::get_if<std::string>(&scopes)) {
    log.Error("bad_config", {{"error", *err}});
    return 2;
  }
  api_ctx.context_scopes = std::move(std::get<0>(scopes));
  api_ctx.tails = &tails;
  api_ctx.training.incident_gap_ms = ParseDurationMs(config.incident_gap).value_or(5 * 60'000);
  api_ctx.training.stall_after_ms = ParseDurationMs(config.stall_after).value_or(10 * 60'000);
  api_ctx.training.run_link = config.run_link;
  ingest::BeatsMetrics beats_metrics;
  std::unique_ptr<AuthGate> auth;
  if (keys) {
    auth = std::make_unique<AuthGate>(std::move(keys), FailureLimitsFrom(config), metrics,
                                      ingest_workers.executor(), log);
  }
  SessionRegistry registry;
  ServerStatus status({config, **store, metrics, beats_metrics, tails, registry, **sqlite_memory});
  OpsEndpoints ops{[&status] { return status.Ready(); }, [&status] { return status.StatusJson(); },
                   &metrics};
  Router router(
      ingest_ctx, api_ctx, [&status] { return status.MetricsText(); }, std::move(ops), auth.get());
  HttpLimits limits;
  limits.max_body_bytes = config.max_body_bytes;
  limits.max_search_body_bytes = config.max_search_body_bytes;
  limits.read_timeout = std::chrono::seconds(config.read_timeout_s);
  HttpListener listener(ioc, router, limits, registry, http_tls.context ? &http_tls : nullptr, log);
  if (auto s = listener.Bind(where); !s.ok()) {
    log.Error("listen_failed", {{"error", s.ToString()}});
    return 1;
  }
  ingest::BeatsContext beats_ctx{**store,
                                 ingest_workers.executor(),
                                 parsers,
                                 log,
                                 BeatsOptionsFrom(config),
                                 WallClockMs,
                                 beats_metrics,
                                 &metrics};
  std::unique_ptr<BeatsListener> beats;
  if (!config.beats_listen.empty()) {
    beats = std::make_unique<BeatsListener>(ioc, beats_ctx,
                                            beats_tls.context ? &beats_tls : nullptr, log);
    if (auto s = BindBeats(*beats, beats_where, log); !s.ok()) {
      log.Error("listen_failed", {{"error", s.ToString()}});
      return 1;
    }
  }
  // Before "listening": whoever starts the server (a test, a supervisor)
  // may stop it as soon as it reads that line, and a SIGTERM that came
  // before the handler would end the process without draining (exit 143).
  asio::signal_set signals(ioc, SIGINT, SIGTERM);
  asio::co_spawn(ioc, DrainOnSignal(ioc, signals, listener, registry, beats.get(), log),
                 asio::detached);
  const auto ep = listener.local_endpoint();
  const std::string addr = fmt::format("{}:{}", ep.address().to_string(), ep.port());
  log.Info("listening", {{"addr", addr}});
  status.SetListenAddresses(
      addr, beats ? fmt::format("{}:{}", beats->local_endpoint().address().to_string(),
                                beats->local_endpoint().port())
                  : "");
  listener.Start();
  if (beats) beats->Start();
  std::vector<std::thread> threads;
  for (unsigned i = 1; i < config.threads; ++i) threads.emplace_back([&ioc] { ioc.run(); });
  ioc.run();
  for (auto& t : threads) t.join();
  query_workers.Join();
  ingest_workers.Join();
  (*store)->Close();
  log.Info("stopped", {});
  return 0;
}

}  // namespace dashcam::server
