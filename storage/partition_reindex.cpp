#include "storage/partition_reindex.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "storage/attrs_codec.h"
#include "storage/docno_keys.h"
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

// The docnos table of a file numbered before version 11, a row each
// (docno_keys.h), made only for CompactionSteps::test_docnos_table.
std::string DocnosTableSql(std::string_view table) {
  return fmt::format("CREATE TABLE {}(docno INTEGER PRIMARY KEY, key INTEGER NOT NULL)", table);
}

// Whether a re-index's new index has positions: always but on a numbered
// day with CompactionSteps::drop_positions (never in the older form).
bool KeepsPositions(bool numbered, const CompactionSteps& steps) {
  return !numbered || steps.test_docnos_table || !steps.drop_positions;
}

// Indexes events one step at a time: those past the last key indexed.
class DocumentIndexer {
 public:
  // `docnos`: the table to number the events in (rowid_layout.h), in
  // blocks (docno_keys.h) or, with `docnos_table`, a row each as before
  // version 11; empty: the rowids are keys. `recoder`: copies every event
  // into table kReindexEventsTable with its document encoded anew; null:
  // none.
  DocumentIndexer(Db& db, std::string_view table, std::string_view docnos, bool docnos_table,
                  DayDictionaryEncoder* recoder)
      : db_(db),
        table_(table),
        docnos_(docnos),
        recoder_(recoder),
        blocks_(docnos.empty() || docnos_table ? nullptr
                                               : std::make_unique<DocnoKeysWriter>(db, docnos)) {}

  Status Prepare() {
    auto read = db_.Prepare(
        "SELECT key, dc_name(idx), dc_source(source), level, idx, doc_id, source FROM events "
        "WHERE key > ?1 ORDER BY key LIMIT ?2",
        /*persistent=*/true);
    if (!read.ok()) return read.status();
    read_ = std::move(*read);
    if (recoder_) {
      auto copy = db_.Prepare(fmt::format("INSERT INTO {}(key, level, idx, doc_id, source) "
                                          "VALUES(?1, ?2, ?3, ?4, ?5)",
                                          kReindexEventsTable),
                              true);
      if (!copy.ok()) return copy.status();
      copy_ = std::move(*copy);
    }
    auto insert = db_.Prepare(fmt::format("INSERT INTO {}(rowid, message) VALUES(?1, ?2)", table_),
                              /*persistent=*/true);
    if (!insert.ok()) return insert.status();
    insert_ = std::move(*insert);
    if (docnos_.empty() || blocks_) return Status::Ok();
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
      if (s.ok() && recoder_) s = CopyOne();
    }
    read_.Reset();
    if (!s.ok()) return s;
    if (rc != SQLITE_DONE) return db_.Check(rc, "read events");
    *indexed += static_cast<std::uint64_t>(rows);
    *done = rows < n;
    return *done && blocks_ ? blocks_->Finish() : Status::Ok();
  }

 private:
  Status IndexOne(EventKey key, std::string_view index, std::string_view source) {
    if (Status s = reader_.ReadUnpadded(source, view_); !s.ok()) {
      return Status::Internal(
          fmt::format("event {} cannot be read again: {}", FormatEventKey(key), s.message()));
    }
    text_.clear();
    EncodeIndexedEvent(view_.message.value_or(std::string()), view_.fields, index, text_);
    std::int64_t rowid = key;
    if (blocks_) {
      rowid = ++docno_;
      if (Status s = blocks_->Add(key); !s.ok()) return s;
    } else if (!docnos_.empty()) {
      rowid = ++docno_;
      number_.Bind(1, rowid);
      number_.Bind(2, key);
      const int rc = number_.Step();
      number_.Reset();
      if (rc != SQLITE_DONE) return db_.Check(rc, "number the event");
    }
    insert_.Bind(1, rowid);
    insert_.BindStatic(2, text_);
    const int rc = insert_.Step();
    insert_.Reset();
    return rc == SQLITE_DONE ? Status::Ok() : db_.Check(rc, "insert into the new index");
  }

  // The row `read_` is on, into kReindexEventsTable, its document encoded
  // anew from the JSON text read for the index, unless an earlier re-index
  // did so already: a day numbered again for a few late events compresses
  // only theirs.
  Status CopyOne() {
    copy_.Bind(1, next_after_);
    for (int i = 2; i <= 4; ++i) {
      sqlite3_bind_value(copy_.get(), i, sqlite3_column_value(read_.get(), i + 1));
    }
    const std::string_view stored = read_.Blob(6);
    copy_.BindBlobStatic(5, recoder_->Encoded(stored) ? stored : recoder_->Encode(read_.Text(2)));
    const int rc = copy_.Step();
    copy_.Reset();
    return rc == SQLITE_DONE ? Status::Ok() : db_.Check(rc, "copy the event");
  }

  Db& db_;
  const std::string table_, docnos_;
  DayDictionaryEncoder* recoder_;
  std::unique_ptr<DocnoKeysWriter> blocks_;
  Stmt read_, insert_, number_, copy_;
  std::int64_t docno_ = 0;
  DocumentReader reader_{kStoredDocuments};
  DocumentView view_;
  std::string text_;
  EventKey next_after_ = -1;
};

