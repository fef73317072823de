// dashcam_bench: end-to-end ingest and query benchmark of the real dashcam
// binary, against a plain single-threaded SQLite baseline.
//
// Phases, in order:
//   1. gen       generate --events training-log events (seeded), one hour
//                of them, or --days N days (one partition a day), a chunk
//                of ~1M at a time, and count what each query probe of
//                phase 6 must find.
//   2. baseline  insert them straight into a fresh SQLite file (see
//                sqlite_baseline.h); events/s, CPU per event and bytes/event.
//   3. bulk      build the gzip `_bulk` bodies of --batch events each
//                (before the clock starts: the client must not steal the
//                server's cores).
//                Phases 1-3 are one pass over the chunks, each timed on its
//                own part; only the bodies are kept (see PreparePhases).
//   4. server    start `<server> --listen 127.0.0.1:0 --data-dir
//                <work-dir>/data --threads <n>` (tests/common/test_server.h),
//                logs to <work-dir>/server.log, wait until it listens and
//                `GET /healthz` answers 200 (up to 30 s).
//   5. ingest    send every body over --connections keep-alive connections
//                (see bulk_load_driver.h); events/s, MB/s, latency, the
//                server's CPU per event (all threads, and its writer
//                thread's), the rate its cores could reach at that cost,
//                the server's peak RSS and bytes on disk per event.
//   6. query     the table of query_suite.h (searches of every kind,
//                histograms, facets, context), 1 warm-up + --query-runs
//                timed runs each: median ms, median server CPU ms per run,
//                the answer's total and the total the corpus implies, the
//                issue's target beside the figure where it sets one.
//  6b. export    GET /api/v1/export of every event as ndjson, csv and text,
//                read to the end: events/s, and events per second of server
//                CPU (see stream_load.h).
//   7. stop      SIGTERM, wait (30 s, then SIGKILL), report the exit status
//                and the bytes on disk once the server has closed its files.
//  7b. compacted the server again on the same data directory, compacting
//                every past day at once (as it would 10 minutes after the
//                day's last event): the seconds until it is done, the bytes
//                per event after it, and phase 6 again (`compacted.query.*`),
//                the state searches of past days are in once they settle.
//   8. beats     a fresh server and data dir; the same events over the Beats
//                protocol (see beats_load_driver.h): events/s and the ratio
//                to the _bulk figure.
//   9. redaction the CPU time of redacting every event in this process (one
//                core), then a fresh server with --no-redaction given the
//                same _bulk bodies: events/s, and what redaction costs end
//                to end against phase 5.
//  9c. detectors --detector-rounds (3) pairs of fresh servers given the same
//                _bulk bodies, alternately with --no-detectors and with the
//                detectors on: median events/s of each and the ratio.
//  10. tails     only with --tails N: the same _bulk load into two fresh
//                servers, back to back, the second with N live tails open
//                (queries cycling through a list of ten, or --tail-query for
//                all) and read by one thread: events/s and server CPU of
//                each, events delivered.
//  11. concurrency  a fresh server loaded in slices: query latency while
//                ingest runs at full speed against idle, and the ingest rate
//                while 8 clients query against the rate alone (see
//                ConcurrencyPhase).
//  12. clickhouse  a local 2-shard ClickHouse cluster (as the tests start
//                one) and a fresh server over it (--storage clickhouse://):
//                the same _bulk load, events/s beside phase 5's SQLite
//                figure, then phase 6's queries (`clickhouse.query.*`; the
//                probes this backend does not answer yet print an error),
//                and an ndjson export of every event (`clickhouse.export.*`,
//                unless --skip export).
//                Both shards share this machine's cores with dashcam, so the
//                figures say little about a real cluster.
// --baseline-only stops after 2; --dump-ndjson PATH writes the events after 1
// and stops. --skip drops phases that the query and export figures do not
// need, so a 10M-event run fits in a quarter hour on two cores:
//   --skip baseline,beats,redaction,detectors,concurrency   (also: export; tails is opt-in)
// e.g. the 10M run of README "Performance":
//   dashcam_bench --events 10000000 --days 5 --skip baseline,beats,redaction,detectors
// At the end `bench.peak_rss_mib` is this process's own peak: the gzip bodies
// (~60 bytes per event) and one chunk, or the whole corpus (~460 bytes per
// event) while phase 8 runs. A 50M-event run, as in README "Performance":
//   dashcam_bench --events 50000000 --days 25
//     --skip baseline,beats,redaction,detectors,concurrency,export
//
// Output: one metric per line, `<name> <value> <unit>` (see report.h), e.g.
//   ingest.events_per_s                          83512 events/s
// Diagnostics go to stderr.
//
// Exit status: 0 when every bulk request and query succeeded and the server
// exited with 0; 1 when the benchmark ran but something failed; 2 on bad
// flags or when a phase could not run at all.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include "ingest/document_redactor.h"
#include "ingest/redactor.h"
#include "storage/status.h"
#include "storage/writer.h"
#include "tests/bench/beats_load_driver.h"
#include "tests/bench/bulk_bodies.h"
#include "tests/bench/bulk_load_driver.h"
#include "tests/bench/event_corpus.h"
#include "tests/bench/query_latency.h"
#include "tests/bench/query_loop.h"
#include "tests/bench/query_suite.h"
#include "tests/bench/report.h"
#include "tests/bench/sqlite_baseline.h"
#include "tests/bench/stream_load.h"
#include "tests/bench/watchdog.h"
#include "tests/common/clickhouse_cluster.h"
#include "tests/common/http_client.h"
#include "tests/common/test_server.h"

namespace dashcam::bench {
namespace {

namespace fs = std::filesystem;
using testing::ExitStatus;
using testing::HttpClient;
using testing::HttpResult;
using testing::TempDir;
using testing::TestServer;
using Clock = std::chrono::steady_clock;

constexpr int kExitOk = 0;
constexpr int kExitFailures = 1;
constexpr int kExitCannotRun = 2;

constexpr int kGzipLevel = 1;  // Filebeat's default compression_level
constexpr std::chrono::seconds kHealthzTimeout{30};
constexpr std::chrono::milliseconds kHealthzPollEvery{50};
constexpr int kStopGraceSeconds = 30;
constexpr int kSearchLimit = 100;
constexpr int kSearchWarmups = 1;
constexpr size_t kLogTailBytes = 4000;
constexpr size_t kChunkEvents = 1000000;  // ~450 MB of generated events

struct BenchFlags {
  std::string server;
  int64_t events = 1000000;
  uint64_t seed = 1;
  int connections = 4;
  int batch = 1000;
  std::string work_dir;
  bool keep = false;
  bool baseline_only = false;
  std::string dump_ndjson;
  int server_threads = 2;
  std::vector<std::string> server_args;
  int stall_timeout_s = 120;
  int tails = 0;
  std::string tail_query;  // empty: cycle through kTailQueries
  int days = 0;            // 0: one hour of events (the historic default)
  int query_runs = 7;
  int detector_rounds = 3;
  std::vector<std::string> skip;  // phase names, see kSkippablePhases

