// A partition: one SQLite database file holding the events of one UTC day.
//
// Event keys. Every event gets a 64-bit key, which is also its rowid in both
// tables below: key = (ts_ms << 20) | seq, where seq numbers the events that
// share a millisecond (up to 2^20 of them). Keys therefore follow event time,
// so "newest first" is a reverse walk of the rowid B-tree or FTS5 doclist, a
// time range is a rowid range, and the key alone names the partition.
//
// Schema (user_version 13; older files are upgraded when opened for writing,
// which SqliteStore::Open does for every partition: `vocab` is built from the
// FTS index, the level counts from the events table, and `groups`, `dicts`,
// `number_ranges` and `names` start empty since older events have no group,
// are not compressed, were not recorded and hold their names as text):
//   events(key INTEGER PRIMARY KEY, level, idx, doc_id TEXT, source BLOB)
//       one row per live event; `source` is the stored document, as JSON or
//       compressed (source_codec.h): statements read it as dc_source(source).
//       `level` and `idx` (the index name) are ids of `names` rows in a file
//       whose meta says so, else text (TEXT columns in files created before
//       version 8): statements read them as dc_name(level), dc_name(idx).
//   events_doc_id: UNIQUE index on doc_id WHERE doc_id IS NOT NULL.
//   fts: FTS5, contentless (content=''), tokenizer "dashcam", columnsize=0.
//       One column, `message`, fed one-column events with the tokenizer's
//       argument `field_lead`, in files made or re-indexed since version 10;
//       columns (message, attrs) before (attrs_codec.h gives the formats).
//       A re-index of a past day makes the one column (partition_reindex.h).
//       Its rowids are keys, unless meta "rowids" says a re-index numbered
//       the events 1..N (rowid_layout.h).
//   docno_keys(block INTEGER PRIMARY KEY, first INTEGER, keys BLOB): with
//       meta "rowids", the keys of the numbered events, in blocks
//       (docno_keys.h); in a file numbered before version 11,
//       docnos(docno INTEGER PRIMARY KEY, key INTEGER), a row each.
//   replaced(key INTEGER PRIMARY KEY): keys whose events row was replaced by a
//       newer event with the same doc_id; their FTS entries are stale and are
//       excluded from counts. Keys are never reused.
//   meta(key TEXT PRIMARY KEY, value TEXT): "day" = YYYY-MM-DD;
//       "keyword_fields" = attrs_codec.h's kKeywordFields when the file was
//       created (since user_version 6; absent in older files): the fields
//       every event of the file has indexed as keywords. A keyword field
//       of this version missing from it (every one, without the row) may
//       be indexed as text for the file's older events.
//       "number_ranges" = "all" when the file was created with that table
//       (since user_version 7): it records every event's numbers.
//       "names" = "level,idx" when the file was created storing those two
//       columns by id (since user_version 8).
//       "field_terms" = "all" when the file was created indexing a term for
//       every value of an indexed field, a value of no tokens included
//       (attrs_codec.h): a field exists exactly where one of its terms is.
//       "level_terms" = "either" while every event of the file has its
//       level (the events column) as its only `log.level` value, its only
//       `level` value or both, a string of one token no other level of the
//       file folds to, or has no level and neither field: the events of
//       level L are then exactly those with the term log.level:L or
//       level:L. "exact" (files created at version 13): the same with
//       `log.level` alone. Set on a file as it is created; the first event
//       that breaks the rule sets "no", in its transaction, and it never
//       turns back.
//       "rowids" = "docnos:N:G:blocks" or "late:N:G:blocks" when a re-index
//       numbered the index's rowids (rowid_layout.h; without ":blocks"
//       before version 11); absent: they are keys.
//   vocab(term TEXT PRIMARY KEY) WITHOUT ROWID: every index term wildcard
//       and fuzzy queries expand to (vocabulary.h), filled as events are
//       written, in the same transaction.
//   level_seconds(second INTEGER, level TEXT, n INTEGER, PRIMARY KEY(second,
//       level)) WITHOUT ROWID, and level_minutes(minute, level, n) the same
//       per minute (since user_version 3): how many live events of each
//       level ('' for none) each second (event time / 1000) and each minute
//       (/ 60000) holds. Kept in the same transaction as the events table, so
//       they always agree: whatever inserts or deletes events rows must
//       update both. They answer histograms of all events without reading
//       the events (minutes for long ranges, seconds for short ones).
//   groups(key TEXT PRIMARY KEY, first_ms INTEGER, last_ms INTEGER, events
//       INTEGER, ended_ms INTEGER NULL) WITHOUT ROWID (since user_version 4):
//       per Record::group (a training run), the event times of its oldest
//       and newest events in this file, how many events were written to it,
//       and the time of its newest closing event (Record::group_end; NULL:
//       none). Kept in the same transaction as the events table. A
//       replacement (same doc_id) updates the times but does not count again.
//   dicts(id INTEGER PRIMARY KEY, dict BLOB) (since user_version 5): the
//       zstd dictionary of the compressed documents, id 1; none until the
//       file has stored enough documents to train it.
//   number_ranges(field, lo, hi, plain, strings, integers) (since
//       user_version 7; integers since 13):
//       per field, the span of its numbers (number_ranges.h), widened in the
//       same transaction as the events. Trusted only when meta says so.
//   names(id INTEGER PRIMARY KEY, name TEXT UNIQUE) (since user_version 8):
//       the levels and index names the events refer to (stored_names.h),
//       added in the transaction of the first event to use one.
//   FTS5 settings: automerge=16 and hashsize=16 MiB (measured: 1.7x the insert
//   rate of the defaults on training logs, 20k-event transactions).
//   auto_vacuum=INCREMENTAL on files created since compaction exists
//   (compactor.h returns a past day's free pages); NONE on older ones.
//
// PartitionWriter and PartitionReader each own one connection; each belongs to
// one thread at a time.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>

