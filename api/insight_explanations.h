// What an incident means, in words: a title, a plain sentence with the
// extracted facts and suggested fixes, per insight kind (the detectors'
// kinds, ingest/insight_detectors.h, and the training-metric kinds). Sizes
// are given in GiB as PyTorch prints them (2 decimals for the allocation
// asked for, 1 for the totals), Xid codes with their meaning, NCCL
// collectives with op, sequence number and timeout.
//
// Thread-safety: pure functions over immutable tables.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "storage/document_reader.h"

namespace dashcam::api {

// The insight an event carries, read from its stored document.
struct InsightEvent {
  std::string kind;                  // insight.kind
  std::string severity;              // insight.severity ("error" when missing)
  std::string run_id;                // run.id; may be empty
  std::string host;                  // host.name, else host; may be empty
  std::string user;                  // user, else user.name; may be empty
  std::optional<std::int64_t> rank;  // insight.rank, else run.rank
  std::optional<std::int64_t> gpu;   // insight.gpu
  std::string message;
  // The other insight.* fields, named without "insight.", in document order.
  std::vector<storage::Field> facts;
};

// The insight of a document's searchable view; nullopt without insight.kind.
std::optional<InsightEvent> ReadInsightEvent(storage::DocumentView& view);

struct Explanation {
  std::string title;        // "CUDA out of memory on gpu-node-07 GPU 0"
  std::string explanation;  // a sentence with the facts and who/where/when
  std::vector<std::string> fixes;
};

// `first_seen`: when the incident started (the subject is its first event).
Explanation Explain(const InsightEvent& subject, TimeMs first_seen);

// Ranks severities: critical 3, error 2, warning 1, anything else 0.
int SeverityRank(std::string_view severity);

}  // namespace dashcam::api
