#include "server/config.h"

#include <charconv>
#include <cstdlib>
#include <memory>
#include <thread>

#include <CLI/CLI.hpp>

#include "server/version.h"

namespace dashcam::server {
namespace {

// Reads --config as CLI11's TOML reader does, then applies our precedence.
// CLI11 reads the file before the environment and only fills options still
// unset from the environment, so a file would beat DASHCAM_* variables; we
// want flags > environment > file > defaults, so a key whose option's
// variable is set (non-empty, as CLI11 itself requires) is dropped here. It
// also rejects what dashcam cannot mean: a [section] (there are none) or a key
// that names no option, with a message naming the key.
class ConfigFile : public CLI::ConfigTOML {
 public:
  explicit ConfigFile(const CLI::App& app) : app_(app) {}

  std::vector<CLI::ConfigItem> from_config(std::istream& input) const override {
    std::vector<CLI::ConfigItem> kept;
    for (auto& item : CLI::ConfigTOML::from_config(input)) {
      if (!item.parents.empty()) {
        throw CLI::ConfigError(FileName() + ": unknown section [" + item.parents.front() +
                               "]: dashcam's settings are top-level keys");
      }
      const CLI::Option* option = app_.get_option_no_throw("--" + item.name);
      if (option == nullptr) {
        throw CLI::ConfigError(FileName() + ": unknown setting '" + item.name +
                               "': keys are the option names of `dashcam --help` without "
                               "the leading --");
      }
      const char* env =
          option->get_envname().empty() ? nullptr : std::getenv(option->get_envname().c_str());
      if (env == nullptr || *env == '\0') kept.push_back(std::move(item));
    }
    return kept;
  }

 private:
  // The command line is parsed before the file is read, so --config is known.
  std::string FileName() const { return app_.get_config_ptr()->as<std::string>(); }

  const CLI::App& app_;
};

// CLI::ExistingFile, except that "" is accepted: it is these options'
// default (no file), and a config file spells the default that way.
CLI::Validator ExistingFileOrNone() {
  return CLI::Validator(
      [](std::string& path) { return path.empty() ? std::string() : CLI::ExistingFile(path); },
      "FILE");
}

CLI::Validator Duration() {
  return CLI::Validator(
      [](std::string& text) {
        return ParseDurationMs(text) ? std::string()
                                     : "'" + text + "' is not a duration like 90s, 10m or 2h";
      },
      "DURATION");
}

}  // namespace

std::optional<std::int64_t> ParseDurationMs(std::string_view text) {
  std::int64_t n = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || end == text.data() || n <= 0) return std::nullopt;
  const std::string_view unit(end, static_cast<std::size_t>(text.data() + text.size() - end));
  std::int64_t scale = 0;
  if (unit == "ms") scale = 1;
  if (unit == "s") scale = 1000;
  if (unit == "m") scale = 60'000;
  if (unit == "h") scale = 3'600'000;
  if (unit == "d") scale = 86'400'000;
  if (scale == 0 || n > std::int64_t{1} << 40) return std::nullopt;  // past 30 years: a typo
  return n * scale;
}

