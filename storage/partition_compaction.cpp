#include "storage/partition_compaction.h"

#include <fmt/format.h>

#include "storage/fts_tokenizer.h"
#include "storage/partition.h"
#include "storage/source_codec.h"
#include "storage/stored_names.h"

namespace dashcam::storage {

namespace {

using SteadyClock = std::chrono::steady_clock;

Result<std::int64_t> PragmaInt(Db& db, const char* name) {
  auto stmt = db.Prepare(fmt::format("PRAGMA {}", name));
  if (!stmt.ok()) return stmt.status();
  if (stmt->Step() != SQLITE_ROW) return db.Check(stmt->Reset(), name);
  return stmt->Int(0);
}

Result<std::uint64_t> DatabaseBytes(Db& db) {
  auto pages = PragmaInt(db, "page_count");
  if (!pages.ok()) return pages.status();
  auto size = PragmaInt(db, "page_size");
  if (!size.ok()) return size.status();
  return static_cast<std::uint64_t>(*pages) * static_cast<std::uint64_t>(*size);
}

// One FTS5 'merge' step of `pages` pages (negative: start a merge of every
// segment, whatever its level). True when it did work: FTS5 documents that a
// step which changed fewer than two rows found nothing to merge.
Result<bool> MergeStep(Db& db, std::string_view table, int pages) {
  const int before = sqlite3_total_changes(db.get());
  if (auto s =
          db.Exec(fmt::format("INSERT INTO {0}({0}, rank) VALUES('merge', {1})", table, pages));
      !s.ok()) {
    return s;
  }
  return sqlite3_total_changes(db.get()) - before >= 2;
}

}  // namespace

Status CompactionStopped() {
  return Status::Unavailable("compaction stopped");
}

Status MergeIntoOneSegment(Db& db, std::string_view table, int pages, const CompactionPace& pace,
                           int* steps) {
  // Only the first step is negative: a later negative one would restart the
  // merge whenever a late event has added a segment meanwhile (FTS5's docs).
  for (int step_pages = -pages;; step_pages = pages) {
    const auto t0 = SteadyClock::now();
    auto worked = MergeStep(db, table, step_pages);
    if (!worked.ok()) return worked.status();
    if (!*worked) return Status::Ok();
    ++*steps;
    if (!pace(SteadyClock::now() - t0)) return CompactionStopped();
  }
}

Status OpenForCompaction(const std::string& path, Db& db) {
  if (auto s = db.Open(path, SQLITE_OPEN_READWRITE); !s.ok()) return s;
  if (auto s = RegisterFtsTokenizer(db.get()); !s.ok()) return s;
  // What a re-index reads documents with (partition_reindex.h).
  if (auto s = RegisterSourceFunction(db.get()); !s.ok()) return s;
  if (auto s = RegisterNameFunction(db.get()); !s.ok()) return s;
  if (auto s = db.Exec(kSecureDeleteFast); !s.ok()) return s;
  sqlite3_busy_timeout(db.get(), 5000);
  return Status::Ok();
}

Result<CompactionResult> CompactPartition(Db& db, const CompactionSteps& steps,
                                          const CompactionPace& pace) {
  CompactionResult out;
  auto before = DatabaseBytes(db);
  if (!before.ok()) return before.status();
  out.bytes_before = *before;
  auto vacuum_mode = PragmaInt(db, "auto_vacuum");
  if (!vacuum_mode.ok()) return vacuum_mode.status();
  out.returns_pages = *vacuum_mode == 2;  // INCREMENTAL

  if (auto s = MergeIntoOneSegment(db, "fts", steps.merge_pages, pace, &out.merge_steps); !s.ok()) {
    return s;
  }

  while (out.returns_pages) {
    auto free_pages = PragmaInt(db, "freelist_count");
    if (!free_pages.ok()) return free_pages.status();
    if (*free_pages == 0) break;
    const auto t0 = SteadyClock::now();
    if (auto s = db.Exec(fmt::format("PRAGMA incremental_vacuum({})", steps.vacuum_pages));
        !s.ok()) {
      return s;
    }
    ++out.vacuum_steps;
    if (!pace(SteadyClock::now() - t0)) return CompactionStopped();
  }

  // The steps went through the WAL; give its space back too. A reader or the
  // writer may hold it: then it stays until their own checkpoint.
  sqlite3_wal_checkpoint_v2(db.get(), nullptr, SQLITE_CHECKPOINT_TRUNCATE, nullptr, nullptr);
  auto merged = FtsFullyMerged(db);
  if (!merged.ok()) return merged.status();
  out.fully_merged = *merged;
  auto after = DatabaseBytes(db);
  if (!after.ok()) return after.status();
  out.bytes_after = *after;
  return out;
}

Result<bool> FtsFullyMerged(Db& db) {
  if (auto s = db.Exec("BEGIN IMMEDIATE"); !s.ok()) return s;
  auto worked = MergeStep(db, "fts", -1);
  db.Exec("ROLLBACK");
  if (!worked.ok()) return worked.status();
  return !*worked;
}

}  // namespace dashcam::storage