  bool Skips(std::string_view phase) const {
    return std::find(skip.begin(), skip.end(), phase) != skip.end();
  }
};

constexpr int64_t kHourMs = 3600000;
constexpr int64_t kDayMs = 24 * kHourMs;

// Live tails of phase 10: what people watch while a job trains.
constexpr const char* kTailQueries[] = {"log.level:ERROR",
                                        R"("CUDA out of memory")",
                                        "user:alice",
                                        "user:zhangsan AND log.level:WARN",
                                        "host.name:gpu-node-07",
                                        "NCCL",
                                        "Xid",
                                        "cud*",
                                        "checkpoint",
                                        "log.level:WARN"};

// Describes why a phase cannot run; returns the exit code for that.
int CannotRun(std::string_view phase, const Status& status) {
  std::fprintf(stderr, "%.*s: %s\n", static_cast<int>(phase.size()), phase.data(),
               status.ToString().c_str());
  return kExitCannotRun;
}

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Sum of the sizes of the regular files under `dir`, recursively; 0 if `dir`
// does not exist. Files vanishing during the walk are skipped.
uint64_t DiskBytesUnder(const fs::path& dir) {
  std::error_code ec;
  uint64_t total = 0;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code size_ec;
    if (!it->is_regular_file(size_ec)) continue;
    uint64_t size = it->file_size(size_ec);
    if (!size_ec) total += size;
  }
  return total;
}

// Returns an exit code when the program should stop (help, bad flags).
std::optional<int> ParseFlags(int argc, char** argv, BenchFlags& flags) {
  CLI::App app{"dashcam_bench: ingest and query benchmark of the dashcam server"};
  app.add_option("--server", flags.server,
                 "dashcam binary (default: ../../server/dashcam relative to this program)");
  app.add_option("--events", flags.events, "events to generate and send")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 34));
  app.add_option("--seed", flags.seed, "generator seed");
  app.add_option("--connections", flags.connections, "keep-alive connections, one thread each")
      ->check(CLI::Range(1, 1024));
  app.add_option("--batch", flags.batch, "events per bulk request")->check(CLI::Range(1, 1000000));
  app.add_option("--work-dir", flags.work_dir,
                 "scratch directory, missing or empty (default: fresh under /tmp)");
  app.add_flag("--keep", flags.keep, "keep the work directory");
  app.add_flag("--baseline-only", flags.baseline_only, "stop after the SQLite baseline");
  app.add_option("--dump-ndjson", flags.dump_ndjson, "write the events to this file and stop");
  app.add_option("--server-arg", flags.server_args,
                 "an argument for every server the bench starts (repeatable), e.g. "
                 "--server-arg=--compress-after=0")
      ->allow_extra_args(false);
  app.add_option("--server-threads", flags.server_threads, "the server's --threads")
      ->check(CLI::Range(1, 256));
  app.add_option("--tails", flags.tails, "live tails open during a second _bulk load (0: skip)")
      ->check(CLI::Range(0, 10000));
  app.add_option("--tail-query", flags.tail_query,
                 "the query of every tail (default: ten realistic ones in turn)");
  app.add_option("--days", flags.days,
                 "spread the events over this many days (0: one hour, as before)")
      ->check(CLI::Range(0, 3650));
  app.add_option("--query-runs", flags.query_runs, "timed runs of every query (after 1 warm-up)")
      ->check(CLI::Range(1, 1000));
  app.add_option("--skip", flags.skip,
                 "phases to leave out: baseline,export,compacted,beats,redaction,detectors,"
                 "concurrency,clickhouse")
      ->delimiter(',')
      ->check(CLI::IsMember({"baseline", "export", "compacted", "beats", "redaction", "detectors",
                             "concurrency", "clickhouse"}));
  app.add_option("--detector-rounds", flags.detector_rounds,
                 "loads with detectors off and on, alternately, in phase 9c")
      ->check(CLI::Range(1, 100));
  app.add_option("--stall-timeout", flags.stall_timeout_s,
                 "seconds without progress before the server is killed")
      ->check(CLI::Range(1, 86400));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return std::nullopt;
}

// The server binary: --server, else the build tree's server/dashcam.
Result<std::string> ResolveServerBinary(const BenchFlags& flags) {
  if (!flags.server.empty()) {
    // Checked now rather than after minutes of generating and baseline work.
    if (::access(flags.server.c_str(), X_OK) != 0) {
      return Status::InvalidArgument("--server " + flags.server + " is not an executable file");
    }
    return flags.server;
  }
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  fs::path guess = fs::weakly_canonical(self.parent_path() / "../../server/dashcam", ec);
  if (!ec && fs::exists(guess, ec)) return guess.string();
  return Status::InvalidArgument("--server is required (no dashcam binary at " + guess.string() +
                                 ")");
}

testing::GeneratorOptions GeneratorOptionsOf(const BenchFlags& flags) {
  testing::GeneratorOptions options;
  options.seed = flags.seed;
  options.expected_events = flags.events;
  options.span_ms = flags.days > 0 ? flags.days * kDayMs : kHourMs;
  return options;
}

// The --events events, in chunks of about kChunkEvents: a multiple of
// --batch, so that the bodies are cut where one whole corpus would cut them.
CorpusChunks ChunksOf(const BenchFlags& flags) {
  const auto batch = static_cast<size_t>(flags.batch);
  return CorpusChunks(GeneratorOptionsOf(flags), flags.events,
                      std::max<size_t>(1, kChunkEvents / batch) * batch);
}

// --dump-ndjson: the events, chunk by chunk, to `path`.
Status DumpNdjson(const BenchFlags& flags, const std::string& path) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  CorpusChunks chunks = ChunksOf(flags);
  while (const EventCorpus* chunk = chunks.Next()) {
    out.write(chunk->ndjson().data(), static_cast<std::streamsize>(chunk->ndjson().size()));
  }
  out.close();
  if (!out) return Status::IoError("cannot write " + path);
  PrintText("gen.dumped_to", path);
  return Status::Ok();
}

// What phases 1-3 leave for the server phases.
struct Prepared {
  ExpectedTotals expected;
  std::vector<BulkBody> bodies;      // empty with --baseline-only
  double baseline_events_per_s = 0;  // 0: skipped, no ratio printed
};

// Time spent in each of phases 1-3, which share one pass over the events.
struct PrepareTimes {
  double gen = 0;
  double bulk = 0;
  uint64_t json_bytes = 0;  // of the NDJSON lines, newlines included
};

void ReportGenerated(const BenchFlags& flags, const PrepareTimes& times) {
  const auto n = static_cast<double>(flags.events);
  PrintMetric("gen.events", n, "events");
  PrintMetric("gen.seconds", times.gen, "s", 2);
  PrintMetric("gen.events_per_s", n / times.gen, "events/s");
  PrintMetric("gen.avg_event_bytes", static_cast<double>(times.json_bytes) / n - 1, "bytes", 1);
}

