// The values storage speaks in: what is appended (Record), what comes back
// (StoredEvent), and how searches are asked and answered. No wire formats:
// `source` is opaque bytes to storage (the API layer knows it is JSON).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "storage/query_ast.h"
#include "storage/status.h"
#include "storage/time_format.h"

namespace dashcam::storage {

// One searchable value of an event. Nested objects arrive flattened to dotted
// names ("host.name"); an array gives one Field per element, same name.
struct Field {
  enum class Type : std::uint8_t { kString, kNumber, kBool };
  std::string name;
  Type type = Type::kString;
  std::string
      text;  // kString: the value; kNumber: canonical form ("0.5", "12"); kBool: "true"/"false"
  double number = 0;  // kNumber only
};

// How an event with a caller-given id (`doc_id`) meets an existing one.
enum class WriteOp : std::uint8_t {
  kCreate,  // keep the existing event; this one is a duplicate
  kIndex,   // replace the existing event
};

struct Record {
  TimeMs ts_ms = 0;     // in [kMinEventTime, kMaxEventTime)
  std::string level;    // as sent ("ERROR"); may be empty
  std::string message;  // the text searched by bare terms
  std::string index;    // the Elasticsearch index name it was sent to; may be empty
  std::string doc_id;   // caller-given unique id within the event's UTC day; may be empty
  WriteOp op = WriteOp::kCreate;
  // Searchable fields (not including message): those of `source`, as
  // DocumentReader reads them. Queries answer from the index built of these
  // or from reading `source`, whichever is cheaper, so the two must agree.
  std::vector<Field> fields;
  std::string source;  // the document as it will be returned
  // The group the event belongs to (for dashcam: its training run), kept
  // in a per-partition rollup of first/last time and count; empty: none.
  // `group_end`: this event closes its group (a run's finishing line).
  std::string group;
  bool group_end = false;
  // Storage's own (source_codec.h): `source` as its partition stores it,
  // compressed before the writer thread with dictionary `stored_dictionary`;
  // empty: not done.
  std::string stored_source;
  std::uint64_t stored_dictionary = 0;
  std::size_t ApproxBytes() const;
};

enum class RecordOutcome : std::uint8_t { kCreated, kUpdated, kDuplicate, kFailed };

struct AppendResult {
  // The first failure, if any. With no outcomes, nothing was stored (the
  // batch was refused); otherwise the records marked kFailed were not stored
  // and this says why.
  Status status;
  std::vector<RecordOutcome> outcomes;  // one per record, in order
  std::vector<std::string> ids;         // the event id of each stored record, in order
};

// An event id: rowid in the time-ordered id space (see partition.h). Printed
// as 16 lowercase hex digits.
using EventKey = std::int64_t;
std::string FormatEventKey(EventKey key);
std::optional<EventKey> ParseEventKey(std::string_view text);

struct StoredEvent {
  EventKey key = 0;
  TimeMs ts_ms = 0;
  std::string id;  // doc_id when the event has one, else FormatEventKey(key)
  std::string index;
  std::string level;
  std::string source;
};

using Clock = std::chrono::steady_clock;

struct SearchRequest {
  const query::Node* query = nullptr;  // required; owned by the caller
  TimeMs from = kMinEventTime;         // inclusive
  TimeMs to = kMaxEventTime;           // exclusive
  std::size_t limit = 100;             // hits to return, newest first
  std::optional<EventKey> before;      // cursor: only events strictly older (in key order)
  std::size_t count_limit = 10000;     // count matches up to this many (0: do not count)
  Clock::time_point deadline = Clock::time_point::max();
};

struct SearchPage {
  std::vector<StoredEvent> hits;  // newest first
  std::uint64_t total = 0;        // matches in the range (not limited by `before`)
  bool total_exact = true;        // false: total reached count_limit
  std::optional<EventKey> next;   // pass as `before` for the next page
  // Some of the data did not answer and was skipped (a ClickHouse shard
  // down, with ChStoreOptions::allow_partial): hits and total may lack it.
  bool partial = false;
};

// Matching events per time bucket: bucket start (a multiple of the interval
// since the epoch) -> count. Only non-empty buckets, in time order.
struct HistogramBucket {
  TimeMs start = 0;
  std::uint64_t count = 0;
};

// The most frequent values of one field among the matching events.
struct TermsResult {
  struct Bucket {
    std::string value;
    std::uint64_t count = 0;
  };
  std::vector<Bucket> buckets;    // by count, then value
  std::uint64_t other_count = 0;  // values counted but not in `buckets`
  std::uint64_t events_read = 0;  // events looked at
  bool complete = true;           // false: stopped at the scan limit (newest events only)
};

struct PartitionInfo {
  std::int64_t day = 0;  // UTC day number
  std::string path;
  std::uint64_t bytes = 0;
};

}  // namespace dashcam::storage
