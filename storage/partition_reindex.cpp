#include "storage/partition_reindex.h"

#include <chrono>
#include <limits>
#include <string>

#include <fmt/format.h>

#include "storage/attrs_codec.h"
#include "storage/document_reader.h"
#include "storage/partition.h"
#include "storage/source_codec.h"
#include "storage/stored_names.h"
#include "storage/vocabulary_collector.h"

namespace dashcam::storage {

namespace {

using SteadyClock = std::chrono::steady_clock;

// The documents were checked against the limits ingest had when they came;
// reading them again must not refuse one under other settings.
constexpr DocumentLimits kStoredDocuments{std::numeric_limits<std::size_t>::max(), 1024};

// Runs `body` in a write transaction, committed when it succeeds.
template <class Body>
Status InTransaction(Db& db, Body&& body) {
  if (auto s = db.Exec("BEGIN IMMEDIATE"); !s.ok()) return s;
  Status s = body();
  if (s.ok()) s = db.Exec("COMMIT");
  if (!s.ok()) db.Exec("ROLLBACK");
  return s;
}

// Indexes events one step at a time: those past the last key indexed.
class DocumentIndexer {
 public:
  // `docnos`: the table to number the events in (rowid_layout.h); empty:
  // the rowids are keys.
  DocumentIndexer(Db& db, std::string_view table, std::string_view docnos)
      : db_(db), table_(table), docnos_(docnos) {}

  Status Prepare() {
    auto read = db_.Prepare(
        "SELECT key, dc_name(idx), dc_source(source) FROM events WHERE key > ?1 "
        "ORDER BY key LIMIT ?2",
        /*persistent=*/true);
    if (!read.ok()) return read.status();
    read_ = std::move(*read);
    auto insert =
        db_.Prepare(fmt::format("INSERT INTO {}(rowid, message, attrs) VALUES(?1, ?2, ?3)", table_),
                    /*persistent=*/true);
    if (!insert.ok()) return insert.status();
    insert_ = std::move(*insert);
    if (docnos_.empty()) return Status::Ok();
    auto number =
        db_.Prepare(fmt::format("INSERT INTO {}(docno, key) VALUES(?1, ?2)", docnos_), true);
    if (!number.ok()) return number.status();
    number_ = std::move(*number);
    return Status::Ok();
  }

  // Indexes up to `n` events in the open transaction; sets `*done` when
  // none is left.
  Status Step(int n, std::uint64_t* indexed, bool* done) {
    read_.Bind(1, next_after_);
    read_.Bind(2, std::int64_t{n});
    int rows = 0;
    int rc = SQLITE_DONE;
    Status s;
    while (s.ok() && (rc = read_.Step()) == SQLITE_ROW) {
      ++rows;
      next_after_ = read_.Int(0);
      s = IndexOne(next_after_, read_.Text(1), read_.Text(2));
    }
    read_.Reset();
    if (!s.ok()) return s;
    if (rc != SQLITE_DONE) return db_.Check(rc, "read events");
    *indexed += static_cast<std::uint64_t>(rows);
    *done = rows < n;
    return Status::Ok();
  }

 private:
  Status IndexOne(EventKey key, std::string_view index, std::string_view source) {
    if (Status s = reader_.ReadUnpadded(source, view_); !s.ok()) {
      return Status::Internal(
          fmt::format("event {} cannot be read again: {}", FormatEventKey(key), s.message()));
    }
    message_.clear();
    EncodeMessage(view_.message.value_or(std::string()), message_);
    attrs_.clear();
    EncodeAttrs(view_.fields, index, attrs_);
    std::int64_t rowid = key;
    if (!docnos_.empty()) {
      rowid = ++docno_;
      number_.Bind(1, rowid);
      number_.Bind(2, key);
      const int rc = number_.Step();
      number_.Reset();
      if (rc != SQLITE_DONE) return db_.Check(rc, "number the event");
    }
    insert_.Bind(1, rowid);
    insert_.BindStatic(2, message_);
    insert_.BindStatic(3, attrs_);
    const int rc = insert_.Step();
    insert_.Reset();
    return rc == SQLITE_DONE ? Status::Ok() : db_.Check(rc, "insert into the new index");
  }

  Db& db_;
  const std::string table_, docnos_;
  Stmt read_, insert_, number_;
  std::int64_t docno_ = 0;
  DocumentReader reader_{kStoredDocuments};
  DocumentView view_;
  std::string message_, attrs_;
  EventKey next_after_ = -1;
};

Status DropReindexTable(Db& db) {
  return db.Exec(fmt::format("DROP TABLE IF EXISTS {}; DROP TABLE IF EXISTS {}", kReindexTable,
                             kReindexDocnosTable));
}

// A single-value query's integer (0 for NULL).
Result<std::int64_t> QueryInt(Db& db, const std::string& sql) {
  auto stmt = db.Prepare(sql);
  if (!stmt.ok()) return stmt.status();
  if (stmt->Step() != SQLITE_ROW) return db.Check(stmt->Reset(), "read");
  return stmt->Int(0);
}

// Whether the file's events can be numbered: every key lies far above any
// docno (only a day of 1970-01-01 has keys below 2^40), so late events,
// indexed by key, never meet a docno.
Result<bool> CanNumber(Db& db) {
  auto lowest = QueryInt(db, "SELECT coalesce(min(key), 0) FROM events");
  if (!lowest.ok()) return lowest.status();
  return *lowest > (std::int64_t{1} << 40);
}

Result<std::int64_t> DataVersion(Db& db) {
  return QueryInt(db, "PRAGMA data_version");
}

// What meta "rowids" says now.
Result<RowidLayout> ReadRowidLayout(Db& db) {
  auto stmt = db.Prepare(fmt::format("SELECT value FROM meta WHERE key = '{}'", kRowidsMeta));
  if (!stmt.ok()) return stmt.status();
  const int rc = stmt->Step();
  RowidLayout layout = ParseRowidLayout(rc == SQLITE_ROW ? stmt->Text(0) : std::string_view());
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) return db.Check(rc, "read rowids");
  return layout;
}

// The new index, built and its terms in `vocab`.
Status BuildReindexTable(Db& db, bool number, const CompactionSteps& steps,
                         const CompactionPace& pace, std::uint64_t* indexed) {
  if (auto s = BuildIndexFromDocuments(db, kReindexTable, steps, pace, indexed,
                                       number ? kReindexDocnosTable : "");
      !s.ok()) {
    return s;
  }
  const auto t0 = SteadyClock::now();
  if (auto s = InTransaction(db, [&] { return BackfillVocabulary(db, kReindexTable); }); !s.ok()) {
    return s;
  }
  return pace(SteadyClock::now() - t0) ? Status::Ok() : CompactionStopped();
}

}  // namespace