// Prints the baseline's figures; returns its events/s.
double ReportBaseline(const BenchFlags& flags, const BaselineResult& result) {
  const auto n = static_cast<double>(flags.events);
  const double events_per_s = n / result.insert_seconds;
  PrintMetric("baseline.seconds", result.insert_seconds, "s", 2);
  PrintMetric("baseline.events_per_s", events_per_s, "events/s");
  PrintMetric("baseline.cpu_us_per_event", result.insert_cpu_seconds * 1e6 / n,
              "us (its one thread)", 1);
  PrintMetric("baseline.bytes_per_event", static_cast<double>(result.bytes_on_disk) / n, "bytes",
              1);
  return events_per_s;
}

void ReportBodies(const std::vector<BulkBody>& bodies, double seconds) {
  uint64_t raw = 0, gz = 0;
  for (const BulkBody& b : bodies) {
    raw += b.raw_bytes;
    gz += b.gzip.size();
  }
  PrintMetric("bulk.requests", static_cast<double>(bodies.size()), "requests");
  PrintMetric("bulk.raw_mb", static_cast<double>(raw) / 1e6, "MB", 1);
  PrintMetric("bulk.gzip_ratio", static_cast<double>(gz) / static_cast<double>(raw), "", 3);
  PrintMetric("bulk.build_seconds", seconds, "s", 2);
}

// Phases 1-3 in one pass over the events, a chunk at a time: the reference
// totals of the query probes, the baseline's inserts and the gzip bodies.
// Only the bodies are kept (~60 bytes per event, against ~520 for a whole
// corpus beside them), so 50M events fit in this machine's memory. Each
// phase is timed on its own part of the pass.
Result<Prepared> PreparePhases(const BenchFlags& flags, const TempDir& work) {
  const fs::path db_path = fs::path(work.path()) / "baseline.sqlite";
  std::unique_ptr<SqliteBaseline> baseline;
  if (!flags.Skips("baseline") || flags.baseline_only) {
    Result<std::unique_ptr<SqliteBaseline>> created = SqliteBaseline::Create(db_path);
    if (!created.ok()) return created.status();
    baseline = std::move(created).value();
  }
  Prepared out;
  PrepareTimes times;
  CorpusChunks chunks = ChunksOf(flags);
  for (;;) {
    Clock::time_point start = Clock::now();
    const EventCorpus* chunk = chunks.Next();
    times.gen += SecondsSince(start);
    if (chunk == nullptr) break;
    times.json_bytes += chunk->ndjson().size();
    out.expected.Count(*chunk);
    if (baseline) {
      if (Status s = baseline->Insert(*chunk, chunks.first() + 1); !s.ok()) return s;
    }
    if (flags.baseline_only) continue;
    start = Clock::now();
    Status s = AppendBulkBodies(*chunk, static_cast<size_t>(flags.batch), kGzipLevel, out.bodies);
    if (!s.ok()) return s;
    times.bulk += SecondsSince(start);
  }
  ReportGenerated(flags, times);
  if (baseline) {
    out.baseline_events_per_s = ReportBaseline(flags, baseline->Finish());
    if (!work.keep()) {
      std::error_code ec;  // free the disk and page cache before the server runs
      for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(db_path.string() + suffix, ec);
    }
  }
  if (!flags.baseline_only) ReportBodies(out.bodies, times.bulk);
  return out;
}

// Waits until the server says it listens (and on which port), it exits, or
// the deadline.
Status WaitForListening(TestServer& server, Clock::time_point deadline) {
  auto left = std::chrono::ceil<std::chrono::seconds>(deadline - Clock::now());
  if (server.WaitUntilListening(left)) return Status::Ok();
  if (const std::optional<ExitStatus>& exit = server.exit_status()) {
    return Status::Unavailable("server exited during startup: " + exit->ToString());
  }
  return Status::DeadlineExceeded(server.error());
}

// Polls until /healthz answers 200, the server exits, or the deadline.
Status WaitForHealthz(TestServer& server, Clock::time_point deadline, Watchdog& watchdog) {
  HttpClient conn("127.0.0.1", server.port(), {.retry_once = false});
  while (Clock::now() < deadline) {
    if (std::optional<ExitStatus> exit = server.Poll()) {
      return Status::Unavailable("server exited during startup: " + exit->ToString());
    }
    HttpResult reply = conn.Get("/healthz");
    watchdog.Tick();
    if (reply.status == 200) return Status::Ok();
    std::this_thread::sleep_for(kHealthzPollEvery);
  }
  return Status::DeadlineExceeded("GET /healthz did not answer 200 within 30 s");
}

// The server's CPU seconds during a load: all its threads, and the writer's.
struct LoadCpu {
  double server = 0;
  double writer = 0;
};

LoadCpu ServerCpuNow(const TestServer& server) {
  return {ProcessCpuSeconds(server.pid()),
          ThreadCpuSeconds(server.pid(), storage::kWriterThreadName)};
}

// The CPU figures of a load: what an event costs, how much of the machine
// and of the writer thread it took, and the rate the machine's cores could
// reach at that cost if every one of them were busy (a ceiling no number of
// writers can pass without making events cheaper).
void ReportIngestCpu(const BulkLoadResult& load, const LoadCpu& used,
                     double baseline_events_per_s) {
  if (load.events_ok == 0 || used.server <= 0) return;
  const auto events = static_cast<double>(load.events_ok);
  const double cores = std::max(1u, std::thread::hardware_concurrency());
  const double ceiling = cores * events / used.server;
  PrintMetric("ingest.server_cpu_us_per_event", used.server * 1e6 / events, "us (all threads)", 1);
  PrintMetric("ingest.server_cores", used.server / load.seconds, "cores (CPU s / wall s)", 2);
  if (used.writer > 0) {
    PrintMetric("ingest.writer_cpu_us_per_event", used.writer * 1e6 / events,
                "us (the writer thread)", 1);
    PrintMetric("ingest.writer_thread_cores", used.writer / load.seconds, "cores", 2);
  } else {
    std::fprintf(stderr, "ingest: no server thread named %s, no writer figures\n",
                 storage::kWriterThreadName);
  }
  PrintMetric("ingest.cpu_ceiling_events_per_s", ceiling, "events/s (all cores at that cost)");
  if (baseline_events_per_s > 0) {
    PrintMetric("ingest.cpu_ceiling_vs_baseline", ceiling / baseline_events_per_s, "x", 2);
  }
}

void ReportIngest(const BulkLoadResult& load, double baseline_events_per_s) {
  double events_per_s = static_cast<double>(load.events_ok) / load.seconds;
  PrintMetric("ingest.events_ok", static_cast<double>(load.events_ok), "events");
  PrintMetric("ingest.seconds", load.seconds, "s", 2);
  PrintMetric("ingest.events_per_s", events_per_s, "events/s");
  PrintMetric("ingest.mb_per_s", static_cast<double>(load.raw_bytes_ok) / 1e6 / load.seconds,
              "MB/s (uncompressed bulk NDJSON)", 1);
  PrintMetric("ingest.latency_p50_ms", Percentile(load.latencies_ms, 50), "ms", 1);
  PrintMetric("ingest.latency_p99_ms", Percentile(load.latencies_ms, 99), "ms", 1);
  PrintMetric("ingest.latency_max_ms", Percentile(load.latencies_ms, 100), "ms", 1);
  PrintMetric("ingest.failed_requests", static_cast<double>(load.failed_requests), "requests");
  PrintMetric("ingest.retries_429", static_cast<double>(load.retries_429), "retries");
  PrintMetric("ingest.transport_errors", static_cast<double>(load.transport_errors), "errors");
  if (baseline_events_per_s > 0) {
    PrintMetric("ingest.vs_baseline", events_per_s / baseline_events_per_s, "x", 2);
  }
}