#include "storage/fts_tokenizer.h"
#include "storage/number_ranges.h"
#include "storage/record.h"
#include "storage/rowid_layout.h"
#include "storage/source_codec.h"
#include "storage/sqlite_db.h"
#include "storage/stored_names.h"
#include "storage/vocabulary_collector.h"

namespace dashcam::storage {

inline constexpr int kSeqBits = 20;
inline constexpr std::uint32_t kMaxSeq = (1u << kSeqBits) - 1;
inline constexpr EventKey FirstKeyAt(TimeMs t) {
  return static_cast<EventKey>(t) << kSeqBits;
}
inline constexpr TimeMs KeyTime(EventKey k) {
  return k >> kSeqBits;
}

// Set on every connection that writes a partition (the writer's, the
// compactor's). Debian builds SQLite with SECURE_DELETE on, so every page an
// FTS5 segment merge frees was overwritten with zeros and written to the WAL
// once more. FAST still zeroes deleted content on the b-tree pages a write
// changes anyway, not on pages going to the freelist. Those hold only what
// the index and documents held (redacted before storage), until reused or
// until compaction's incremental vacuum cuts them off the file. Measured
// (2M events in a day, two interleaved pairs): 60 700 and 57 800 events/s
// with ON, 66 300 and 66 100 with FAST; writer CPU 13.4-14.0 -> 12.6-12.7 us
// an event. Compacting that day took 5.8-6.3 s either way.
inline constexpr const char* kSecureDeleteFast = "PRAGMA secure_delete=FAST";

// The user_version of the schema above.
// Version 9: documents may be in the day-dictionary form (source_codec.h),
// which an older dashcam cannot read.
// Version 10: the index may have one column (attrs_codec.h), which an
// older dashcam would write and read wrongly.
// Version 11: a numbered day's keys may be in docno_keys (docno_keys.h),
// which an older dashcam cannot read.
// Version 12: a numbered day's index may have no positions (detail=none,
// rowid_layout.h), which an older dashcam would ask for phrases.
// Version 13: meta level_terms, which an older dashcam would not turn off
// when it writes an event that breaks its rule, and number_ranges'
// `integers`, which it would not keep.
// Version 14: meta level_terms may say "either", which a dashcam of version
// 13 would neither use nor turn off.
inline constexpr int kPartitionSchemaVersion = 14;
inline constexpr const char* kKeywordFieldsMeta = "keyword_fields";
inline constexpr const char* kNumberRangesMeta = "number_ranges";
inline constexpr const char* kNamesMeta = "names";
inline constexpr const char* kNamesMetaValue = "level,idx";
inline constexpr const char* kFieldTermsMeta = "field_terms";
inline constexpr const char* kLevelTermsMeta = "level_terms";
// What a file is created with.
inline constexpr const char* kLevelTermsNew = "either";
// The fields whose terms tell an event's level under meta level_terms
// `value`; none when they do not.
std::span<const std::string_view> LevelTermFields(std::string_view value);

enum class SyncMode { kNormal, kFull };

struct PartitionOptions {
  SyncMode sync = SyncMode::kFull;  // Default: fsync on every commit
  int cache_kib = 32 * 1024;        // page cache per connection
  // Tests only: a file holding a byte count, read before every write
  // transaction (creation, Write, ProbeSpace). Each partition file is then
  // capped at that size with PRAGMA max_page_count, so that a write past it
  // fails inside SQLite with SQLITE_FULL exactly as on a full disk; raising
  // the number "frees space". A missing, empty or unparsable file: no cap.
  // Default: empty, no such file.
  std::string test_quota_file;
  // How documents are compressed (source_codec.h).
  SourceCompression compression;
  // Where the writer publishes its dictionary for the submitting threads,
  // and whose Record::stored_source it accepts. Default: null, none. Must
  // outlive the PartitionWriter.
  SharedDictionaries* shared_dictionaries = nullptr;
  // Tests only: a file created now gets the two-column index of files
  // made before version 10 (attrs_codec.h), as an older dashcam made it.
  bool test_two_column_index = false;
};

class PartitionWriter {
 public:
  // Opens (creating if needed) the file for `day` and prepares statements.
  static Result<std::unique_ptr<PartitionWriter>> Open(const std::string& path, std::int64_t day,
                                                       const PartitionOptions& opts);