std::variant<Config, ExitNow> ParseCommandLine(int argc, char** argv) {
  Config c;
  CLI::App app{
      "dashcam: a log server for GPU training fleets (Elasticsearch _bulk in, "
      "Lucene-style search out, SQLite FTS5 underneath)",
      "dashcam"};
  app.set_version_flag("--version", std::string("dashcam ") + kVersion);
  // No environment variable for the file itself: CLI11 reads the file before
  // the environment. Keys are option names without "--" (see
  // deploy/dashcam.example.toml); precedence is in ConfigFile above.
  app.set_config("--config", "",
                 "TOML file of settings (keys are these options without --); "
                 "environment variables and flags override it");
  app.config_formatter(std::make_shared<ConfigFile>(app));
  app.allow_config_extras(CLI::config_extras_mode::error);
  app.add_option("--listen", c.listen, "HTTP listen address host:port (port 0: any free port)")
      ->envname("DASHCAM_LISTEN")
      ->capture_default_str();
  app.add_option("--data-dir", c.data_dir, "Directory of the day partitions (created if missing)")
      ->envname("DASHCAM_DATA_DIR")
      ->capture_default_str();
  app.add_option("--storage", c.storage,
                 "Where events are stored: sqlite (the day partitions in --data-dir; the "
                 "default) or clickhouse://HOST:PORT[,HOST:PORT...]/DB?cluster=NAME, a ClickHouse "
                 "cluster whose tables are created when missing")
      ->envname("DASHCAM_STORAGE")
      ->capture_default_str();
  app.add_flag("--allow-partial", c.allow_partial,
               "With ClickHouse storage: while a shard is down, searches answer from the others "
               "and say \"partial\": true (by default they fail with 503)")
      ->envname("DASHCAM_ALLOW_PARTIAL");
  app.add_option("--threads", c.threads, "I/O threads; 0 means one per core")
      ->envname("DASHCAM_THREADS")
      ->capture_default_str();
  app.add_option("--query-threads", c.query_threads,
                 "Threads that run queries; 0 means one fewer than --threads, at least 2 (so that "
                 "searches leave ingest a core, and one slow search cannot hold up the others)")
      ->envname("DASHCAM_QUERY_THREADS")
      ->capture_default_str();
  app.add_option("--query-nice", c.query_nice,
                 "How much lower the scheduling priority of query work is than ingest's (a nice "
                 "increment, 0-19; 0: the same): on a dedicated log machine a higher value keeps "
                 "ingest's rate while people search")
      ->envname("DASHCAM_QUERY_NICE")
      ->check(CLI::Range(0, 19))
      ->capture_default_str();
  app.add_option("--search-helpers", c.search_helpers,
                 "Threads that read a search's day partitions beside its own thread (hits and "
                 "count), while no more searches run than there are helpers; -1 means one "
                 "fewer than --threads, at most 7; 0: none")
      ->envname("DASHCAM_SEARCH_HELPERS")
      ->check(CLI::Range(-1, 64))
      ->capture_default_str();
  app.add_option("--max-body-bytes", c.max_body_bytes,
                 "Largest request body accepted, before and after decompression (413 beyond)")
      ->envname("DASHCAM_MAX_BODY_BYTES")
      ->capture_default_str();
  app.add_option("--max-search-body-bytes", c.max_search_body_bytes,
                 "Largest body of a _search or _count request (413 beyond): it is parsed whole "
                 "into JSON, which takes several times its size in memory")
      ->envname("DASHCAM_MAX_SEARCH_BODY_BYTES")
      ->capture_default_str();
  app.add_option("--sqlite-memory-mib", c.sqlite_memory_mib,
                 "Page caches of every partition's SQLite connections together, in MiB: once "
                 "they hold it, connections reuse their cached pages; 0: no limit")
      ->envname("DASHCAM_SQLITE_MEMORY_MIB")
      ->check(CLI::Range(std::size_t{0}, std::size_t{1} << 20))
      ->capture_default_str();
  app.add_option("--max-event-bytes", c.max_event_bytes,
                 "Largest single document; larger ones are rejected per item (400)")
      ->envname("DASHCAM_MAX_EVENT_BYTES")
      ->capture_default_str();
  app.add_option("--queue-bytes", c.queue_bytes,
                 "Memory for events waiting to be committed; beyond it ingest answers 429")
      ->envname("DASHCAM_QUEUE_BYTES")
      ->capture_default_str();
  app.add_option("--sync", c.sync,
                 "SQLite synchronous mode: full (fsync every commit: survives power loss) or "
                 "normal (survives a process crash)")
      ->envname("DASHCAM_SYNC")
      ->check(CLI::IsMember({"full", "normal"}))
      ->capture_default_str();
  app.add_option("--compress-after", c.compress_after,
                 "Documents each day stores uncompressed, to train its zstd dictionary, before "
                 "compressing the rest; 0: store every document uncompressed")
      ->envname("DASHCAM_COMPRESS_AFTER")
      ->capture_default_str();
  app.add_option("--query-timeout-ms", c.query_timeout_ms, "Time budget of one query (503 beyond)")
      ->envname("DASHCAM_QUERY_TIMEOUT_MS")
      ->capture_default_str();
  app.add_option("--read-timeout-s", c.read_timeout_s,
                 "Deadline for reading a request, and for an idle keep-alive connection")
      ->envname("DASHCAM_READ_TIMEOUT_S")
      ->capture_default_str();
  app.add_option(
         "--es-version", c.es_version,
         "Elasticsearch version reported to clients (Filebeat checks it is a valid 8.x/9.x)")
      ->envname("DASHCAM_ES_VERSION")
      ->capture_default_str();
  app.add_option("--beats-listen", c.beats_listen,
                 "Beats protocol (Filebeat output.logstash) listen address host:port; "
                 "empty disables it")
      ->envname("DASHCAM_BEATS_LISTEN")
      ->capture_default_str();
  app.add_option("--beats-max-window", c.beats_max_window,
                 "Largest Beats window (events per batch) accepted; larger is a protocol error")
      ->envname("DASHCAM_BEATS_MAX_WINDOW")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1'000'000}))
      ->capture_default_str();
  app.add_option("--redaction-rules", c.redaction_rules,
                 "YAML file of redaction rules: add rules, disable defaults, mask fields")
      ->envname("DASHCAM_REDACTION_RULES")
      ->check(ExistingFileOrNone());
  app.add_flag("--no-redaction", c.no_redaction,
               "Store secrets (tokens, passwords, keys) as sent instead of masking them")
      ->envname("DASHCAM_NO_REDACTION");
  app.add_flag("--no-detectors", c.no_detectors,
               "Do not recognise GPU and training failures at ingest (no insight.* fields, "
               "no train.* metrics, no run.* identity); a client's own top-level insight "
               "field is then stored as sent")
      ->envname("DASHCAM_NO_DETECTORS");
  app.add_option("--context-scope", c.context_scope,
                 "What makes events come from the same source for /api/v1/context: rules "
                 "separated by ',', each a '+'-joined list of fields; the first rule whose "
                 "fields an event has decides")
      ->envname("DASHCAM_CONTEXT_SCOPE")
      ->capture_default_str();
  app.add_option("--incident-gap", c.incident_gap,
                 "Failures of one kind in one run (or on one host without a run) this close "
                 "to each other are one incident in /api/v1/insights (90s, 5m, 1h)")
      ->envname("DASHCAM_INCIDENT_GAP")
      ->check(Duration())
      ->capture_default_str();
  app.add_option("--stall-after", c.stall_after,
                 "A run with no line for this long and no finishing line is stalled in "
                 "/api/v1/runs (90s, 10m, 1h)")
      ->envname("DASHCAM_STALL_AFTER")
      ->check(Duration())
      ->capture_default_str();
  app.add_option("--run-link", c.run_link,
                 "URL template of a run's experiment record, shown with runs and incidents; "
                 "{run.id} is replaced by the run id (e.g. https://mlflow.example/#/runs/{run.id})")
      ->envname("DASHCAM_RUN_LINK")
      ->capture_default_str();
  app.add_option("--tail-queue-bytes", c.tail_queue_bytes,
                 "Unsent events a live tail client may fall behind by before it is "
                 "disconnected as too slow")
      ->envname("DASHCAM_TAIL_QUEUE_BYTES")
      ->check(CLI::Range(std::size_t{256} << 10, std::size_t{1} << 30))
      ->capture_default_str();
  app.add_option("--max-tails", c.max_tails, "Concurrent live tails (429 beyond)")
      ->envname("DASHCAM_MAX_TAILS")
      ->check(CLI::Range(std::size_t{0}, std::size_t{100'000}))
      ->capture_default_str();
  app.add_option("--retention-days", c.retention_days,
                 "Drop each UTC day partition once its events are this many days old "
                 "(checked at startup and every minute; today's is never dropped); 0 keeps all")
      ->envname("DASHCAM_RETENTION_DAYS")
      ->check(CLI::Range(0u, 1'000'000u))
      ->capture_default_str();
  app.add_option("--max-disk-bytes", c.max_disk_bytes,
                 "Drop the oldest day partitions while all of them take more than this many "
                 "bytes (today's is never dropped); 0 means no limit")
      ->envname("DASHCAM_MAX_DISK_BYTES")
      ->capture_default_str();
  app.add_option("--compact-after", c.compact_after,
                 "Compact each past UTC day's partition (merge its index into one segment, "
                 "return its free pages to the filesystem) once nothing has been written to it "
                 "for this long (90s, 10m, 1h); off never does")
      ->envname("DASHCAM_COMPACT_AFTER")
      ->check(CLI::IsMember({"off"}) | Duration())
      ->capture_default_str();
  app.add_option("--compacted-positions", c.compacted_positions,
                 "keep: a compacted day's index keeps its words' positions; drop: it does not "
                 "(about 60 bytes less an event), and phrases and proximity are found by their "
                 "words, then checked in each candidate's document (a common phrase ~10x slower)")
      ->envname("DASHCAM_COMPACTED_POSITIONS")
      ->check(CLI::IsMember({"keep", "drop"}))
      ->capture_default_str();
  app.add_option("--auth-file", c.auth_file,
                 "YAML file of API keys (roles ingest, read, admin; salted hashes: see "
                 "`dashcam hash-key`); every endpoint but the page and /healthz then needs a key")
      ->envname("DASHCAM_AUTH_FILE")
      ->check(ExistingFileOrNone());
  app.add_flag("--insecure-allow-open", c.insecure_allow_open,
               "Allow listening on a non-loopback address without --auth-file (and a Beats "
               "listener, which cannot authenticate, on one)")
      ->envname("DASHCAM_INSECURE_ALLOW_OPEN");
  app.add_option("--auth-failure-burst", c.auth_failure_burst,
                 "Failed authentications a client address may make at once before 429")
      ->envname("DASHCAM_AUTH_FAILURE_BURST")
      ->check(CLI::Range(1u, 1'000'000u))
      ->capture_default_str();
  app.add_option("--auth-failure-refill-ms", c.auth_failure_refill_ms,
                 "After the burst, one more failed authentication per this many ms")
      ->envname("DASHCAM_AUTH_FAILURE_REFILL_MS")
      ->check(CLI::Range(1u, 3'600'000u))
      ->capture_default_str();
  app.add_option("--tls-cert", c.tls_cert,
                 "PEM certificate chain: serve HTTPS and Beats over TLS (1.2 and newer)")
      ->envname("DASHCAM_TLS_CERT")
      ->check(ExistingFileOrNone());
  app.add_option("--tls-key", c.tls_key, "PEM private key of --tls-cert")
      ->envname("DASHCAM_TLS_KEY")
      ->check(ExistingFileOrNone());
  app.add_option("--tls-client-ca", c.tls_client_ca,
                 "PEM CA certificates: Beats clients must present a certificate signed by one "
                 "(mutual TLS, which lets the Beats listener leave loopback)")
      ->envname("DASHCAM_TLS_CLIENT_CA")
      ->check(ExistingFileOrNone());
  app.add_flag("--debug", c.debug, "Log debug events")->envname("DASHCAM_DEBUG");
  app.add_option("--test-commit-delay-ms", c.test_commit_delay_ms)->group("");  // tests only
  app.add_option("--test-retention-check-ms", c.test_retention_check_ms)
      ->check(CLI::Range(10u, 3'600'000u))
      ->group("");  // tests only
  app.add_option("--test-compaction-check-ms", c.test_compaction_check_ms)
      ->check(CLI::Range(10u, 3'600'000u))
      ->group("");  // tests only
  app.add_option("--test-day-dictionary-events", c.test_day_dictionary_events)
      ->check(CLI::PositiveNumber)
      ->group("");  // tests only
  // Tests only: new day files as a dashcam before version 10 made them.
  app.add_flag("--test-two-column-index", c.test_two_column_index)->group("");
  // Tests only: simulates a full disk (Config::test_disk_quota_file).
  app.add_option("--test-disk-quota-file", c.test_disk_quota_file)->group("");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    std::ostringstream out, err;
    const int code = app.exit(e, out, err);
    if (code == 0) return ExitNow{0, out.str()};
    // A configuration mistake exits 2 like the server's own checks, not with
    // CLI11's per-error codes (100+); the message says which.
    return ExitNow{2, err.str()};
  }
  if (c.tls_cert.empty() != c.tls_key.empty()) {
    return ExitNow{2, "--tls-cert and --tls-key go together: give both or neither\n"};
  }
  if (!c.tls_client_ca.empty() && c.tls_cert.empty()) {
    return ExitNow{2, "--tls-client-ca needs --tls-cert and --tls-key (mutual TLS is TLS)\n"};
  }
  if (c.threads == 0) c.threads = std::max(1u, std::thread::hardware_concurrency());
  if (c.query_threads == 0) c.query_threads = std::max(2u, c.threads - 1);
  if (c.search_helpers < 0) c.search_helpers = static_cast<int>(std::min(7u, c.threads - 1));
  return c;
}

bool SplitHostPort(const std::string& listen, HostPort& out) {
  const auto colon = listen.rfind(':');
  if (colon == std::string::npos || colon == 0) return false;
  std::string host = listen.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  const char* b = listen.data() + colon + 1;
  const char* e = listen.data() + listen.size();
  unsigned port = 0;
  auto [p, ec] = std::from_chars(b, e, port);
  if (ec != std::errc() || p != e || port > 65535) return false;
  out = HostPort{host, static_cast<std::uint16_t>(port)};
  return true;
}

}  // namespace dashcam::server