void ReportServerFootprint(const TestServer& server, const fs::path& data_dir, int64_t events) {
  if (std::optional<uint64_t> rss = server.PeakRssBytes()) {
    PrintMetric("server.peak_rss_mib", static_cast<double>(*rss) / (1 << 20), "MiB", 1);
  } else {
    std::fprintf(stderr, "peak RSS: no VmHWM in /proc/%d/status\n", static_cast<int>(server.pid()));
  }
  double per_event = static_cast<double>(DiskBytesUnder(data_dir)) /
                     static_cast<double>(std::max<int64_t>(events, 1));
  PrintMetric("disk.bytes_per_event", per_event, "bytes", 1);
}

// Phase 6b (and 12's export): each format's export, its figures printed
// under `name`.FORMAT. Returns the number of exports that failed or missed
// events.
int ExportPhase(const TestServer& server, int64_t events, Watchdog& watchdog,
                const std::string& name = "export",
                std::initializer_list<const char*> formats = {"ndjson", "csv", "text"}) {
  int failures = 0;
  for (const char* format : formats) {
    const std::string prefix = name + "." + format;
    // A long export (ClickHouse's) is progress as long as pieces arrive.
    Result<ExportTiming> t = TimeExport(server.port(), server.pid(),
                                        std::string("format=") + format, [&] { watchdog.Tick(); });
    watchdog.Tick();
    if (!t.ok()) {
      std::fprintf(stderr, "export %s: %s\n", format, t.status().ToString().c_str());
      ++failures;
      continue;
    }
    const auto n = static_cast<double>(t->events);
    PrintMetric(prefix + ".events_per_s", n / t->seconds, "events/s");
    PrintMetric(prefix + ".mb_per_s", static_cast<double>(t->bytes) / 1e6 / t->seconds, "MB/s", 1);
    if (t->server_cpu_seconds > 0) {
      PrintMetric(prefix + ".events_per_server_cpu_s", n / t->server_cpu_seconds,
                  "events/s of server CPU");
    }
    if (t->events != static_cast<uint64_t>(events)) {
      std::fprintf(stderr, "export %s: %llu events, want %lld\n", format,
                   static_cast<unsigned long long>(t->events), static_cast<long long>(events));
      ++failures;
    }
  }
  return failures;
}

struct ServerRun {
  const BenchFlags& flags;
  const ExpectedTotals& expected;
  const std::vector<BulkBody>& bodies;
  const TempDir& work;
  double baseline_events_per_s;
};

// The options of a server the bench starts: data in `data_dir` and its log in
// `log_name` under the work directory, the binary's own defaults (as
// deployed, so no --compress-after of the tests), then `extra_args` and
// every --server-arg.
testing::TestServerOptions BenchServer(const ServerRun& run, const std::string& binary,
                                       const std::string& data_dir, const std::string& log_name,
                                       std::vector<std::string> extra_args = {}) {
  testing::TestServerOptions options;
  options.data_dir = (fs::path(run.work.path()) / data_dir).string();
  options.binary = binary;
  options.threads = run.flags.server_threads;
  options.compress_after.clear();
  options.log_path = (fs::path(run.work.path()) / log_name).string();
  options.extra_args = std::move(extra_args);
  options.extra_args.insert(options.extra_args.end(), run.flags.server_args.begin(),
                            run.flags.server_args.end());
  return options;
}

// A watchdog that kills `server` once the bench has made no progress for
// --stall-timeout seconds.
Watchdog KillOnStall(const ServerRun& run, TestServer& server) {
  return Watchdog(std::chrono::seconds(run.flags.stall_timeout_s), [&server] {
    std::fprintf(stderr, "no progress: killing the server\n");
    server.Signal(SIGKILL);
  });
}

// Phase 6's options, its metrics named `prefix`.<probe>.
QuerySuiteOptions SuiteOptions(const ServerRun& run, std::string prefix) {
  return {.prefix = std::move(prefix),
          .limit = kSearchLimit,
          .warmups = kSearchWarmups,
          .runs = run.flags.query_runs};
}

// Phases 5 and 6 against a healthy server. Returns true if all succeeded.
bool LoadAndQuery(const ServerRun& run, const TestServer& server, Watchdog& watchdog,
                  double& bulk_events_per_s) {
  const LoadCpu before = ServerCpuNow(server);
  BulkLoadResult load = DriveBulkLoad(server.port(), run.bodies, run.flags.connections, &watchdog);
  const LoadCpu after = ServerCpuNow(server);
  ReportIngest(load, run.baseline_events_per_s);
  ReportIngestCpu(load, {after.server - before.server, after.writer - before.writer},
                  run.baseline_events_per_s);
  bulk_events_per_s = static_cast<double>(load.events_ok) / load.seconds;
  ReportServerFootprint(server, fs::path(run.work.path()) / "data", load.events_ok);
  if (watchdog.fired()) return false;  // the server is gone; queries cannot run
  const QuerySuiteOptions query_options = SuiteOptions(run, "query");
  int query_failures =
      RunQuerySuite(run.expected, server.port(), server.pid(), query_options, watchdog);
  int export_failures =
      run.flags.Skips("export") ? 0 : ExportPhase(server, load.events_ok, watchdog);
  return load.failed_requests == 0 && query_failures == 0 && export_failures == 0;
}

// Phases 4 (after the spawn) to 6. Returns true if all succeeded.
bool RunAgainstServer(const ServerRun& run, TestServer& server, Clock::time_point start,
                      double& bulk_events_per_s) {
  const Clock::time_point deadline = start + kHealthzTimeout;
  // No socket call can block before the server listens: the watchdog starts after.
  Status healthy = WaitForListening(server, deadline);
  if (!healthy.ok()) {
    std::fprintf(stderr, "%s\n", healthy.ToString().c_str());
    return false;
  }
  Watchdog watchdog = KillOnStall(run, server);
  healthy = WaitForHealthz(server, deadline, watchdog);
  if (!healthy.ok()) {
    std::fprintf(stderr, "%s\n", healthy.ToString().c_str());
    return false;
  }
  PrintMetric("server.startup_ms", SecondsSince(start) * 1000, "ms");
  bool ok = LoadAndQuery(run, server, watchdog, bulk_events_per_s);
  return ok && !watchdog.fired();
}