Status DropReindexTable(Db& db) {
  return db.Exec(
      fmt::format("DROP TABLE IF EXISTS {}; DROP TABLE IF EXISTS {}; DROP TABLE IF EXISTS {}",
                  kReindexTable, kReindexDocnosTable, kReindexEventsTable));
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
Status BuildReindexTable(Db& db, bool number, DayDictionaryEncoder* recoder,
                         const CompactionSteps& steps, const CompactionPace& pace,
                         std::uint64_t* indexed) {
  if (auto s = BuildIndexFromDocuments(db, kReindexTable, steps, pace, indexed,
                                       number ? kReindexDocnosTable : "", recoder,
                                       steps.test_docnos_table, KeepsPositions(number, steps));
      !s.ok()) {
    return s;
  }
  const auto t0 = SteadyClock::now();
  if (auto s = InTransaction(db, [&] { return BackfillVocabulary(db, kReindexTable); }); !s.ok()) {
    return s;
  }
  return pace(SteadyClock::now() - t0) ? Status::Ok() : CompactionStopped();
}

// Documents a day dictionary is trained on, spread evenly over the day.
constexpr std::size_t kDayDictionarySamples = 4000;
constexpr std::size_t kDayDictionaryBytes = 32 * 1024;
// Its zstd level: 82.8 bytes a bench document at ~40 MB/s, against 92.6 at
// level 3 (source_codec.h); compaction has the time.
constexpr int kDayDictionaryLevel = 9;

// Whether meta says every event was encoded anew when the index was last
// made (or could not be: too few events).
Result<bool> SourcesEncoded(Db& db) {
  auto n = QueryInt(db, fmt::format("SELECT count(*) FROM meta WHERE key = '{}'", kSourcesMeta));
  if (!n.ok()) return n.status();
  return *n > 0;
}

// Documents spread evenly over the day's key order, as JSON text.
Result<std::vector<std::string>> SpreadSamples(Db& db, std::uint64_t events) {
  const std::uint64_t every = std::max<std::uint64_t>(1, events / kDayDictionarySamples);
  auto keys = db.Prepare("SELECT key FROM events ORDER BY key");
  if (!keys.ok()) return keys.status();
  std::vector<EventKey> picked;
  std::uint64_t i = 0;
  int rc;
  while ((rc = keys->Step()) == SQLITE_ROW) {
    if (i++ % every == 0) picked.push_back(keys->Int(0));
  }
  if (rc != SQLITE_DONE) return db.Check(rc, "read keys");
  auto read = db.Prepare("SELECT dc_source(source) FROM events WHERE key = ?1");
  if (!read.ok()) return read.status();
  std::vector<std::string> samples;
  samples.reserve(picked.size());
  for (EventKey key : picked) {
    read->Bind(1, key);
    rc = read->Step();
    if (rc == SQLITE_ROW) samples.emplace_back(read->Text(0));
    read->Reset();
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) return db.Check(rc, "read a sample");
  }
  return samples;
}

// The encoder of the day's documents: with its day dictionary, trained and
// stored first if it has none (a dictionary stored is never changed, as
// readers keep it: source_codec.h). nullptr when the day has fewer than
// `steps.day_dictionary_events` events, or no dictionary can be trained.
Result<std::unique_ptr<DayDictionaryEncoder>> DayEncoder(Db& db, const CompactionSteps& steps,
                                                         const CompactionPace& pace) {
  const auto t0 = SteadyClock::now();
  auto events = QueryInt(db, "SELECT count(*) FROM events");
  if (!events.ok()) return events.status();
  if (static_cast<std::uint64_t>(*events) < steps.day_dictionary_events) {
    return std::unique_ptr<DayDictionaryEncoder>();
  }
  auto newest = QueryInt(db, fmt::format("SELECT coalesce(max(id), 0) FROM dicts WHERE id >= {}",
                                         kFirstDayDictionary));
  if (!newest.ok()) return newest.status();
  std::int64_t id = *newest;
  std::string dictionary;
  if (id != 0) {
    auto stored = ReadStoredDictionary(db.get(), id);
    if (!stored.ok()) return stored.status();
    if (!*stored) return std::unique_ptr<DayDictionaryEncoder>();  // not there after all
    dictionary = std::move(**stored);
  } else {
    auto samples = SpreadSamples(db, static_cast<std::uint64_t>(*events));
    if (!samples.ok()) return samples.status();
    auto trained = TrainDictionary(*samples, kDayDictionaryBytes);
    if (!trained.ok()) return std::unique_ptr<DayDictionaryEncoder>();  // alike documents
    id = kFirstDayDictionary;
    dictionary = std::move(*trained);
    auto insert = db.Prepare("INSERT INTO dicts(id, dict) VALUES(?1, ?2)");
    if (!insert.ok()) return insert.status();
    insert->Bind(1, id);
    insert->BindBlobStatic(2, dictionary);
    if (const int rc = insert->Step(); rc != SQLITE_DONE) return db.Check(rc, "store dictionary");
  }
  auto encoder = std::make_unique<DayDictionaryEncoder>();
  if (Status s = encoder->Load(id, dictionary, kDayDictionaryLevel); !s.ok()) return s;
  if (!pace(SteadyClock::now() - t0)) return CompactionStopped();
  return encoder;
}

}  // namespace