  // Stores `records` (all of this partition's day) in one transaction.
  // outcomes[i] is set for records[i]; keys[i] gets the event key (0 when
  // the record was a duplicate). A non-ok Status means nothing was stored.
  // Write is Begin, Add and Commit.
  Status Write(std::span<const Record* const> records, std::span<RecordOutcome> outcomes,
               std::span<EventKey> keys);

  // The same transaction in steps, for records that come in several groups:
  // Begin, Add as often as groups come, then Commit (or Rollback). What Add
  // sets is final only once Commit returns ok. A failed Add or Commit has
  // rolled the whole transaction back: nothing of it was stored.
  Status Begin();
  Status Add(std::span<const Record* const> records, std::span<RecordOutcome> outcomes,
             std::span<EventKey> keys);
  Status Commit();
  void Rollback();
  bool in_transaction() const { return in_transaction_; }

  // Whether a write transaction can be committed now: writes and deletes a
  // row of a few pages in `meta` and commits (the file's content does not
  // change). NoSpace while the disk, or the test quota, is still full.
  Status ProbeSpace();

  std::int64_t day() const { return day_; }

  // Bytes of the connection's page cache. ReleaseCacheAndWal, for a day not
  // written lately, gives back what it holds (sqlite3_db_release_memory;
  // the cache refills from the file as the next transactions need it) and
  // truncates the WAL file unless a reader is using it.
  std::int64_t CacheBytes() const;
  void ReleaseCacheAndWal();

 private:
  PartitionWriter() = default;
  Status ApplyTestQuota();
  Status Prepare();
  Status LoadNamesMeta();
  Status PrepareIndexInsert();
  Status BindName(int column, std::string_view name);
  Status StoreVocabulary();
  Result<EventKey> NextKey(TimeMs ts);
  Result<RecordOutcome> WriteOne(const Record& r, EventKey key);
  Status ReplaceExisting(const Record& r, bool& replaced);
  Status FlushLevelCounts();
  Status FlushGroups();
  Status FlushNumberRanges();
  Status StartCompressing();
  void NoteGroup(const Record& r, bool counts);
  Status LoadLevelTerms();
  Status NoteLevelTerms(const Record& r);
  Status TurnLevelTermsOff();

  SourceCompressor sources_;
  SharedDictionaries* shared_dictionaries_ = nullptr;
  std::uint64_t dictionary_id_ = 0;         // as published; 0: none
  bool in_transaction_ = false;             // between Begin and Commit/Rollback
  bool dictionary_in_transaction_ = false;  // the transaction trained and stored one
  std::string pending_dictionary_;          // its bytes, published once committed
  // What the tokenizer reports of the transaction being written.
  struct IndexObserver final : IndexedTermSink {
    VocabularyCollector vocab;
    NumberRangeCollector numbers;
    void OnIndexedTerm(std::string_view term) override { vocab.OnIndexedTerm(term); }
    void OnFieldValue(std::string_view name, char type, std::string_view value) override {
      numbers.Add(name, type, value);
    }
  };
  IndexObserver indexed_;  // before db_: the tokenizer uses it until db_ closes
  Db db_;
  std::int64_t day_ = 0;
  std::string test_quota_file_;
  Stmt mark_late_, insert_event_, insert_fts_, max_key_, find_doc_, delete_event_, insert_replaced_,
      insert_vocab_, add_level_second_, add_level_minute_, add_group_, insert_dict_, widen_numbers_;
  bool names_by_id_ = false;       // the file stores level and idx as names ids
  bool one_column_index_ = false;  // what insert_fts_ was prepared for
  NameIds name_ids_;
  Status LoadHighestKey();
  Status LoadDictionary();
  void PublishDictionary(std::string_view bytes);
  std::string_view StoredSource(const Record& r);