// Phase 8: the same events over the Beats protocol, into a fresh server and
// data directory so both protocols start from an empty partition.
// The Beats driver encodes its windows from one whole corpus, generated again
// here (the same events: the generator is seeded).
bool BeatsPhase(const ServerRun& run, const std::string& binary, double bulk_events_per_s) {
  const EventCorpus corpus = GenerateEventCorpus(GeneratorOptionsOf(run.flags), run.flags.events);
  TestServer server(BenchServer(run, binary, "beats-data", "server-beats.log"));
  if (!server.Spawn() || !server.WaitUntilListening(kHealthzTimeout) || server.beats_port() == 0) {
    std::fprintf(stderr, "beats: the server did not start: %s\n", server.error().c_str());
    return false;
  }
  BeatsLoadResult load =
      DriveBeatsLoad(server.beats_port(), corpus, run.flags.batch, run.flags.connections);
  const double events_per_s = static_cast<double>(load.events_ok) / load.seconds;
  PrintMetric("beats.events_ok", static_cast<double>(load.events_ok), "events");
  PrintMetric("beats.seconds", load.seconds, "s", 2);
  PrintMetric("beats.events_per_s", events_per_s, "events/s");
  PrintMetric("beats.failed_windows", static_cast<double>(load.failed_windows), "windows");
  if (bulk_events_per_s > 0) PrintMetric("beats.vs_bulk", events_per_s / bulk_events_per_s, "x", 2);
  server.Stop(SIGTERM, kStopGraceSeconds);
  server.Kill();
  const ExitStatus exit = server.exit_status().value();
  PrintText("beats.server_exit", exit.ToString());
  return load.failed_windows == 0 && exit.ok();
}

// Phase 9a: redaction's CPU cost per event, measured in this process over the
// events generated again, chunk by chunk (only the redaction is timed).
void RedactionCpuPhase(const BenchFlags& flags) {
  auto redactor = ingest::Redactor::Create(ingest::RedactionConfig{});
  if (!redactor.ok()) {
    std::fprintf(stderr, "redaction: %s\n", redactor.status().ToString().c_str());
    return;
  }
  ingest::DocumentRedactor doc(**redactor);
  std::string padded, out;
  ingest::RedactionHits hits;
  size_t changed = 0;
  double seconds = 0;
  CorpusChunks chunks = ChunksOf(flags);
  while (const EventCorpus* chunk = chunks.Next()) {
    const auto start = Clock::now();
    for (size_t i = 0; i < chunk->size(); ++i) {
      padded.assign(chunk->Json(i));
      const size_t size = padded.size();
      padded.append(simdjson::SIMDJSON_PADDING, ' ');
      auto r = doc.Redact(std::string_view(padded.data(), size), padded.size(), out, hits);
      if (r.ok() && *r) ++changed;
    }
    seconds += SecondsSince(start);
  }
  const auto n = static_cast<double>(flags.events);
  PrintMetric("redaction.cpu_events_per_s", n / seconds, "events/s (one core, in process)");
  PrintMetric("redaction.cpu_us_per_event", seconds * 1e6 / n, "us", 2);
  PrintMetric("redaction.events_masked", static_cast<double>(changed), "events");
}

// What one load into a fresh server gave.
struct FreshLoad {
  double events_per_s = 0;
  double server_cpu_us_per_event = 0;  // the server's CPU time (all threads) per event
};

// The same _bulk load into a fresh server (data under <work>/<name>-data)
// started with `extra_args`, or nullopt (said on stderr) when the server did
// not start, a request failed or the server did not exit cleanly.
std::optional<FreshLoad> LoadFreshServer(const ServerRun& run, const std::string& binary,
                                         const std::string& name,
                                         std::vector<std::string> extra_args) {
  extra_args.insert(extra_args.end(), {"--beats-listen", ""});
  TestServer server(
      BenchServer(run, binary, name + "-data", "server-" + name + ".log", std::move(extra_args)));
  if (!server.Spawn() || !server.WaitUntilListening(kHealthzTimeout)) {
    std::fprintf(stderr, "%s: the server did not start: %s\n", name.c_str(),
                 server.error().c_str());
    return std::nullopt;
  }
  const double cpu_before = ProcessCpuSeconds(server.pid());
  BulkLoadResult load = DriveBulkLoad(server.port(), run.bodies, run.flags.connections, nullptr);
  const double cpu_s = ProcessCpuSeconds(server.pid()) - cpu_before;
  server.Stop(SIGTERM, kStopGraceSeconds);
  server.Kill();
  const ExitStatus exit = server.exit_status().value();
  if (load.failed_requests != 0 || !exit.ok() || load.events_ok == 0) {
    std::fprintf(stderr, "%s: %llu failed requests, server %s\n", name.c_str(),
                 static_cast<unsigned long long>(load.failed_requests), exit.ToString().c_str());
    return std::nullopt;
  }
  const auto events = static_cast<double>(load.events_ok);
  return FreshLoad{events / load.seconds, cpu_s * 1e6 / events};
}

// Phase 12: the ClickHouse backend on a local 2-shard cluster. Returns
// false when the cluster or the server could not start or a load request
// failed; query probes the backend refuses are printed, not failures.
bool ClickHousePhase(const ServerRun& run, const std::string& binary, double bulk_events_per_s) {
  if (testing::ClickHouseCluster::ServerBinary().empty()) {
    std::fprintf(stderr, "clickhouse: no clickhouse-server installed (make test-deps); skipped\n");
    return true;
  }
  testing::ClickHouseCluster cluster(2);
  if (!cluster.Start()) {
    std::fprintf(stderr, "clickhouse: the cluster did not start: %s\n", cluster.error().c_str());
    return false;
  }
  TestServer server(BenchServer(run, binary, "clickhouse-data", "server-clickhouse.log",
                                {"--storage", cluster.StorageUrl("bench"), "--beats-listen", ""}));
  if (!server.Spawn() || !server.WaitUntilListening(kHealthzTimeout)) {
    std::fprintf(stderr, "clickhouse: the server did not start: %s\n", server.error().c_str());
    return false;
  }
  const double cpu_before = ProcessCpuSeconds(server.pid());
  BulkLoadResult load = DriveBulkLoad(server.port(), run.bodies, run.flags.connections, nullptr);
  const double cpu_s = ProcessCpuSeconds(server.pid()) - cpu_before;
  const double events_per_s = static_cast<double>(load.events_ok) / load.seconds;
  PrintMetric("clickhouse.events_per_s", events_per_s, "events/s");
  if (load.events_ok > 0) {
    PrintMetric("clickhouse.server_cpu_us_per_event",
                cpu_s * 1e6 / static_cast<double>(load.events_ok), "us (dashcam only)", 1);
  }
  if (bulk_events_per_s > 0) {
    PrintMetric("clickhouse.ingest_ratio_to_sqlite", events_per_s / bulk_events_per_s,
                "x (same bodies, phase 5)", 3);
  }
  Watchdog watchdog = KillOnStall(run, server);
  const QuerySuiteOptions query_options = SuiteOptions(run, "clickhouse.query");
  RunQuerySuite(run.expected, server.port(), server.pid(), query_options, watchdog);
  const int export_failures =
      run.flags.Skips("export")
          ? 0
          : ExportPhase(server, load.events_ok, watchdog, "clickhouse.export", {"ndjson"});
  server.Stop(SIGTERM, kStopGraceSeconds);
  server.Kill();
  return load.failed_requests == 0 && load.events_ok > 0 && export_failures == 0 &&
         !watchdog.fired();
}