Result<bool> NeedsReindex(Db& db, bool positions) {
  auto stmt = db.Prepare(
      fmt::format("SELECT count(*) FROM meta WHERE (key = '{}' AND value = '{}') OR (key = '{}' "
                  "AND value = 'all')",
                  kKeywordFieldsMeta, kKeywordFields, kFieldTermsMeta));
  if (!stmt.ok()) return stmt.status();
  if (stmt->Step() != SQLITE_ROW) return db.Check(stmt->Reset(), "read meta");
  if (stmt->Int(0) < 2) return true;
  auto one_column = FtsHasOneColumn(db);
  if (!one_column.ok()) return one_column.status();
  if (!*one_column) return true;
  auto rowids = ReadRowidLayout(db);
  if (!rowids.ok()) return rowids.status();
  auto encoded = SourcesEncoded(db);
  if (!encoded.ok()) return encoded.status();
  if (rowids->clean() && rowids->blocks && rowids->positions == positions && *encoded) {
    return false;
  }
  return CanNumber(db);
}

Status BuildIndexFromDocuments(Db& db, std::string_view table, const CompactionSteps& steps,
                               const CompactionPace& pace, std::uint64_t* indexed,
                               std::string_view docnos, DayDictionaryEncoder* recoder,
                               bool docnos_table, bool positions) {
  if (auto s = InTransaction(db,
                             [&] {
                               Status s = CreateFtsTable(db, table, false, positions);
                               if (s.ok() && !docnos.empty()) {
                                 s = db.Exec(docnos_table ? DocnosTableSql(docnos)
                                                          : DocnoKeysTableSql(docnos));
                               }
                               if (s.ok() && recoder) {
                                 s = CreateEventsTable(db, kReindexEventsTable);
                               }
                               return s;
                             });
      !s.ok()) {
    return s;
  }
  DocumentIndexer indexer(db, table, docnos, docnos_table, recoder);
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
  auto recoder = DayEncoder(db, steps, pace);
  if (!recoder.ok()) return recoder.status();
  if (Status s = BuildReindexTable(db, *number, recoder->get(), steps, pace, &out.events);
      !s.ok()) {
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
    std::string rowids = fmt::format(
        "DROP TABLE IF EXISTS docnos; DROP TABLE IF EXISTS {}; "
        "DELETE FROM meta WHERE key = '{}'",
        kDocnoKeysTable, kRowidsMeta);
    if (*number && out.events > 0) {
      out.numbered = true;
      const bool blocks = !steps.test_docnos_table;
      const bool positions = KeepsPositions(true, steps);
      rowids = fmt::format(
          "DROP TABLE IF EXISTS docnos; DROP TABLE IF EXISTS {}; ALTER TABLE {} RENAME TO {}; "
          "INSERT OR REPLACE INTO meta VALUES('{}', '{}')",
          kDocnoKeysTable, kReindexDocnosTable, blocks ? kDocnoKeysTable : "docnos", kRowidsMeta,
          DocnosMeta(static_cast<std::int64_t>(out.events), before->generation + 1, blocks,
                     positions));
    }
    std::string sources =
        fmt::format("INSERT OR REPLACE INTO meta VALUES('{}', 'kept')", kSourcesMeta);
    if (*recoder) {
      out.recoded = true;
      out.encoded = (*recoder)->compressed();
      sources = fmt::format(
          "DROP TABLE events; ALTER TABLE {} RENAME TO events; {}; "
          "INSERT OR REPLACE INTO meta VALUES('{}', 'day')",
          kReindexEventsTable, kEventsDocIdIndexSql, kSourcesMeta);
    }
    return db.Exec(fmt::format(
        "DROP TABLE fts; ALTER TABLE {} RENAME TO fts; "
        "INSERT OR REPLACE INTO meta VALUES('{}', '{}'); "
        "INSERT OR REPLACE INTO meta VALUES('{}', 'all'); {}; {}",
        kReindexTable, kKeywordFieldsMeta, kKeywordFields, kFieldTermsMeta, rowids, sources));
  });
  if (!swap.ok()) return swap;
  return out;
}

}  // namespace dashcam::storage
