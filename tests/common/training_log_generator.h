// TrainingLogGenerator: a deterministic source of realistic PyTorch/CUDA
// training-log events, shaped the way Filebeat ships them (the ndjson parser
// at the root, so the log line's own fields sit at the top level of the
// event). Tests use it for fixtures with known content; the benchmark uses it
// for load.
//
// What an event looks like (one compact JSON object, ~350 bytes on average,
// 260 to 450):
//   {"@timestamp":"2026-11-29T10:23:15.123Z","message":"epoch 3 step 1200/5000 ...",
//    "log":{"level":"INFO","file":{"path":"/home/alice/runs/llama7b-sft-017/train.log"},
//           "offset":81234},
//    "host":{"name":"gpu-node-07"},"user":"alice","run_id":"llama7b-sft-017",
//    "gpu_id":3,"step":1200,"loss":0.4312,"gpu_mem_mb":61234}
// `gpu_id` is absent for lines that are not about one GPU (sshd, Jupyter, the
// driver check); `step`, `loss` and `gpu_mem_mb` appear only on the lines
// that carry them. The order of keys is fixed.
//
// The mix, per 1000 events on average: 720 INFO step lines, 100 DEBUG
// dataloader lines, 80 WARN lines (some with double quotes in the message),
// 40 INFO checkpoint/eval lines, 15 "RuntimeError: CUDA out of memory" ERROR
// lines, 5 NCCL P2P WARN lines, 2 CUDA driver ERROR lines, 2 NVRM Xid 79 ERROR
// lines, 8 Jupyter lines, 8 sshd lines and 20 Chinese lines (UTF-8).
// Users include zhangsan, lisi, wangwu, alice and bob; hosts are gpu-node-01
// to gpu-node-16.
//
// Determinism: the same options give the same sequence of events, byte for
// byte, on a given platform. The PRNG is the generator's own (not <random>'s
// implementation-defined distributions) and numbers are formatted with
// std::to_chars, so other platforms agree too, except where their libm's
// exp/cos could round a loss or learning rate differently in its last digit.
//
// Thread-safety: a generator is not safe for concurrent use; use one per
// thread (with different seeds for different streams).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace dashcam::testing {

// 2026-11-29T00:00:00Z in milliseconds since the Unix epoch.
inline constexpr int64_t kDefaultGeneratorStartMs = 1795910400000;

struct GeneratorOptions {
  // Seeds the PRNG. Default: 1.
  uint64_t seed = 1;
  // Timestamp of the first event's slot, in ms since the Unix epoch.
  // Default: 2026-11-29T00:00:00Z.
  int64_t start_ms = kDefaultGeneratorStartMs;
  // The first `expected_events` events are spread evenly, with jitter, over
  // [start_ms, start_ms + span_ms); later events keep the same pace past the
  // end. Timestamps never decrease (equal values happen when there are more
  // events than milliseconds). Default: one hour.
  // REQUIRES: span_ms > 0.
  int64_t span_ms = 3600000;
  // How many events the caller intends to draw; sets the pace above.
  // Default: 1000000. REQUIRES: expected_events > 0.
  int64_t expected_events = 1000000;
};

// One event; `json` is what Filebeat would send, the other members are the
// same facts pulled out for the test's convenience.
struct GeneratedEvent {
  std::string json;  // one compact JSON object, no trailing newline
  int64_t ts_ms = 0;
  std::string host;     // e.g. "gpu-node-07"
  std::string user;     // e.g. "zhangsan"
  std::string level;    // "DEBUG", "INFO", "WARN" or "ERROR"
  std::string message;  // unescaped; may contain UTF-8 and double quotes
  int gpu_id = -1;      // -1 when the event has no gpu_id field
};

class TrainingLogGenerator {
 public:
  explicit TrainingLogGenerator(GeneratorOptions options);
  ~TrainingLogGenerator();
  TrainingLogGenerator(TrainingLogGenerator&&) noexcept;
  TrainingLogGenerator& operator=(TrainingLogGenerator&&) noexcept;
  TrainingLogGenerator(const TrainingLogGenerator&) = delete;
  TrainingLogGenerator& operator=(const TrainingLogGenerator&) = delete;

  // The next event of the sequence. Never fails. ~1 µs.
  GeneratedEvent Next();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace dashcam::testing
