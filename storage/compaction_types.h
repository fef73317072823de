// The vocabulary of background compaction (compactor.h,
// partition_compaction.h): its settings and what it reports, for the store
// interface and /api/v1/status.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "storage/record.h"

namespace dashcam::storage {

struct CompactionSteps {
  int merge_pages = 1000;   // FTS5 pages written per merge step (~4 KiB each)
  int vacuum_pages = 2000;  // database pages returned per incremental-vacuum step
  // Events indexed per transaction when a day is re-indexed (partition_reindex.h).
  int reindex_events = 10000;
  // A re-indexed day of at least this many events also has its documents
  // encoded anew with a dictionary trained on the whole day (source_codec.h);
  // below, the dictionary's 32 KiB outweigh what it saves.
  std::uint64_t day_dictionary_events = 10000;
  // A numbered day's index keeps no positions (detail=none, rowid_layout.h):
  // ~62 bytes less an event of the bench's logs; phrases and proximity are
  // then the AND of their words, checked in each candidate's document
  // (fts_query_compiler.h), which makes a common phrase ~10x slower.
  bool drop_positions = false;
  // Tests only: a numbering keeps the docnos' keys in table `docnos`, a row
  // each, as a dashcam before version 11 did (docno_keys.h).
  bool test_docnos_table = false;
};

// What compacting one partition did.
struct CompactionResult {
  std::uint64_t bytes_before = 0;  // page_count * page_size, before and after
  std::uint64_t bytes_after = 0;
  int merge_steps = 0;         // merge steps that did work
  int vacuum_steps = 0;        // incremental-vacuum steps
  bool returns_pages = false;  // the file has auto_vacuum=INCREMENTAL
  // The index was one segment at the end: false when late events added
  // segments after the merge had started.
  bool fully_merged = false;
  // Events indexed anew by a re-index (partition_reindex.h) swapped in
  // before the merge; 0 when none was due or it was dropped.
  std::uint64_t reindexed_events = 0;
  // Of their documents, those compressed anew with the day's dictionary
  // (partition_reindex.h).
  std::uint64_t documents_encoded = 0;
  // A re-index was due and did not finish (a write came meanwhile, or it
  // failed): the day is to be compacted again.
  bool reindex_pending = false;
};

struct CompactionPolicy {
  bool enabled = true;
  // How long a past day's files must be unmodified. Default: 10 minutes.
  std::chrono::milliseconds quiet_period{10 * 60'000};
  std::chrono::milliseconds check_period{60'000};
  CompactionSteps steps;
};

// A compaction that finished.
struct CompactedPartition {
  std::int64_t day = 0;
  CompactionResult result;
  double seconds = 0;  // wall time, pauses included
  TimeMs at_ms = 0;    // when it finished
};

// What compaction has done since start.
struct CompactionStatus {
  CompactionPolicy policy;
  std::uint64_t compacted_partitions = 0;  // with work done
  std::uint64_t returned_bytes = 0;
  std::optional<CompactedPartition> last;  // the last one with work done
  std::optional<std::int64_t> running;     // the day being compacted now
  std::string last_error;                  // of the last failure, empty if none
};

}  // namespace dashcam::storage
