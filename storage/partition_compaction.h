// Compaction of one day partition that is no longer written to, or hardly: a
// late event may still arrive while it runs.
//
// Two things shrink a partition once its day is over:
//   1. Its FTS5 index is merged into one segment, as FTS5's 'optimize' does.
//      Queries then read one doclist per term instead of one per segment.
//   2. The pages that the day's segment merges freed (measured: a quarter of
//      a 1M-event file) are returned to the filesystem.
// Both run as many short write transactions: FTS5 'merge' steps that write a
// bounded number of pages each, then PRAGMA incremental_vacuum steps. So a
// late event waits for at most one step on the file's write lock (the
// writer's busy timeout is 5 s; a step writes a few MiB), and readers read
// throughout (WAL). A VACUUM would instead hold the lock for the whole
// rewrite, and pass the whole file through the WAL.
//
// Pages are returned only by files created with auto_vacuum=INCREMENTAL, as
// InitPartitionSchema creates every file now; files made by older versions of
// dashcam have none. Such a file still has its index merged; its free pages
// are reused by later writes, but the file does not shrink.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "storage/compaction_types.h"
#include "storage/sqlite_db.h"
#include "storage/status.h"

namespace dashcam::storage {

// Called after each step with how long it took; false stops the compaction
// there (CompactPartition then returns Unavailable). Each step is committed,
// so stopping early leaves a smaller or equal file, never a broken one.
using CompactionPace = std::function<bool(std::chrono::steady_clock::duration step)>;

// Opens `path` for compaction: read-write, with dashcam's FTS5 tokenizer
// registered (FTS5 needs it to open the table), the SQL functions a
// re-index reads documents with (dc_source, dc_name) and the writer's busy
// timeout.
Status OpenForCompaction(const std::string& path, Db& db);

// Merges the FTS5 index of `db` into one segment, then returns its free
// pages (when the file can), then truncates the WAL if no reader holds it.
// A partition already compacted costs one no-op merge step and a freelist
// count.
Result<CompactionResult> CompactPartition(Db& db, const CompactionSteps& steps,
                                          const CompactionPace& pace);

// Merges FTS5 table `table` of `db` into one segment in 'merge' steps of
// `pages` pages, each its own transaction, calling `pace` after each; adds
// to `*steps` the steps that did work. Errors: Unavailable when `pace`
// stopped it.
Status MergeIntoOneSegment(Db& db, std::string_view table, int pages, const CompactionPace& pace,
                           int* steps);

// What a step returns when `pace` stopped it: Unavailable.
Status CompactionStopped();

// Whether the FTS5 index of `db` is a single segment: a merge step started
// the way CompactPartition starts one would do nothing. Runs that step,
// inside a transaction it rolls back.
Result<bool> FtsFullyMerged(Db& db);

}  // namespace dashcam::storage