// Phase 9b: the same _bulk load into a fresh server with --no-redaction.
bool NoRedactionPhase(const ServerRun& run, const std::string& binary, double bulk_events_per_s) {
  const std::optional<FreshLoad> load = LoadFreshServer(run, binary, "raw", {"--no-redaction"});
  if (!load) return false;
  const double events_per_s = load->events_per_s;
  PrintMetric("no_redaction.events_per_s", events_per_s, "events/s");
  if (bulk_events_per_s > 0 && events_per_s > 0) {
    PrintMetric("redaction.throughput_ratio", bulk_events_per_s / events_per_s,
                "x (with / without redaction)", 3);
    PrintMetric("redaction.cost_pct", 100.0 * (1.0 - bulk_events_per_s / events_per_s), "%", 1);
  }
  return true;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// Phase 9c: what the training-insight detectors cost end to end. The same
// _bulk load into fresh servers, alternately with --no-detectors and with
// the default (detectors on), --detector-rounds times each, so that both
// see the same machine; medians and their ratio. Phase 5's figure is not
// reused: one run on a shared machine is too noisy for a 10% budget.
bool DetectorsPhase(const ServerRun& run, const std::string& binary) {
  std::vector<double> on, off, cpu_on, cpu_off;
  for (int round = 0; round < run.flags.detector_rounds; ++round) {
    const std::string suffix = std::to_string(round);
    const std::optional<FreshLoad> without =
        LoadFreshServer(run, binary, "nodetect" + suffix, {"--no-detectors"});
    const std::optional<FreshLoad> with = LoadFreshServer(run, binary, "detect" + suffix, {});
    if (!without || !with) return false;
    off.push_back(without->events_per_s);
    on.push_back(with->events_per_s);
    cpu_off.push_back(without->server_cpu_us_per_event);
    cpu_on.push_back(with->server_cpu_us_per_event);
  }
  const double median_on = Median(on), median_off = Median(off);
  PrintMetric("detectors.rounds", run.flags.detector_rounds, "pairs");
  PrintMetric("detectors.off.median_events_per_s", median_off, "events/s");
  PrintMetric("detectors.on.median_events_per_s", median_on, "events/s");
  PrintMetric("detectors.throughput_ratio", median_on / median_off, "x (on / off; target >= 0.9)",
              3);
  PrintMetric("detectors.cost_pct", 100.0 * (1.0 - median_on / median_off), "%", 1);
  // CPU per event is steadier than throughput on a shared machine.
  PrintMetric("detectors.off.median_server_cpu_us_per_event", Median(cpu_off), "us", 2);
  PrintMetric("detectors.on.median_server_cpu_us_per_event", Median(cpu_on), "us", 2);
  PrintMetric("detectors.cpu_ratio", Median(cpu_on) / Median(cpu_off), "x (on / off)", 3);
  return true;
}

struct TailedLoad {
  double events_per_s = 0;
  double server_cpu_s = 0;  // from the first request to the last delivery
  uint64_t delivered = 0;
  uint64_t ended = 0;
  bool ok = false;
};

// One _bulk load into a fresh server with a live tail per query open.
TailedLoad LoadWithTails(const ServerRun& run, const std::string& binary, const std::string& name,
                         const std::vector<std::string>& queries) {
  TestServer server(
      BenchServer(run, binary, name + "-data", "server-" + name + ".log", {"--beats-listen", ""}));
  TailedLoad out;
  if (!server.Spawn() || !server.WaitUntilListening(kHealthzTimeout)) {
    std::fprintf(stderr, "%s: the server did not start: %s\n", name.c_str(),
                 server.error().c_str());
    return out;
  }
  {
    TailReaders tails(server.port(), queries);
    if (tails.status().ok()) {
      const double cpu_before = ProcessCpuSeconds(server.pid());
      BulkLoadResult load =
          DriveBulkLoad(server.port(), run.bodies, run.flags.connections, nullptr);
      out.events_per_s = static_cast<double>(load.events_ok) / load.seconds;
      // Deliveries trail the last commit by a dispatch: wait until quiet.
      uint64_t seen = 0;
      for (int quiet = 0; quiet < 10 && !queries.empty(); ++quiet) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        if (tails.events() != seen) quiet = 0;
        seen = tails.events();
      }
      out.server_cpu_s = ProcessCpuSeconds(server.pid()) - cpu_before;
      out.delivered = tails.events();
      out.ended = tails.ended();
      out.ok = load.failed_requests == 0;
    } else {
      std::fprintf(stderr, "%s: %s\n", name.c_str(), tails.status().ToString().c_str());
    }
  }
  server.Stop(SIGTERM, kStopGraceSeconds);
  server.Kill();
  out.ok = out.ok && server.exit_status().value().ok();
  return out;
}

// Phase 10: the same _bulk load twice, into fresh servers, without and with
// --tails live tails open and read, back to back so that both see the same
// machine.
bool TailPhase(const ServerRun& run, const std::string& binary) {
  std::vector<std::string> queries;
  for (int i = 0; i < run.flags.tails; ++i) {
    queries.push_back(run.flags.tail_query.empty()
                          ? kTailQueries[static_cast<size_t>(i) % std::size(kTailQueries)]
                          : run.flags.tail_query);
  }
  const TailedLoad none = LoadWithTails(run, binary, "untailed", {});
  const TailedLoad tailed = LoadWithTails(run, binary, "tailed", queries);
  PrintMetric("tails.count", run.flags.tails, "tails");
  PrintMetric("tails.without.events_per_s", none.events_per_s, "events/s");
  PrintMetric("tails.without.server_cpu_s", none.server_cpu_s, "s", 1);
  PrintMetric("tails.with.events_per_s", tailed.events_per_s, "events/s");
  PrintMetric("tails.with.server_cpu_s", tailed.server_cpu_s, "s", 1);
  if (none.events_per_s > 0) {
    PrintMetric("tails.throughput_ratio", tailed.events_per_s / none.events_per_s,
                "x (with / without)", 3);
  }
  PrintMetric("tails.events_delivered", static_cast<double>(tailed.delivered), "events");
  PrintMetric("tails.ended_by_server", static_cast<double>(tailed.ended), "tails");
  return none.ok && tailed.ok;
}

// Events and seconds of one or more _bulk loads.
struct LoadTally {
  double events = 0, seconds = 0;
  double server_cpu_seconds = 0;
  double rate() const { return seconds > 0 ? events / seconds : 0; }
  double server_cores() const { return seconds > 0 ? server_cpu_seconds / seconds : 0; }
};

// The _bulk load of `bodies` into a running server, added to `tally`; false
// (said on stderr) when a request failed.
bool LoadSlice(const TestServer& server, const ServerRun& run, std::vector<BulkBody> bodies,
               const char* what, LoadTally& tally) {
  const double cpu_before = ProcessCpuSeconds(server.pid());
  const BulkLoadResult load = DriveBulkLoad(server.port(), bodies, run.flags.connections, nullptr);
  tally.events += static_cast<double>(load.events_ok);
  tally.seconds += load.seconds;
  tally.server_cpu_seconds += ProcessCpuSeconds(server.pid()) - cpu_before;
  if (load.failed_requests == 0) return true;
  std::fprintf(stderr, "concurrency %s: %lld failed requests\n", what,
               static_cast<long long>(load.failed_requests));
  return false;
}

