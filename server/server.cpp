#include "server/server.h"

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "server/http_listener.h"
#include "server/router.h"
#include "storage/sqlite_store.h"

namespace dashcam::server {
namespace {

namespace asio = boost::asio;

constexpr auto kDrainDeadline = std::chrono::seconds(30);

TimeMs WallClockMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

storage::SqliteStoreOptions StoreOptions(const Config& c) {
  storage::SqliteStoreOptions o;
  o.data_dir = c.data_dir;
  o.writer.max_queue_bytes = c.queue_bytes;
  o.writer.partition.sync =
      c.sync == "normal" ? storage::SyncMode::kNormal : storage::SyncMode::kFull;
  o.writer.test_commit_delay_ms = c.test_commit_delay_ms;
  return o;
}

void LogConfig(const Log& log, const Config& c) {
  log.Info("starting", {{"version", "0.1.0"},
                        {"listen", c.listen},
                        {"data_dir", c.data_dir},
                        {"threads", c.threads},
                        {"sync", c.sync},
                        {"max_body_bytes", static_cast<std::uint64_t>(c.max_body_bytes)},
                        {"queue_bytes", static_cast<std::uint64_t>(c.queue_bytes)}});
}

// Waits for the first signal, drains, then stops the io_context. A second
// signal ends the process at once.
asio::awaitable<void> DrainOnSignal(asio::io_context& ioc, asio::signal_set& signals,
                                    HttpListener& listener, SessionRegistry& registry,
                                    const Log& log) {
  boost::system::error_code ec;
  const int sig = co_await signals.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  if (ec) co_return;
  log.Info("draining", {{"signal", sig == SIGINT ? "SIGINT" : "SIGTERM"},
                        {"connections", static_cast<std::uint64_t>(registry.size())}});
  signals.async_wait([&log](const boost::system::error_code& e, int) {
    if (e) return;
    log.Warn("exit_now", {{"reason", "second signal"}});
    std::_Exit(2);
  });
  listener.Stop();
  registry.Drain();
  const auto deadline = std::chrono::steady_clock::now() + kDrainDeadline;
  asio::steady_timer timer(ioc);
  while (registry.size() > 0 && std::chrono::steady_clock::now() < deadline) {
    timer.expires_after(std::chrono::milliseconds(10));
    co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  }
  if (registry.size() > 0) {
    log.Warn("drain_deadline", {{"connections", static_cast<std::uint64_t>(registry.size())}});
  }
  signals.cancel();
  ioc.stop();
}

}  // namespace

int RunServer(const Config& config, const Log& log) {
  LogConfig(log, config);
  HostPort where;
  if (!SplitHostPort(config.listen, where)) {
    log.Error("bad_config", {{"error", "--listen must be host:port"}, {"listen", config.listen}});
    return 2;
  }
  auto store = storage::SqliteStore::Open(StoreOptions(config), log);
  if (!store.ok()) {
    log.Error("storage_open_failed", {{"error", store.status().ToString()}});
    return 1;
  }
  asio::io_context ioc(static_cast<int>(config.threads));
  asio::thread_pool workers(config.threads);
  ingest::ParserPool parsers(ingest::DocumentLimits{});
  ingest::IngestContext ingest_ctx{
      **store,
      workers.get_executor(),
      parsers,
      log,
      ingest::IngestOptions{config.max_body_bytes, {config.max_event_bytes}},
      WallClockMs};
  api::ApiContext api_ctx{**store,
                          workers.get_executor(),
                          log,
                          std::chrono::milliseconds(config.query_timeout_ms),
                          config.es_version,
                          WallClockMs};
  Router router(ingest_ctx, api_ctx);
  HttpLimits limits;
  limits.max_body_bytes = config.max_body_bytes;
  limits.read_timeout = std::chrono::seconds(config.read_timeout_s);
  SessionRegistry registry;
  HttpListener listener(ioc, router, limits, registry, log);
  if (auto s = listener.Bind(where); !s.ok()) {
    log.Error("listen_failed", {{"error", s.ToString()}});
    return 1;
  }
  const auto ep = listener.local_endpoint();
  log.Info("listening", {{"addr", fmt::format("{}:{}", ep.address().to_string(), ep.port())}});

  asio::signal_set signals(ioc, SIGINT, SIGTERM);
  asio::co_spawn(ioc, DrainOnSignal(ioc, signals, listener, registry, log), asio::detached);
  listener.Start();
  std::vector<std::thread> threads;
  for (unsigned i = 1; i < config.threads; ++i) threads.emplace_back([&ioc] { ioc.run(); });
  ioc.run();
  for (auto& t : threads) t.join();
  workers.join();
  (*store)->Close();
  log.Info("stopped", {});
  return 0;
}

}  // namespace dashcam::server
