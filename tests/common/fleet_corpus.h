// FleetCorpus: three hours of a small GPU fleet's logs, with failures of
// every insight kind injected at known points (issue 8, section 4), or
// none (the clean corpus), for tests that check what dashcam makes of them.
//
// The fleet: 8 hosts (gpu-node-01..08), 5 users, 30 training runs r-00..r-29
// started 4 minutes apart over the last three hours, each with 1, 4 or 8
// ranks (8 spread over two hosts), every rank printing a step line a minute
// in one of three shapes (a "[rankN]: epoch/step loss= grad_norm= lr=" line,
// a Hugging Face Trainer dict, a Lightning progress bar), plus what sits
// beside them on such machines: NCCL INFO start-up lines, checkpoint and
// evaluation lines, Jupyter and sshd lines, kernel lines in
// /var/log/kern.log, and near misses that no detector may take for a failure
// ("killed 0 zombie workers", "Memory usage: 10 GiB", NCCL INFO, a
// validation loss).
//
// Runs end one of four ways: a finishing line (Hugging Face's "Training
// completed." or Lightning's "`Trainer.fit` stopped"), nothing at all long
// ago (r-07 and r-18: stalled mid-epoch), still going (r-27..r-29: their last
// line a few seconds before `now_ms`), or, with injections, a failure.
//
// Injected failures (with `inject`), each where a real one appears, every
// rank of the run printing it within a second where the real one does:
//   r-03 cuda_oom (PyTorch 2.x text, 8 ranks)   r-05 cuda_driver_mismatch
//   r-06 gpu_unavailable                       r-09 nccl watchdog timeout
//   r-10 cuda_error (illegal memory access)    r-12 nan_loss (3 steps)
//   r-13 loss_spike (one step, then it recovers and finishes)
//   r-15 grad_explosion                        gpu-node-05 kern.log: Xid 79
//   gpu-node-06 kern.log: the OOM killer
// Without `inject` the same runs go on and end like the others.
//
// Events are shaped as Filebeat ships them: @timestamp, message, host.name,
// log.file.path, log.level, user, and `run_id` for runs that print it
// (r-16 and r-17 name only their container, container.id; kernel lines
// name no run). Every event has a unique `id` (for `_id`) so a test can
// name the root-cause event of each failure.
//
// Deterministic: the same options give the same events.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace dashcam::testing {

struct FleetEvent {
  std::string id;  // unique; use as the bulk action's _id
  int64_t ts_ms = 0;
  std::string json;  // the document, one compact JSON object
};

struct InjectedFailure {
  std::string kind;         // the insight.kind it must be reported as
  std::string run_id;       // its run's run_id; empty for kernel lines (no run)
  std::string host;         // where its first line was printed
  std::string first_id;     // the id of its first (root-cause) event
  int lines = 0;            // events printed that report it (an incident's count)
  bool exact_lines = true;  // false: a detector may flag fewer (anomalies)
  // Numeric facts the first event must yield, as insight.<name> values.
  std::vector<std::pair<std::string, double>> facts;
};

struct ExpectedRun {
  std::string run_id;
  std::string status;  // running, finished, failed or stalled (--stall-after 10m)
};

struct FleetCorpus {
  std::vector<FleetEvent> events;         // in time order
  std::vector<InjectedFailure> failures;  // empty without injections
  std::vector<ExpectedRun> runs;          // the runs that print run_id
  int64_t first_ms = 0, last_ms = 0;      // the events' time range
};

struct FleetOptions {
  int64_t now_ms = 0;  // the last events are a few seconds before this
  bool inject = true;
};

FleetCorpus MakeFleetCorpus(const FleetOptions& options);

// `events` as a _bulk body: one create action (with _index and _id) and one
// document per event.
std::string FleetBulkBody(const std::vector<FleetEvent>& events, std::size_t begin, std::size_t end,
                          const std::string& index);

}  // namespace dashcam::testing
