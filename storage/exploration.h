// The values of the exploration queries an EventStore answers besides
// search: histograms split by a field or aggregating a numeric one, field
// statistics (facets), and the neighbours of an event in its source. Plain
// values; no wire format (the API layer renders them).
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "storage/record.h"

namespace dashcam::storage {

// The field name that means "the event's level" (log.level, else level:
// Record::level) in a histogram split, and the meta field naming the index
// an event was written to.
inline constexpr const char* kLevelSplit = "level";
inline constexpr const char* kIndexField = "_index";

// count/sum/min/max of some numbers; min > max when count == 0.
struct NumericStats {
  std::uint64_t count = 0;
  double sum = 0;
  double min = std::numeric_limits<double>::infinity();
  double max = -std::numeric_limits<double>::infinity();

  void Add(double v) {
    ++count;
    sum += v;
    if (v < min) min = v;
    if (v > max) max = v;
  }
  void Merge(const NumericStats& o) {
    count += o.count;
    sum += o.sum;
    if (o.min < min) min = o.min;
    if (o.max > max) max = o.max;
  }
};

struct HistogramCell {
  std::uint64_t count = 0;  // events
  NumericStats value;       // numeric values of HistogramSpec::value_field among them
};

struct HistogramSpec {
  // Bucket width in ms; buckets start at multiples of it since the epoch.
  // REQUIRES: > 0, and at most kMaxHistogramBuckets buckets over the range.
  TimeMs interval = 0;
  // Empty: no split. Otherwise events are counted apart by this field's
  // values (kLevelSplit: the event's level; kIndexField: its index). An
  // event with several values (an array) counts once under each.
  std::string split_field;
  // How many of the split field's values get their own series: the most
  // frequent over the whole range (ties: smaller value first). Default: 10.
  std::size_t split_size = 10;
  // Empty: counts only. Otherwise each cell also gathers the numeric values
  // of this field: numbers, and strings that are a whole decimal number
  // ("42", "0.5").
  std::string value_field;
};

inline constexpr std::size_t kMaxHistogramBuckets = 20'000;

struct HistogramTable {
  // The split values with a series of their own, most frequent first.
  std::vector<std::string> keys;
  // True when `keys` were chosen from a sample (the newest matching
  // events) because the field has too many values to track them all; the
  // counts are exact either way.
  bool keys_sampled = false;
  struct Bucket {
    TimeMs start = 0;
    HistogramCell total;                // every matching event of the bucket
    std::vector<HistogramCell> by_key;  // one per keys[i]; empty without a split
    HistogramCell other;                // events with a split value not in keys
    HistogramCell missing;              // events without a split value
  };
  std::vector<Bucket> buckets;  // non-empty buckets only, in time order
};

// Which fields matching events have, and their most frequent values.
struct FieldsSpec {
  std::size_t top = 10;             // values listed per field
  std::size_t max_events = 10'000;  // events read at most, newest first
};

struct FieldSummary {
  std::string name;          // dotted name; "message" and "_index" included
  std::uint64_t events = 0;  // events that have it (an array counts once)
  bool has_string = false, has_number = false, has_bool = false;  // value types seen
  struct Value {
    std::string text;  // the value as text (numbers in canonical form)
    std::uint64_t events = 0;
  };
  std::vector<Value> top;      // most frequent first (ties: smaller text first)
  std::uint64_t distinct = 0;  // distinct values seen (at least, when !distinct_exact)
  bool distinct_exact = true;  // false: the memory budget stopped tracking new values
};

struct FieldsSummary {
  std::uint64_t events_read = 0;
  bool complete = true;              // false: more events match than were read
  bool fields_truncated = false;     // more distinct field names than are tracked
  std::vector<FieldSummary> fields;  // most common first (ties: name order)
};

// A field an event's neighbours must share with it. `values` empty: the
// field must be absent; otherwise the event's values of it, as text in
// document order, must be exactly these. kIndexField names the index.
struct ScopeField {
  std::string name;
  std::vector<std::string> values;
};

struct NeighborsSpec {
  EventKey anchor = 0;
  std::vector<ScopeField> scope;
  std::size_t before = 20, after = 20;
  // Candidates read per side at most before giving up (a scope whose
  // fields the index cannot narrow is checked event by event).
  std::size_t max_examined = 1'000'000;
};

struct Neighbors {
  std::vector<StoredEvent> before;  // oldest first, all older than the anchor
  std::vector<StoredEvent> after;   // oldest first, all newer than the anchor
  // More such events exist beyond those returned, or max_examined stopped
  // the search before it could tell.
  bool more_before = false;
  bool more_after = false;
};

struct TimeExtent {
  TimeMs first = 0;  // the oldest stored event's time
  TimeMs last = 0;   // the newest's
};

}  // namespace dashcam::storage
