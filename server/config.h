// Config: every setting of the server, from flags, environment variables
// (DASHCAM_<FLAG>) or a TOML file (--config; keys are the flag names without
// "--", deploy/dashcam.example.toml lists them). Precedence: flags >
// environment > file > defaults. `dashcam --help` lists them all.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "storage/compaction_types.h"

namespace dashcam::server {

struct Config {
  std::string listen = "127.0.0.1:9200";  // host:port; port 0 picks a free one
  std::string data_dir = "./data";
  // "sqlite" (or empty): the day partitions in data_dir; a clickhouse:// URL
  // (storage/clickhouse/ch_options.h): a ClickHouse cluster.
  std::string storage = "sqlite";
  bool allow_partial = false;  // ClickHouse: searches skip shards that are down
  unsigned threads = 0;        // I/O threads; 0: number of cores
  unsigned query_threads = 0;  // query workers; 0: threads - 1, at least 2 (server/worker_pool.h)
  int query_nice = 0;          // nice increment of the query workers
  // Threads that read the day partitions of one search beside its own
  // thread while no more searches run than there are helpers
  // (storage/search_helpers.h); -1: one fewer than --threads, at most 7.
  int search_helpers = -1;
  std::size_t max_body_bytes = 100u << 20;  // per request, compressed and decompressed
  // _search/_count bodies, parsed whole into JSON (router.h)
  std::size_t max_search_body_bytes = 1u << 20;
  std::size_t max_event_bytes = 1u << 20;  // per document
  std::size_t queue_bytes = 64u << 20;     // events waiting for the writer
  // SQLite's heap, every partition's connections together (mostly page
  // caches), MiB: a soft limit; 0: none (storage/sqlite_db.h).
  std::size_t sqlite_memory_mib = 64;
  std::string sync = "full";  // SQLite synchronous: full | normal
  // Documents a day stores as they are (the compression dictionary's
  // samples) before it compresses them; 0: never compress.
  std::size_t compress_after = 2000;
  std::uint32_t query_timeout_ms = 10'000;
  std::uint32_t read_timeout_s = 60;            // idle keep-alive and each request read
  std::string es_version = "8.17.0";            // version reported to Elasticsearch clients
  std::string beats_listen = "127.0.0.1:5044";  // Beats protocol host:port; empty: off
  std::size_t beats_max_window = 10000;         // largest Beats window (events) accepted
  std::string redaction_rules;  // YAML rules file (ingest/redaction_rules.h); empty: defaults only
  bool no_redaction = false;    // store secrets as sent (logged as a warning)
  bool no_detectors = false;    // no insight.*, train.*, run.* fields at ingest (ingest/)
  // GET /api/v1/context's source rules (api/context_handler.h).
  std::string context_scope = "host.name+log.file.path,container.id,agent.id,host.name,_index";
  // Training insights (api/training_options.h): durations like "90s", "5m".
  std::string incident_gap = "5m";          // events this close fold into one incident
  std::string stall_after = "10m";          // a run silent this long is stalled
  std::string run_link;                     // URL template with {run.id}; empty: no links
  std::size_t tail_queue_bytes = 4u << 20;  // unsent live-tail events per client
  std::size_t max_tails = 1000;             // concurrent live tails
  std::uint32_t retention_days = 0;         // drop day partitions older than this; 0: keep
  std::uint64_t max_disk_bytes = 0;         // drop the oldest partitions beyond this; 0: no limit
  std::string compact_after = "10m";        // quiet time before a past day is compacted; "off"
  // "drop": a compacted day's index keeps no positions (storage::CompactionSteps)
  std::string compacted_positions = "keep";
  bool debug = false;
  int test_commit_delay_ms = 0;                     // hidden: slows every commit (tests)
  std::uint32_t test_retention_check_ms = 60'000;   // hidden: retention's check period
  std::uint32_t test_compaction_check_ms = 60'000;  // hidden: compaction's check period
  // hidden: the fewest events of a day whose documents compaction encodes
  // anew (storage::CompactionSteps::day_dictionary_events)
  std::uint64_t test_day_dictionary_events = storage::CompactionSteps{}.day_dictionary_events;
  // hidden: new day files get the index of versions before 10, as an older
  // dashcam made them (storage::PartitionOptions::test_two_column_index)
  bool test_two_column_index = false;
  // hidden: a file holding a byte cap for each partition file, re-read before
  // every write, to simulate a full disk (storage/partition.h)
  std::string test_disk_quota_file;
  // Authentication (server/auth_gate.h, server/listen_guard.h).
  std::string auth_file;             // YAML API keys (server/api_keys.h); empty: no auth
  bool insecure_allow_open = false;  // allow non-loopback listeners without auth
  unsigned auth_failure_burst = 10;  // failed attempts per client address at once
  std::uint32_t auth_failure_refill_ms = 6'000;  // then one more per this
  // TLS for both listeners (server/tls_context.h); empty: plain TCP.
  std::string tls_cert;       // PEM certificate chain
  std::string tls_key;        // PEM private key
  std::string tls_client_ca;  // PEM CA: Beats clients must present a certificate it signed
};

// What to do after parsing the command line.
struct ExitNow {
  int code = 0;        // 0 after --help/--version; 2 for any bad flag, file or value
  std::string output;  // to print (stdout when code is 0, else stderr)
};

std::variant<Config, ExitNow> ParseCommandLine(int argc, char** argv);

// host and port of `listen`; nullopt-like failure reported as empty host.
struct HostPort {
  std::string host;
  std::uint16_t port = 0;
};
bool SplitHostPort(const std::string& listen, HostPort& out);

// A duration: a whole number followed by ms, s, m, h or d ("90s", "10m");
// nullopt when it is not one or is not positive.
std::optional<std::int64_t> ParseDurationMs(std::string_view text);

}  // namespace dashcam::server