// Phase 11: the concurrency targets of the performance issue, on one fresh
// server. Half the bodies are loaded first; then, at about that size:
//   idle       each query of kQueries timed alone (1 warm-up, 15 runs);
//   ingesting  a tenth of the bodies loaded at full speed while one client
//              asks the queries in turn: their medians against the idle
//              ones (target: within 2x);
//   alone / queried  four more tenths, alternately loaded with no queries
//              and while 8 clients ask continuously (alternating, so that
//              the partition's growth and FTS5's merges fall on both): the
//              ingest rate of the queried tenths against the others
//              (target: at most 20% lower).
bool ConcurrencyPhase(const ServerRun& run, const std::string& binary) {
  static constexpr std::pair<const char*, const char*> kQueries[] = {
      {"phrase_and_user", R"(message:"CUDA out of memory" AND user:zhangsan)"},
      {"rare_phrase", R"("P2P access between rank 3 and rank 5")"},
      {"common_term", "epoch"},
  };
  const std::vector<BulkBody>& b = run.bodies;
  if (b.size() < 12) {
    std::fprintf(stderr, "concurrency: %zu bodies are too few to slice; skipped\n", b.size());
    return true;
  }
  const std::size_t half = b.size() / 2, tenth = b.size() / 10;
  auto slice = [&b](std::size_t from, std::size_t to) {
    return std::vector<BulkBody>(b.begin() + static_cast<std::ptrdiff_t>(from),
                                 b.begin() + static_cast<std::ptrdiff_t>(to));
  };
  TestServer server(BenchServer(run, binary, "concurrency-data", "server-concurrency.log",
                                {"--beats-listen", ""}));
  if (!server.Spawn() || !server.WaitUntilListening(kHealthzTimeout)) {
    std::fprintf(stderr, "concurrency: the server did not start: %s\n", server.error().c_str());
    return false;
  }
  LoadTally first, during_one, alone, queried;
  bool ok = LoadSlice(server, run, slice(0, half), "first half", first);
  std::vector<std::string> targets;
  for (const auto& [name, q] : kQueries) {
    targets.push_back("/api/v1/search?q=" + testing::UrlEncode(q) +
                      "&limit=" + std::to_string(kSearchLimit));
  }
  std::vector<double> idle;
  testing::HttpClient conn("127.0.0.1", server.port());
  for (const std::string& target : targets) {
    auto t = TimeGet(conn, target, server.pid(), 1, 15);
    ok = ok && t.ok();
    idle.push_back(t.ok() ? t->median_ms : 0);
  }
  QueryLoop one(server.port(), targets, 1);
  std::size_t at = half;
  ok = LoadSlice(server, run, slice(at, at + tenth), "while queried by one client", during_one) &&
       ok;
  one.Stop();
  at += tenth;
  // Per query, the answers the 8 clients got in both queried tenths.
  std::vector<std::vector<double>> eight(targets.size());
  std::int64_t eight_failed = 0;
  double eight_cpu_seconds = 0;
  for (int round = 0; round < 2; ++round) {
    ok = LoadSlice(server, run, slice(at, at + tenth), "alone", alone) && ok;
    at += tenth;
    QueryLoop loop(server.port(), targets, 8);
    ok = LoadSlice(server, run, slice(at, at + tenth), "while queried by 8 clients", queried) && ok;
    loop.Stop();
    at += tenth;
    for (std::size_t i = 0; i < targets.size(); ++i) {
      eight[i].insert(eight[i].end(), loop.latencies_ms()[i].begin(), loop.latencies_ms()[i].end());
    }
    eight_failed += loop.failed();
    eight_cpu_seconds += loop.cpu_seconds();
  }
  server.Stop(SIGTERM, kStopGraceSeconds);
  server.Kill();
  ok = ok && server.exit_status().value().ok() && one.failed() == 0 && eight_failed == 0;

  PrintMetric("concurrency.events_before", static_cast<double>(half) * run.flags.batch,
              "events (about)");
  for (std::size_t i = 0; i < std::size(kQueries); ++i) {
    const std::string name = std::string("concurrency.") + kQueries[i].first;
    const std::vector<double>& busy = one.latencies_ms()[i];
    PrintMetric(name + ".idle_median_ms", idle[i], "ms", 2);
    if (!busy.empty()) {
      const double median = Median(busy);
      PrintMetric(name + ".ingesting_median_ms", median,
                  "ms (" + std::to_string(busy.size()) + " answers during ingest at full speed)",
                  2);
      if (idle[i] > 0) {
        PrintMetric(name + ".ingesting_ratio", median / idle[i], "x idle (target <= 2)", 2);
      }
    }
    if (!eight[i].empty()) {
      PrintMetric(name + ".eight_clients_median_ms", Median(eight[i]), "ms (8 clients and ingest)",
                  2);
    }
  }
  std::size_t answers = 0;
  for (const auto& l : eight) answers += l.size();
  PrintMetric("concurrency.ingest_first_half.events_per_s", first.rate(), "events/s");
  PrintMetric("concurrency.ingest_one_client.events_per_s", during_one.rate(),
              "events/s (the tenth one client queried)");
  PrintMetric("concurrency.ingest_alone.events_per_s", alone.rate(), "events/s (two tenths)");
  PrintMetric("concurrency.ingest_queried.events_per_s", queried.rate(),
              "events/s (two tenths; " + std::to_string(answers) +
                  " answers to 8 query clients meanwhile)");
  if (alone.rate() > 0) {
    PrintMetric("concurrency.ingest_ratio", queried.rate() / alone.rate(),
                "x (with 8 query clients / alone; target >= 0.8)", 3);
  }
  // Where the two cores went: the server's CPU while loaded alone and while
  // queried, and the bench's own 8 query clients, which share the machine.
  PrintMetric("concurrency.server_cores_alone", alone.server_cores(), "cores (CPU s / wall s)", 2);
  PrintMetric("concurrency.server_cores_queried", queried.server_cores(), "cores", 2);
  if (queried.seconds > 0) {
    PrintMetric("concurrency.query_clients_cores", eight_cpu_seconds / queried.seconds,
                "cores (the bench's 8 query clients)", 2);
  }
  PrintMetric("concurrency.query_failures", static_cast<double>(one.failed() + eight_failed),
              "answers other than 200");
  return ok;
}

// This process's peak RSS (VmHWM): the gzip bodies and a chunk of events (the
// whole corpus if phase 8 ran), which must fit beside the server.
void ReportOwnPeakRss() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    long long kib = 0;
    if (std::sscanf(line.c_str(), "VmHWM: %lld kB", &kib) == 1) {
      PrintMetric("bench.peak_rss_mib", static_cast<double>(kib) / 1024, "MiB", 1);
      return;
    }
  }
}

