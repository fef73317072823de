// InsightDetectors: recognises GPU and training failures in an event's text
// at ingest (issue 8, section 1) and says what they are: a kind, a severity
// and typed facts extracted from the text.
//
// The detectors are a table (insight_detectors.cpp): each rule is a kind, a
// severity and one RE2 pattern whose named capture groups are the facts.
// A group's name decides its type:
//   bytes_*          a size as printed ("2.10 GiB", "785.00 MiB", "20 MiB",
//                    "123456kB") -> a number of bytes (K, M, G, T are
//                    binary multiples with or without the "i")
//   *_version, op, error, status, process, signal_name, pci, where,
//   meaning          a string, as printed
//   anything else    an integer (gpu, rank, seq, timeout_ms, xid, pid, ...)
// Rules are ordered most specific first and one event gets at most one
// kind: the first rule that matches. All patterns are compiled into one
// RE2::Set as well, so a clean line costs one DFA pass; only a matching
// line is matched again with captures. Every kind also gets `rank` from a
// "[rank3]:" / "[Rank 3]" prefix when its pattern did not capture one.
//
// Kinds: cuda_oom, cuda_driver_mismatch, gpu_unavailable, nccl, cuda_error,
// xid, process_killed, nan_loss (here only the fp16 loss-scaler overflow
// lines; the numeric kinds are in training_anomalies.h). Severities:
// critical, error, warning.
//
// Thread-safety: immutable after construction; Detect may be called from
// any number of threads at once.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include <re2/re2.h>
#include <re2/set.h>

#include "storage/record.h"

namespace dashcam::ingest {

struct Insight {
  std::string_view kind;      // points into the static rule table
  std::string_view severity;  // likewise
  // Extracted facts, named without the "insight." prefix, in pattern order;
  // numbers as Field::Type::kNumber with canonical text.
  std::vector<storage::Field> facts;
};

class InsightDetectors {
 public:
  // Compiles the table. Aborts if a pattern does not compile (the table is
  // part of the program; insight_detectors_test compiles it too).
  InsightDetectors();
  ~InsightDetectors();
  InsightDetectors(const InsightDetectors&) = delete;
  InsightDetectors& operator=(const InsightDetectors&) = delete;

  // Looks at `message`, then at `error_message` (an event's error.message;
  // may be empty); the first text a rule matches decides. Only the first
  // kMaxScanBytes of each text are looked at. Returns false and leaves
  // `out` unspecified when nothing matched.
  bool Detect(std::string_view message, std::string_view error_message, Insight& out) const;

  static constexpr std::size_t kMaxScanBytes = 64 * 1024;

 private:
  bool DetectIn(std::string_view text, Insight& out) const;

  // Constant after construction.
  std::vector<std::unique_ptr<re2::RE2>> rules_;  // same order as the table
  std::unique_ptr<re2::RE2::Set> set_;
  std::unique_ptr<re2::RE2> rank_;  // a "[rank3]:" / "[Rank 3]" prefix
};

// The meaning of an NVIDIA Xid code ("" when not in the table) and its
// severity ("critical" for hardware faults, "error" otherwise).
std::string_view XidMeaning(int xid);
std::string_view XidSeverity(int xid);

// "2.10 GiB" -> 2254857830; nullopt when `text` is not a size.
std::optional<double> ParseByteSize(std::string_view text);

}  // namespace dashcam::ingest