Result<bool> NeedsReindex(Db& db) {
  auto stmt = db.Prepare(
      fmt::format("SELECT count(*) FROM meta WHERE (key = '{}' AND value = '{}') OR (key = '{}' "
                  "AND value = 'all')",
                  kKeywordFieldsMeta, kKeywordFields, kFieldTermsMeta));
  if (!stmt.ok()) return stmt.status();
  if (stmt->Step() != SQLITE_ROW) return db.Check(stmt->Reset(), "read meta");
  if (stmt->Int(0) < 2) return true;
  auto rowids = ReadRowidLayout(db);
  if (!rowids.ok()) return rowids.status();
  if (rowids->clean()) return false;
  return CanNumber(db);
}

Status BuildIndexFromDocuments(Db& db, std::string_view table, const CompactionSteps& steps,
                               const CompactionPace& pace, std::uint64_t* indexed,
                               std::string_view docnos) {
  if (auto s = RegisterSourceFunction(db.get()); !s.ok()) return s;
  if (auto s = RegisterNameFunction(db.get()); !s.ok()) return s;
  if (auto s = InTransaction(db,
                             [&] {
                               Status s = CreateFtsTable(db, table);
                               if (s.ok() && !docnos.empty()) {
                                 s =
                                     db.Exec(fmt::format("CREATE TABLE {}(docno INTEGER PRIMARY "
                                                         "KEY, key INTEGER NOT NULL)",
                                                         docnos));
                               }
                               return s;
                             });
      !s.ok()) {
    return s;
  }
  DocumentIndexer indexer(db, table, docnos);
  if (auto s = indexer.Prepare(); !s.ok()) return s;
  for (bool done = false; !done;) {
    const auto t0 = SteadyClock::now();
    if (auto s =
            InTransaction(db, [&] { return indexer.Step(steps.reindex_events, indexed, &done); });
        !s.ok()) {
      return s;
    }
    if (!pace(SteadyClock::now() - t0)) return CompactionStopped();
  }
  int merge_steps = 0;
  return MergeIntoOneSegment(db, table, steps.merge_pages, pace, &merge_steps);
}

Result<ReindexResult> ReindexPartition(Db& db, const CompactionSteps& steps,
                                       const CompactionPace& pace) {
  ReindexResult out;
  if (auto s = DropReindexTable(db); !s.ok()) return s;
  auto version = DataVersion(db);
  if (!version.ok()) return version.status();
  auto number = CanNumber(db);
  if (!number.ok()) return number.status();
  auto before = ReadRowidLayout(db);
  if (!before.ok()) return before.status();
  if (Status s = BuildReindexTable(db, *number, steps, pace, &out.events); !s.ok()) {
    // Stopped: the next attempt drops what was built. Failed (a full disk,
    // a document that cannot be read): the space is given back now, as
    // the day is not tried again until its files change.
    if (s.code() != StatusCode::kUnavailable) DropReindexTable(db);
    return s;
  }
  Status swap = InTransaction(db, [&]() -> Status {
    auto now = DataVersion(db);
    if (!now.ok()) return now.status();
    if (*now != *version) return DropReindexTable(db);
    out.swapped = true;
    std::string rowids =
        fmt::format("DROP TABLE IF EXISTS docnos; DELETE FROM meta WHERE key = '{}'", kRowidsMeta);
    if (*number && out.events > 0) {
      out.numbered = true;
      rowids = fmt::format(
          "DROP TABLE IF EXISTS docnos; ALTER TABLE {} RENAME TO docnos; "
          "INSERT OR REPLACE INTO meta VALUES('{}', '{}')",
          kReindexDocnosTable, kRowidsMeta,
          DocnosMeta(static_cast<std::int64_t>(out.events), before->generation + 1));
    }
    return db.Exec(
        fmt::format("DROP TABLE fts; ALTER TABLE {} RENAME TO fts; "
                    "INSERT OR REPLACE INTO meta VALUES('{}', '{}'); "
                    "INSERT OR REPLACE INTO meta VALUES('{}', 'all'); {}",
                    kReindexTable, kKeywordFieldsMeta, kKeywordFields, kFieldTermsMeta, rowids));
  });
  if (!swap.ok()) return swap;
  return out;
}

}  // namespace dashcam::storage