// The number of partitions the server has compacted (counted as each one is
// done), from /api/v1/status; nullopt when the answer is not understood.
std::optional<std::int64_t> CompactedPartitions(HttpClient& conn) {
  HttpResult reply = conn.Get("/api/v1/status");
  if (reply.status != 200) return std::nullopt;
  boost::system::error_code ec;
  boost::json::value status = boost::json::parse(reply.body, ec);
  if (ec || !status.is_object()) return std::nullopt;
  const boost::json::value* c = status.get_object().if_contains("compaction");
  if (c == nullptr || !c->is_object()) return std::nullopt;
  const boost::json::value* done = c->get_object().if_contains("compacted_partitions");
  if (done == nullptr || !done->is_int64()) return std::nullopt;
  return done->as_int64();
}

// Phase 7b: the main data directory served again with every past day due
// for compaction at once. Returns true if the queries ran.
bool CompactedPhase(const ServerRun& run, const std::string& binary) {
  const fs::path data_dir = fs::path(run.work.path()) / "data";
  std::int64_t days = 0;
  for (const auto& entry : fs::directory_iterator(data_dir)) {
    days += entry.path().extension() == ".db" ? 1 : 0;
  }
  TestServer server(BenchServer(
      run, binary, "data", "server-compacted.log",
      {"--compact-after", "1s", "--test-compaction-check-ms", "500", "--beats-listen", ""}));
  const Clock::time_point start = Clock::now();
  if (!server.Spawn() || !server.WaitUntilListening(kHealthzTimeout)) {
    std::fprintf(stderr, "compacted: the server did not start: %s\n", server.error().c_str());
    return false;
  }
  // Every bench day is a past day: it is compacted unless it has nothing
  // to give back. Wait until all are, or none was done for five minutes (a
  // 2M-event day takes ~20 s).
  HttpClient conn("127.0.0.1", server.port(), {.retry_once = false});
  std::int64_t done = 0;
  Clock::time_point last_change = Clock::now();
  while (done < days && Clock::now() - last_change < std::chrono::minutes(5) && !server.Poll()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    if (std::optional<std::int64_t> n = CompactedPartitions(conn); n && *n != done) {
      done = *n;
      last_change = Clock::now();
    }
  }
  PrintMetric("compacted.partitions", static_cast<double>(done),
              "of " + std::to_string(days) + " day partitions");
  PrintMetric("compacted.seconds", SecondsSince(start), "s (startup included)", 1);
  PrintMetric("compacted.bytes_per_event",
              static_cast<double>(DiskBytesUnder(data_dir)) / static_cast<double>(run.flags.events),
              "bytes", 1);
  Watchdog watchdog = KillOnStall(run, server);
  const QuerySuiteOptions query_options = SuiteOptions(run, "compacted.query");
  const int failures =
      RunQuerySuite(run.expected, server.port(), server.pid(), query_options, watchdog);
  server.Stop(SIGTERM, kStopGraceSeconds);
  server.Kill();
  return failures == 0 && !watchdog.fired();
}

// Phases 4 to 10. Returns the exit code.
int ServerPhases(const ServerRun& run, const std::string& binary) {
  const fs::path data_dir = fs::path(run.work.path()) / "data";
  TestServer server(BenchServer(run, binary, "data", "server.log"));
  auto start = Clock::now();
  if (!server.Spawn()) return CannotRun("server", Status::IoError(server.error()));
  PrintMetric("server.pid", server.pid(), "");
  double bulk_events_per_s = 0;
  bool ok = RunAgainstServer(run, server, start, bulk_events_per_s);
  // SIGTERM, wait, then SIGKILL; Kill() does nothing if the server has exited.
  server.Stop(SIGTERM, kStopGraceSeconds);
  server.Kill();
  ExitStatus exit = server.exit_status().value();
  PrintText("server.exit", exit.ToString());
  auto n = static_cast<double>(run.flags.events);
  PrintMetric("disk.bytes_per_event_after_stop", static_cast<double>(DiskBytesUnder(data_dir)) / n,
              "bytes", 1);
  if (!ok || !exit.ok()) {
    std::string log = server.ReadLog();
    if (log.size() > kLogTailBytes) log.erase(0, log.size() - kLogTailBytes);
    std::fprintf(stderr, "--- tail of %s ---\n%s\n", server.log_path().c_str(), log.c_str());
  }
  if (!ok || !exit.ok()) return kExitFailures;
  const bool compacted_ok = run.flags.Skips("compacted") || CompactedPhase(run, binary);
  const bool beats_ok = run.flags.Skips("beats") || BeatsPhase(run, binary, bulk_events_per_s);
  bool raw_ok = true;
  if (!run.flags.Skips("redaction")) {
    RedactionCpuPhase(run.flags);
    raw_ok = NoRedactionPhase(run, binary, bulk_events_per_s);
  }
  const bool detectors_ok = run.flags.Skips("detectors") || DetectorsPhase(run, binary);
  const bool tails_ok = run.flags.tails == 0 || TailPhase(run, binary);
  const bool concurrency_ok = run.flags.Skips("concurrency") || ConcurrencyPhase(run, binary);
  const bool clickhouse_ok =
      run.flags.Skips("clickhouse") || ClickHousePhase(run, binary, bulk_events_per_s);
  return compacted_ok && beats_ok && raw_ok && detectors_ok && tails_ok && concurrency_ok &&
                 clickhouse_ok
             ? kExitOk
             : kExitFailures;
}

int Main(int argc, char** argv) {
  BenchFlags flags;
  if (std::optional<int> code = ParseFlags(argc, argv, flags)) return *code;
  ::signal(SIGPIPE, SIG_IGN);
  std::string binary;
  if (!flags.baseline_only && flags.dump_ndjson.empty()) {
    Result<std::string> resolved = ResolveServerBinary(flags);
    if (!resolved.ok()) return CannotRun("flags", resolved.status());
    binary = *resolved;
  }
  if (!flags.dump_ndjson.empty()) {
    Status s = DumpNdjson(flags, flags.dump_ndjson);
    return s.ok() ? kExitOk : CannotRun("dump", s);
  }
  std::optional<TempDir> work;
  try {
    work.emplace(flags.work_dir, flags.keep);
  } catch (const std::runtime_error& e) {
    return CannotRun("work dir",
                     flags.work_dir.empty()
                         ? Status::IoError(e.what())
                         : Status::InvalidArgument(std::string("--work-dir ") + e.what()));
  }
  PrintText("work_dir", work->path());
  Result<Prepared> prepared = PreparePhases(flags, *work);
  if (!prepared.ok()) return CannotRun("gen, baseline or bulk", prepared.status());
  if (flags.baseline_only) return kExitOk;
  const int code = ServerPhases(ServerRun{flags, prepared->expected, prepared->bodies, *work,
                                          prepared->baseline_events_per_s},
                                binary);
  ReportOwnPeakRss();
  return code;
}

}  // namespace
}  // namespace dashcam::bench

int main(int argc, char** argv) {
  return dashcam::bench::Main(argc, argv);
}