  // The fields that tell an event's level (meta level_terms; empty: they
  // do not); while there are some, the folded token of each level the file
  // holds, to the level.
  std::span<const std::string_view> level_fields_;
  bool level_terms_loaded_ = false;  // the two above are the file's
  std::unordered_map<std::string, std::string> level_tokens_;

  std::unordered_map<TimeMs, std::uint32_t> next_seq_;  // cache of NextKey
  EventKey highest_key_ = -1;  // the largest key ever given out in this file
  std::string message_buf_, attrs_buf_;
  // Changes to level_seconds (and so level_minutes) by the transaction being
  // written: (second, level) -> delta.
  std::map<std::pair<std::int64_t, std::string>, std::int64_t> level_second_deltas_;
  // Changes to `groups` by the transaction being written, by group key.
  struct GroupDelta {
    TimeMs first = 0, last = 0;
    std::int64_t events = 0;
    std::optional<TimeMs> ended;
  };
  std::map<std::string, GroupDelta, std::less<>> group_deltas_;
};

class PartitionReader {
 public:
  static Result<std::unique_ptr<PartitionReader>> Open(const std::string& path, int cache_kib);

  // A prepared statement for `sql`, cached on this connection (reset, with
  // bindings cleared). Valid until the reader is destroyed.
  Result<Stmt*> Statement(const std::string& sql);
  sqlite3* db() const { return db_.get(); }
  // The keyword fields every event of the file indexes as keywords (meta
  // keyword_fields; empty when unknown): others may be indexed as text.
  const std::string& indexed_keywords() const { return indexed_keywords_; }
  // True when number_ranges holds every event's numbers (see meta).
  bool numbers_recorded() const { return numbers_recorded_; }
  // True when every value of an indexed field has an index term (see meta).
  bool field_terms_recorded() const { return field_terms_recorded_; }
  // The fields whose terms tell an event's level (meta level_terms) now:
  // read at each call, since the rule may turn off while the file is
  // written. Empty when they do not.
  Result<std::span<const std::string_view>> LevelTermFields();
  // What the index's rowids are (meta rowids, rowid_layout.h).
  const RowidLayout& rowids() const { return rowids_; }
  // Reads the four above from meta again (Open reads them first): after a
  // re-index has changed them (partition_reindex.h).
  Status ReadMeta();
  // Reads rowids() again: a write marks a numbered day late without a
  // re-index (rowid_layout.h). One lookup: done for every request.
  Status ReadRowids();

 private:
  PartitionReader() = default;
  // Meta `key`'s value; empty when absent.
  Result<std::string> MetaValue(std::string_view key);
  Db db_;
  std::string indexed_keywords_;
  bool numbers_recorded_ = false;
  bool field_terms_recorded_ = false;
  RowidLayout rowids_;
  std::unordered_map<std::string, Stmt> cache_;
};

inline constexpr TimeMs kMsPerSecond = 1000;
inline constexpr TimeMs kMsPerMinute = 60'000;

// The oldest or the newest key of a partition's events; nullopt when it
// holds none.
enum class KeyEnd { kOldest, kNewest };
Result<std::optional<EventKey>> EndKey(PartitionReader& reader, KeyEnd end);

// Creates the FTS5 index table `name` as the schema's `fts` is made, with
// its settings: one column (attrs_codec.h), or with `two_columns` as before
// version 10 (tests make such files); without `positions`, detail=none (a
// numbered day's, rowid_layout.h). Runs in the caller's transaction.
Status CreateFtsTable(Db& db, std::string_view name, bool two_columns = false,
                      bool positions = true);

// Whether the file's `fts` has one column (attrs_codec.h), not the two
// (message, attrs) of files made before version 10.
Result<bool> FtsHasOneColumn(Db& db);

// Creates table `name` as the schema's `events` is made, without its index
// (kEventsDocIdIndexSql). Runs in the caller's transaction.
Status CreateEventsTable(Db& db, std::string_view name);
inline constexpr const char* kEventsDocIdIndexSql =
    "CREATE UNIQUE INDEX events_doc_id ON events(doc_id) WHERE doc_id IS NOT NULL";

// Creates the schema if missing, upgrades an older one; checks user_version.
Status InitPartitionSchema(Db& db, std::int64_t day, bool two_column_index = false);

// Opens the partition file at `path` for writing just long enough to bring
// its schema up to date (a no-op for a current one).
Status UpgradePartition(const std::string& path, std::int64_t day);

}  // namespace dashcam::storage
