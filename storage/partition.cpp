#include "storage/partition.h"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <limits>
#include <optional>

#include <fmt/format.h>

#include "storage/attrs_codec.h"
#include "storage/docno_keys.h"
#include "storage/fts_membership.h"
#include "storage/fts_tokenizer.h"
#include "storage/row_predicate.h"
#include "storage/stored_names.h"
#include "storage/text_tokenizer.h"

namespace dashcam::storage {
namespace {

constexpr int kSchemaVersion = kPartitionSchemaVersion;
constexpr int kBusyTimeoutMs = 5000;
// What a writer's WAL file is cut back to when the log restarts.
constexpr std::int64_t kWalSizeLimitBytes = 16 << 20;

// FTS5 merging: automerge=16 with a 16 MiB hash (d83ceb3: the writer alone
// went from 40k to 71k events/s). crisismerge=64, not its default of 16:
// with 16, a level reaching 16 segments was merged at once in the commit
// that reached it, which at 2M events a day stalled that commit 3-6 s,
// grew the WAL to ~260 MB and left the merged segments' pages free. With
// 64, automerge merges them incrementally, a little per commit. Measured on
// 2M events in one day (dashcam_bench --events 2000000 --days 1): ingest
// 30.5k and 32.8k -> 34.7k, 33.1k, 35.3k events/s; slowest bulk request
// 3.5 s and 3.2 s -> 0.23-0.31 s; 443-472 -> 409-413 bytes per event. The
// cost: more segments while the day is written, so its selective searches
// took 20-30% longer (rare phrase 10.5-12 -> 14-18 ms); past days are
// compacted into one segment (compactor.h).
constexpr const char* kSchemaSql = R"sql(
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS replaced(key INTEGER PRIMARY KEY);
CREATE TABLE IF NOT EXISTS vocab(term TEXT PRIMARY KEY) WITHOUT ROWID;
)sql";

// The documents, as the schema's `events` and as a re-index writes them anew
// (partition_reindex.h). A format string: {0} is the table's name. Its
// unique index is made by kEventsDocIdIndexSql, once the table is `events`.
constexpr const char* kEventsTableSql = R"sql(
CREATE TABLE {0}(
  key INTEGER PRIMARY KEY,
  level,
  idx,
  doc_id TEXT,
  source BLOB NOT NULL);
)sql";

// The FTS5 index, as kSchemaSql's `fts` and as a re-index builds it anew
// (partition_reindex.h): one column since version 10 (attrs_codec.h). A
// format string: {0} is the table's name, {1} its columns and tokenizer.
constexpr const char* kFtsTableSql = R"sql(
CREATE VIRTUAL TABLE {0} USING fts5(
  {1}, content='', columnsize=0);
INSERT INTO {0}({0}, rank) VALUES('automerge', 16);
INSERT INTO {0}({0}, rank) VALUES('crisismerge', 64);
INSERT INTO {0}({0}, rank) VALUES('hashsize', 16777216);
)sql";

// Since version 3: per-second and per-minute level counts, filled from the events
// already stored. A format string: {} is kLevelNameSql.
constexpr const char* kLevelCountsSql = R"sql(
CREATE TABLE IF NOT EXISTS level_seconds(
  second INTEGER NOT NULL,
  level TEXT NOT NULL,
  n INTEGER NOT NULL,
  PRIMARY KEY(second, level)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS level_minutes(
  minute INTEGER NOT NULL,
  level TEXT NOT NULL,
  n INTEGER NOT NULL,
  PRIMARY KEY(minute, level)) WITHOUT ROWID;
DELETE FROM level_seconds;
INSERT INTO level_seconds(second, level, n)
  SELECT (key >> 20) / 1000, coalesce({}, ''), count(*) FROM events GROUP BY 1, 2;
DELETE FROM level_minutes;
INSERT INTO level_minutes(minute, level, n)
  SELECT second / 60, level, sum(n) FROM level_seconds GROUP BY 1, 2;
)sql";

// Since version 5: the compression dictionary (source_codec.h).
constexpr const char* kDictsSql =
    "CREATE TABLE IF NOT EXISTS dicts(id INTEGER PRIMARY KEY, dict BLOB NOT NULL)";

// Since version 4: the per-group rollup (partition.h). Events written before
// had no group, so there is nothing to backfill.
constexpr const char* kGroupsSql = R"sql(
CREATE TABLE IF NOT EXISTS groups(
  key TEXT PRIMARY KEY,
  first_ms INTEGER NOT NULL,
  last_ms INTEGER NOT NULL,
  events INTEGER NOT NULL,
  ended_ms INTEGER) WITHOUT ROWID;
)sql";

Status Pragmas(Db& db, const PartitionOptions& opts) {
  // Lets compaction return free pages (partition_compaction.h). It takes
  // effect only on a file without tables yet, and only before journal_mode
  // is set; on an existing file it changes nothing.
  if (auto s = db.Exec("PRAGMA auto_vacuum=INCREMENTAL"); !s.ok()) return s;
  if (auto s = db.Exec("PRAGMA journal_mode=WAL"); !s.ok()) return s;
  const char* sync = opts.sync == SyncMode::kFull ? "FULL" : "NORMAL";
  if (auto s = db.Exec(fmt::format("PRAGMA synchronous={}", sync)); !s.ok()) return s;
  if (auto s = db.Exec(fmt::format("PRAGMA cache_size=-{}", opts.cache_kib)); !s.ok()) return s;
  // A WAL file keeps the size of the largest transaction it held (an FTS5
  // merge rewrites segments of the whole day: ~260 MB per day at 2M events)
  // unless this limit makes SQLite cut it back when the log restarts.
  if (auto s = db.Exec(fmt::format("PRAGMA journal_size_limit={}", kWalSizeLimitBytes)); !s.ok()) {
    return s;
  }
  if (auto s = db.Exec(kSecureDeleteFast); !s.ok()) return s;
  return db.Exec("PRAGMA temp_store=MEMORY");
}

// The byte count in a test quota file; nullopt when there is none.
std::optional<std::uint64_t> ReadQuotaBytes(const std::string& path) {
  std::ifstream in(path);
  std::string text;
  if (!in || !std::getline(in, text)) return std::nullopt;
  std::uint64_t bytes = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), bytes);
  if (ec != std::errc() || end == text.data()) return std::nullopt;
  return bytes;
}

// SQLite's own default cap (SQLITE_MAX_PAGE_COUNT before 3.45), and an int
// as old versions of the pragma parse it: no cap in practice.
constexpr std::uint64_t kUncappedPages = 1073741823;

Result<int> UserVersion(Db& db) {
  auto stmt = db.Prepare("PRAGMA user_version");
  if (!stmt.ok()) return stmt.status();
  if (stmt->Step() != SQLITE_ROW) return db.Check(stmt->Reset(), "user_version");
  return static_cast<int>(stmt->Int(0));
}

// Whether `table` has a column named `column`.
Result<bool> HasColumn(Db& db, std::string_view table, std::string_view column) {
  auto stmt = db.Prepare(
      fmt::format("SELECT count(*) FROM pragma_table_info('{}') WHERE name = '{}'", table, column));
  if (!stmt.ok()) return stmt.status();
  if (stmt->Step() != SQLITE_ROW) return db.Check(stmt->Reset(), "table columns");
  return stmt->Int(0) != 0;
}

// number_ranges' `integers` column (number_ranges.h), added to a table made
// before schema 13, where it says nothing is known.
Status AddIntegersColumn(Db& db) {
  auto has = HasColumn(db, "number_ranges", "integers");
  if (!has.ok()) return has.status();
  if (*has) return Status::Ok();
  return db.Exec("ALTER TABLE number_ranges ADD COLUMN integers INTEGER NOT NULL DEFAULT 0");
}

}  // namespace

Status CreateFtsTable(Db& db, std::string_view name, bool two_columns, bool positions) {
  std::string columns =
      two_columns ? "message, attrs, tokenize='dashcam'" : "message, tokenize='dashcam field_lead'";
  if (!positions) columns += ", detail=none";
  return db.Exec(fmt::format(kFtsTableSql, name, columns));
}

Result<bool> FtsHasOneColumn(Db& db) {
  auto attrs = HasColumn(db, "fts", "attrs");
  if (!attrs.ok()) return attrs.status();
  return !*attrs;
}

Status CreateEventsTable(Db& db, std::string_view name) {
  return db.Exec(fmt::format(kEventsTableSql, name));
}

Status InitPartitionSchema(Db& db, std::int64_t day, bool two_column_index) {
  auto version = UserVersion(db);
  if (!version.ok()) return version.status();
  if (*version > kSchemaVersion) {
    return Status::Corruption(
        fmt::format("schema version {} is newer than this dashcam ({})", *version, kSchemaVersion));
  }
  if (*version == kSchemaVersion) return Status::Ok();
  if (auto s = db.Exec("BEGIN IMMEDIATE"); !s.ok()) return s;
  Status s;
  // Each step only for the versions that lack it: the first two read every
  // event, and every day file is upgraded at the first start after an update.
  if (*version == 0) {
    s = CreateEventsTable(db, "events");
    if (s.ok()) s = db.Exec(kEventsDocIdIndexSql);
    if (s.ok()) s = db.Exec(kSchemaSql);
    if (s.ok()) s = CreateFtsTable(db, "fts", two_column_index);
    // Only a new file indexes every keyword field's value as a keyword,
    // records every number, stores names by id (its events columns have
    // no type, so an id stays an integer) and has a term for every value.
    if (s.ok()) {
      s = db.Exec(
          fmt::format("INSERT OR REPLACE INTO meta VALUES('{}','{}'); INSERT OR REPLACE INTO meta "
                      "VALUES('{}','all'); INSERT OR REPLACE INTO meta VALUES('{}','{}');"
                      "INSERT OR REPLACE INTO meta VALUES('{}','all');"
                      "INSERT OR REPLACE INTO meta VALUES('{}','{}')",
                      kKeywordFieldsMeta, kKeywordFields, kNumberRangesMeta, kNamesMeta,
                      kNamesMetaValue, kFieldTermsMeta, kLevelTermsMeta, kLevelTermsNew));
    }
  } else if (*version < 2) {
    // Older partitions lack the vocabulary; build it from the index.
    s = db.Exec(kVocabularySchemaSql);
    if (s.ok()) s = BackfillVocabulary(db);
  }
  if (s.ok()) s = db.Exec(kNamesSchemaSql);  // before the level counts read it
  if (s.ok() && *version < 3) {              // built from the events table
    s = db.Exec(fmt::format(kLevelCountsSql, kLevelNameSql));
  }
  if (s.ok()) s = db.Exec(kGroupsSql);
  if (s.ok()) s = db.Exec(kDictsSql);
  if (s.ok()) s = db.Exec(kNumberRangesSchemaSql);
  if (s.ok()) s = AddIntegersColumn(db);
  if (s.ok()) {
    s =
        db.Exec(fmt::format("INSERT OR REPLACE INTO meta VALUES('day','{}');"
                            "PRAGMA user_version={}",
                            FormatDay(day), kSchemaVersion));
  }
  if (!s.ok()) {
    db.Exec("ROLLBACK");
    return s;
  }
  return db.Exec("COMMIT");
}

Status UpgradePartition(const std::string& path, std::int64_t day) {
  Db db;
  if (auto s = db.Open(path, SQLITE_OPEN_READWRITE); !s.ok()) return s;
  // The schema names the FTS5 tokenizer, which must exist to write.
  if (auto s = RegisterFtsTokenizer(db.get()); !s.ok()) return s;
  sqlite3_busy_timeout(db.get(), kBusyTimeoutMs);
  return InitPartitionSchema(db, day);
}

Result<std::unique_ptr<PartitionWriter>> PartitionWriter::Open(const std::string& path,
                                                               std::int64_t day,
                                                               const PartitionOptions& opts) {
  std::unique_ptr<PartitionWriter> w(new PartitionWriter());
  w->day_ = day;
  w->sources_ = SourceCompressor(opts.compression);
  w->shared_dictionaries_ = opts.shared_dictionaries;
  if (auto s = w->db_.Open(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE); !s.ok()) return s;
  if (auto s = RegisterFtsTokenizer(w->db_.get(), &w->indexed_); !s.ok()) return s;
  sqlite3_busy_timeout(w->db_.get(), kBusyTimeoutMs);
  if (auto s = Pragmas(w->db_, opts); !s.ok()) return s;
  w->test_quota_file_ = opts.test_quota_file;
  if (auto s = w->ApplyTestQuota(); !s.ok()) return s;
  if (auto s = InitPartitionSchema(w->db_, day, opts.test_two_column_index); !s.ok()) return s;
  if (auto s = w->Prepare(); !s.ok()) return s;
  if (auto s = w->PrepareIndexInsert(); !s.ok()) return s;
  if (auto s = w->LoadNamesMeta(); !s.ok()) return s;
  if (auto s = w->LoadHighestKey(); !s.ok()) return s;
  if (auto s = w->LoadDictionary(); !s.ok()) return s;
  if (auto s = w->LoadLevelTerms(); !s.ok()) return s;
  return w;
}

Status PartitionWriter::ApplyTestQuota() {
  if (test_quota_file_.empty()) return Status::Ok();
  auto stmt = db_.Prepare("PRAGMA page_size");
  if (!stmt.ok()) return stmt.status();
  if (stmt->Step() != SQLITE_ROW) return db_.Check(stmt->Reset(), "page_size");
  const auto page = static_cast<std::uint64_t>(std::max<std::int64_t>(stmt->Int(0), 512));
  const auto bytes = ReadQuotaBytes(test_quota_file_);
  // SQLite never lowers the cap below the file's current size, and 0 would
  // only query it.
  const std::uint64_t pages =
      bytes ? std::clamp<std::uint64_t>(*bytes / page, 1, kUncappedPages) : kUncappedPages;
  return db_.Exec(fmt::format("PRAGMA max_page_count={}", pages));
}

Status PartitionWriter::ProbeSpace() {
  if (auto s = ApplyTestQuota(); !s.ok()) return s;
  if (auto s = db_.Exec("BEGIN IMMEDIATE"); !s.ok()) return s;
  // 64 KiB: more than one page, so that a disk with a page or two left does
  // not count as having space again.
  Status s = db_.Exec(
      "INSERT OR REPLACE INTO meta VALUES('space_probe', zeroblob(65536));"
      "DELETE FROM meta WHERE key = 'space_probe'");
  if (s.ok()) s = db_.Exec("COMMIT");
  if (!s.ok()) db_.Exec("ROLLBACK");
  return s;
}

Status PartitionWriter::Prepare() {
  struct Item {
    Stmt* stmt;
    std::string sql;
  };
  const Item items[] = {
      // A numbered day's rowids no longer cover every event once this
      // transaction writes one (rowid_layout.h). No match: nothing written.
      {&mark_late_, MarkLateSql()},
      {&insert_event_,
       "INSERT INTO events(key, level, idx, doc_id, source) VALUES(?1,?2,?3,?4,?5)"},
      {&max_key_,
       "SELECT max(m) FROM (SELECT max(key) AS m FROM events WHERE key BETWEEN ?1 AND ?2 "
       "UNION ALL SELECT max(key) FROM replaced WHERE key BETWEEN ?1 AND ?2)"},
      {&find_doc_, fmt::format("SELECT key, {} FROM events WHERE doc_id = ?1", kLevelNameSql)},
      {&delete_event_, "DELETE FROM events WHERE key = ?1"},
      {&insert_replaced_, "INSERT OR IGNORE INTO replaced(key) VALUES(?1)"},
      {&insert_vocab_, "INSERT OR IGNORE INTO vocab(term) VALUES(?1)"},
      {&insert_dict_, "INSERT INTO dicts(id, dict) VALUES(1, ?1)"},
      {&widen_numbers_,
       "INSERT INTO number_ranges(field, lo, hi, plain, strings, integers) "
       "VALUES(?1,?2,?3,?4,?5,?6) "
       "ON CONFLICT(field) DO UPDATE SET lo = min(lo, excluded.lo), hi = max(hi, excluded.hi), "
       "plain = plain AND excluded.plain, strings = strings OR excluded.strings, "
       "integers = integers AND excluded.integers"},
      {&add_level_second_,
       "INSERT INTO level_seconds(second, level, n) VALUES(?1,?2,?3) "
       "ON CONFLICT(second, level) DO UPDATE SET n = n + excluded.n"},
      {&add_level_minute_,
       "INSERT INTO level_minutes(minute, level, n) VALUES(?1,?2,?3) "
       "ON CONFLICT(minute, level) DO UPDATE SET n = n + excluded.n"},
      // max() of SQLite returns NULL when an argument is NULL, hence coalesce.
      {&add_group_,
       "INSERT INTO groups(key, first_ms, last_ms, events, ended_ms) VALUES(?1,?2,?3,?4,?5) "
       "ON CONFLICT(key) DO UPDATE SET first_ms = min(first_ms, excluded.first_ms), "
       "last_ms = max(last_ms, excluded.last_ms), events = events + excluded.events, "
       "ended_ms = max(coalesce(ended_ms, excluded.ended_ms), "
       "coalesce(excluded.ended_ms, ended_ms))"},
  };
  for (const Item& it : items) {
    auto stmt = db_.Prepare(it.sql, /*persistent=*/true);
    if (!stmt.ok()) return stmt.status();
    *it.stmt = std::move(*stmt);
  }
  return name_ids_.Prepare(db_);
}

// The index's insert for its layout, which a re-index may change between
// two transactions (partition_reindex.h): called again in each.
Status PartitionWriter::PrepareIndexInsert() {
  auto one_column = FtsHasOneColumn(db_);
  if (!one_column.ok()) return one_column.status();
  if (insert_fts_.get() != nullptr && *one_column == one_column_index_) return Status::Ok();
  auto stmt = db_.Prepare(*one_column ? "INSERT INTO fts(rowid, message) VALUES(?1,?2)"
                                      : "INSERT INTO fts(rowid, message, attrs) VALUES(?1,?2,?3)",
                          /*persistent=*/true);
  if (!stmt.ok()) return stmt.status();
  insert_fts_ = std::move(*stmt);
  one_column_index_ = *one_column;
  return Status::Ok();
}

Status PartitionWriter::LoadNamesMeta() {
  auto stmt = db_.Prepare(fmt::format("SELECT value FROM meta WHERE key = '{}'", kNamesMeta));
  if (!stmt.ok()) return stmt.status();
  const int rc = stmt->Step();
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) return db_.Check(rc, "names meta");
  names_by_id_ = rc == SQLITE_ROW && stmt->Text(0) == kNamesMetaValue;
  return Status::Ok();
}

// Binds `name` as events.level or events.idx: by id in a file that stores
// names so, else as text.
Status PartitionWriter::BindName(int column, std::string_view name) {
  if (!names_by_id_) {
    insert_event_.BindStatic(column, name);
    return Status::Ok();
  }
  auto id = name_ids_.Id(name);
  if (!id.ok()) return id.status();
  insert_event_.Bind(column, *id);
  return Status::Ok();
}

// The terms this transaction indexed that the vocab table may lack.
Status PartitionWriter::StoreVocabulary() {
  for (const std::string& term : indexed_.vocab.pending()) {
    insert_vocab_.BindStatic(1, term);
    const int rc = insert_vocab_.Step();
    insert_vocab_.Reset();
    if (rc != SQLITE_DONE) return db_.Check(rc, "insert vocab");
  }
  return Status::Ok();
}

Status PartitionWriter::LoadDictionary() {
  if (!sources_.enabled()) return Status::Ok();  // even a file's own dictionary goes unused
  auto stored = ReadStoredDictionary(db_.get());
  if (!stored.ok()) return stored.status();
  if (!*stored) return Status::Ok();
  if (auto s = sources_.Load(**stored); !s.ok()) return s;
  PublishDictionary(**stored);
  return Status::Ok();
}

void PartitionWriter::PublishDictionary(std::string_view bytes) {
  if (shared_dictionaries_) {
    dictionary_id_ = shared_dictionaries_->Publish(day_, bytes, sources_.dictionary());
  }
}

// What goes into events.source for `r`: compressed by the submitting thread
// when that used this file's dictionary, else here (or as it is).
std::string_view PartitionWriter::StoredSource(const Record& r) {
  if (dictionary_id_ != 0 && r.stored_dictionary == dictionary_id_ && !r.stored_source.empty()) {
    return r.stored_source;
  }
  if (!sources_.ready()) sources_.AddSample(r.source);
  return sources_.Encode(r.source);
}

// Trains the compression dictionary once enough documents are stored, and
// stores it in this transaction: the transaction's later documents use it.
Status PartitionWriter::StartCompressing() {
  if (sources_.ready() || !sources_.HasEnoughSamples()) return Status::Ok();
  auto dictionary = sources_.Train();
  if (!dictionary.ok()) return Status::Ok();  // stored uncompressed; trained again later
  dictionary_in_transaction_ = true;
  pending_dictionary_ = std::move(*dictionary);
  insert_dict_.BindBlobStatic(1, pending_dictionary_);
  const int rc = insert_dict_.Step();
  insert_dict_.Reset();
  return rc == SQLITE_DONE ? Status::Ok() : db_.Check(rc, "insert dictionary");
}

namespace {

// A level this long may be cut in the index (TextTokenizer::kMaxTokenBytes);
// no real one is.
constexpr std::size_t kMaxLevelTermBytes = 64;
// Levels a file may have and keep its level terms exact: each event looks
// its level up among them, and a histogram queries each.
constexpr std::size_t kMaxExactLevels = 16;

// Adds a level not yet in `tokens` (folded token -> level); false when it
// cannot keep the level terms exact: not one token, too long, one too many,
// or folded like another (INFO and info share a term).
bool AddLevelToken(std::string_view level, std::unordered_map<std::string, std::string>& tokens) {
  if (tokens.size() >= kMaxExactLevels || level.size() > kMaxLevelTermBytes) return false;
  const std::vector<std::string> folded = TextTokenizer::TokenizeToVector(level);
  return folded.size() == 1 && tokens.try_emplace(folded.front(), std::string(level)).second;
}

// Whether `r` keeps the file's level terms exact (meta level_terms) in
// `fields`, given the folded token of each level the file holds so far
// (`tokens`, which takes r's level).
bool KeepsLevelTermsExact(const Record& r, std::span<const std::string_view> fields,
                          std::unordered_map<std::string, std::string>& tokens) {
  std::uint32_t seen = 0;  // bit i: fields[i]
  for (const Field& f : r.fields) {
    const auto it = std::find(fields.begin(), fields.end(), f.name);
    if (it == fields.end()) continue;
    const std::uint32_t bit = 1u << (it - fields.begin());
    if (seen & bit) return false;  // an array: several values
    seen |= bit;
    // A number, or a value that is not the level (a log.level beside a
    // `level` of its own), would be found under another level's term.
    if (f.type != Field::Type::kString || f.text != r.level) return false;
  }
  if (r.level.empty() || seen == 0) return r.level.empty() && seen == 0;
  // The few levels of a file are each tokenized once.
  for (const auto& [token, known] : tokens) {
    if (known == r.level) return true;
  }
  return AddLevelToken(r.level, tokens);
}

}  // namespace

std::span<const std::string_view> LevelTermFields(std::string_view value) {
  static constexpr std::string_view kEither[] = {"log.level", "level"};
  if (value == kLevelTermsNew) return kEither;
  if (value == "exact") return std::span(kEither).first(1);  // version 13
  return {};
}

// Meta level_terms, and the levels the file holds, as the last commit left
// them. A file whose levels already break the rule is marked so now.
Status PartitionWriter::LoadLevelTerms() {
  level_fields_ = {};
  level_terms_loaded_ = false;
  level_tokens_.clear();
  auto meta = db_.Prepare(fmt::format("SELECT value FROM meta WHERE key = '{}'", kLevelTermsMeta));
  if (!meta.ok()) return meta.status();
  const int rc = meta->Step();
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) return db_.Check(rc, "read meta");
  const auto fields = LevelTermFields(rc == SQLITE_ROW ? meta->Text(0) : "");
  if (fields.empty()) {
    level_terms_loaded_ = true;
    return Status::Ok();
  }
  auto levels = db_.Prepare("SELECT DISTINCT level FROM level_minutes WHERE level != ''");
  if (!levels.ok()) return levels.status();
  bool exact = true;
  int lrc;
  while ((lrc = levels->Step()) == SQLITE_ROW && exact) {
    exact = AddLevelToken(levels->Text(0), level_tokens_);
  }
  if (lrc != SQLITE_ROW && lrc != SQLITE_DONE) return db_.Check(lrc, "read levels");
  if (exact) level_fields_ = fields;
  Status s = exact ? Status::Ok() : TurnLevelTermsOff();
  level_terms_loaded_ = s.ok();
  return s;
}

// Turns meta level_terms off, in this transaction, at the first event that
// breaks its rule.
Status PartitionWriter::NoteLevelTerms(const Record& r) {
  if (KeepsLevelTermsExact(r, level_fields_, level_tokens_)) return Status::Ok();
  return TurnLevelTermsOff();
}

Status PartitionWriter::TurnLevelTermsOff() {
  level_fields_ = {};
  level_tokens_.clear();
  return db_.Exec(fmt::format("UPDATE meta SET value = 'no' WHERE key = '{}'", kLevelTermsMeta));
}

Status PartitionWriter::LoadHighestKey() {
  max_key_.Bind(1, 0);
  max_key_.Bind(2, std::numeric_limits<EventKey>::max());
  const int rc = max_key_.Step();
  highest_key_ = rc == SQLITE_ROW && !max_key_.IsNull(0) ? max_key_.Int(0) : -1;
  max_key_.Reset();
  return rc == SQLITE_ROW ? Status::Ok() : db_.Check(rc, "max key");
}

Result<EventKey> PartitionWriter::NextKey(TimeMs ts) {
  // Events usually arrive in time order: a millisecond past every key given
  // out so far, or the millisecond of the highest one, needs no look-up.
  const EventKey first = FirstKeyAt(ts);
  if (first > highest_key_) return highest_key_ = first;
  if (highest_key_ - first < kMaxSeq) return ++highest_key_;
  auto it = next_seq_.find(ts);
  if (it == next_seq_.end()) {
    if (next_seq_.size() > 100'000) next_seq_.clear();  // bound the cache
    std::uint32_t next = 0;
    max_key_.Bind(1, first);
    max_key_.Bind(2, first + kMaxSeq);
    const int rc = max_key_.Step();
    if (rc == SQLITE_ROW && !max_key_.IsNull(0)) {
      next = static_cast<std::uint32_t>(max_key_.Int(0) - first) + 1;
    }
    max_key_.Reset();
    if (rc != SQLITE_ROW) return db_.Check(rc, "max key");
    it = next_seq_.emplace(ts, next).first;
  }
  if (it->second > kMaxSeq) {
    return Status::Overloaded(fmt::format("more than {} events at one millisecond", kMaxSeq + 1));
  }
  return first + it->second++;
}

Status PartitionWriter::ReplaceExisting(const Record& r, bool& replaced) {
  replaced = false;
  find_doc_.Bind(1, r.doc_id);
  int rc = find_doc_.Step();
  EventKey old = 0;
  if (rc == SQLITE_ROW) {
    old = find_doc_.Int(0);
    --level_second_deltas_[{KeyTime(old) / kMsPerSecond, std::string(find_doc_.Text(1))}];
  }
  find_doc_.Reset();
  if (rc != SQLITE_ROW) return rc == SQLITE_DONE ? Status::Ok() : db_.Check(rc, "find doc_id");
  delete_event_.Bind(1, old);
  rc = delete_event_.Step();
  delete_event_.Reset();
  if (rc != SQLITE_DONE) return db_.Check(rc, "delete replaced");
  insert_replaced_.Bind(1, old);
  rc = insert_replaced_.Step();
  insert_replaced_.Reset();
  if (rc != SQLITE_DONE) return db_.Check(rc, "insert replaced");
  replaced = true;
  return Status::Ok();
}

Result<RecordOutcome> PartitionWriter::WriteOne(const Record& r, EventKey key) {
  bool replaced = false;
  if (!r.doc_id.empty() && r.op == WriteOp::kIndex) {
    if (auto s = ReplaceExisting(r, replaced); !s.ok()) return s;
  }
  insert_event_.Bind(1, key);
  if (auto s = BindName(2, r.level); !s.ok()) return s;
  if (r.index.empty()) {
    insert_event_.BindNull(3);
  } else if (auto s = BindName(3, r.index); !s.ok()) {
    return s;
  }
  if (r.doc_id.empty())
    insert_event_.BindNull(4);
  else
    insert_event_.BindStatic(4, r.doc_id);
  insert_event_.BindBlobStatic(5, StoredSource(r));
  int rc = insert_event_.Step();
  insert_event_.Reset();
  if ((rc & 0xFF) == SQLITE_CONSTRAINT) return RecordOutcome::kDuplicate;
  if (rc != SQLITE_DONE) return db_.Check(rc, "insert event");
  ++level_second_deltas_[{KeyTime(key) / kMsPerSecond, r.level}];
  if (!level_fields_.empty()) {
    if (auto s = NoteLevelTerms(r); !s.ok()) return s;
  }

  message_buf_.clear();
  insert_fts_.Bind(1, key);
  if (one_column_index_) {
    EncodeIndexedEvent(r.message, r.fields, r.index, message_buf_);
    insert_fts_.BindStatic(2, message_buf_);
  } else {
    EncodeMessage(r.message, message_buf_);
    attrs_buf_.clear();
    EncodeAttrs(r.fields, r.index, attrs_buf_);
    insert_fts_.BindStatic(2, message_buf_);
    insert_fts_.BindStatic(3, attrs_buf_);
  }
  rc = insert_fts_.Step();
  insert_fts_.Reset();
  if (rc != SQLITE_DONE) return db_.Check(rc, "insert fts");
  if (!r.group.empty()) NoteGroup(r, /*counts=*/!replaced);
  return replaced ? RecordOutcome::kUpdated : RecordOutcome::kCreated;
}

Status PartitionWriter::Write(std::span<const Record* const> records,
                              std::span<RecordOutcome> outcomes, std::span<EventKey> keys) {
  if (auto s = Begin(); !s.ok()) return s;
  if (auto s = Add(records, outcomes, keys); !s.ok()) return s;
  return Commit();
}

Status PartitionWriter::Begin() {
  if (auto s = ApplyTestQuota(); !s.ok()) return s;
  if (auto s = db_.Exec("BEGIN IMMEDIATE"); !s.ok()) return s;
  in_transaction_ = true;
  const int rc = mark_late_.Step();
  mark_late_.Reset();
  Status s = rc == SQLITE_DONE ? PrepareIndexInsert() : db_.Check(rc, "mark late");
  // After a rollback: what the last commit left (a writer that could not
  // tell would stop keeping a rule the file still claims).
  if (s.ok() && !level_terms_loaded_) s = LoadLevelTerms();
  if (!s.ok()) {
    Rollback();
    return s;
  }
  level_second_deltas_.clear();
  group_deltas_.clear();
  return Status::Ok();
}

Status PartitionWriter::Add(std::span<const Record* const> records,
                            std::span<RecordOutcome> outcomes, std::span<EventKey> keys) {
  Status failure = StartCompressing();
  // Trained once more within the batch, as soon as it brings the samples:
  // a day's first batch may be a whole file sent with curl, whose every
  // document was stored as it came (up to --max-body-bytes, 100 MB: some
  // 280 000 of them). A failed training is not repeated at every record.
  bool trained_here = false;
  for (std::size_t i = 0; i < records.size() && failure.ok(); ++i) {
    if (!trained_here && !sources_.ready() && sources_.HasEnoughSamples()) {
      trained_here = true;
      failure = StartCompressing();
      if (!failure.ok()) break;
    }
    auto key = NextKey(records[i]->ts_ms);
    if (!key.ok()) {
      failure = key.status();
      break;
    }
    auto outcome = WriteOne(*records[i], *key);
    if (!outcome.ok()) {
      failure = outcome.status();
      break;
    }
    outcomes[i] = *outcome;
    keys[i] = *outcome == RecordOutcome::kDuplicate ? 0 : *key;
  }
  if (!failure.ok()) Rollback();
  return failure;
}

Status PartitionWriter::Commit() {
  Status failure = StoreVocabulary();
  if (failure.ok()) failure = FlushLevelCounts();
  if (failure.ok()) failure = FlushGroups();
  if (failure.ok()) failure = FlushNumberRanges();
  if (failure.ok()) failure = db_.Exec("COMMIT");
  if (!failure.ok()) {
    Rollback();
    return failure;
  }
  in_transaction_ = false;
  indexed_.vocab.Committed();
  indexed_.numbers.Clear();
  if (dictionary_in_transaction_) {
    sources_.Committed();
    PublishDictionary(pending_dictionary_);
  }
  dictionary_in_transaction_ = false;
  pending_dictionary_.clear();
  return Status::Ok();
}

void PartitionWriter::Rollback() {
  db_.Exec("ROLLBACK");
  in_transaction_ = false;
  indexed_.vocab.RolledBack();
  indexed_.numbers.Clear();
  if (dictionary_in_transaction_) sources_.Forget();
  name_ids_.Forget();
  // Keys handed out in the rolled-back transaction are free again.
  next_seq_.clear();
  LoadHighestKey();
  level_terms_loaded_ = false;
  dictionary_in_transaction_ = false;
  pending_dictionary_.clear();
}

Status PartitionWriter::FlushLevelCounts() {
  auto add = [](Stmt& stmt, std::int64_t unit, const std::string& level, std::int64_t delta) {
    stmt.Bind(1, unit);
    stmt.BindStatic(2, level);
    stmt.Bind(3, delta);
    const int rc = stmt.Step();
    stmt.Reset();
    return rc;
  };
  std::map<std::pair<std::int64_t, std::string>, std::int64_t> minutes;
  for (const auto& [second_level, delta] : level_second_deltas_) {
    if (delta == 0) continue;
    if (const int rc = add(add_level_second_, second_level.first, second_level.second, delta);
        rc != SQLITE_DONE) {
      return db_.Check(rc, "level_seconds");
    }
    minutes[{second_level.first / 60, second_level.second}] += delta;
  }
  for (const auto& [m, delta] : minutes) {
    if (delta == 0) continue;
    if (const int rc = add(add_level_minute_, m.first, m.second, delta); rc != SQLITE_DONE) {
      return db_.Check(rc, "level_minutes");
    }
  }
  level_second_deltas_.clear();
  return Status::Ok();
}

void PartitionWriter::NoteGroup(const Record& r, bool counts) {
  auto it = group_deltas_.find(r.group);
  if (it == group_deltas_.end()) {
    it = group_deltas_.emplace(r.group, GroupDelta{r.ts_ms, r.ts_ms, 0, std::nullopt}).first;
  }
  GroupDelta& d = it->second;
  d.first = std::min(d.first, r.ts_ms);
  d.last = std::max(d.last, r.ts_ms);
  if (counts) ++d.events;
  if (r.group_end) d.ended = std::max(d.ended.value_or(r.ts_ms), r.ts_ms);
}

Status PartitionWriter::FlushGroups() {
  for (const auto& [key, d] : group_deltas_) {
    add_group_.BindStatic(1, key);
    add_group_.Bind(2, d.first);
    add_group_.Bind(3, d.last);
    add_group_.Bind(4, d.events);
    if (d.ended)
      add_group_.Bind(5, *d.ended);
    else
      add_group_.BindNull(5);
    const int rc = add_group_.Step();
    add_group_.Reset();
    if (rc != SQLITE_DONE) return db_.Check(rc, "groups");
  }
  group_deltas_.clear();
  return Status::Ok();
}

std::int64_t PartitionWriter::CacheBytes() const {
  int current = 0, highwater = 0;
  sqlite3_db_status(db_.get(), SQLITE_DBSTATUS_CACHE_USED, &current, &highwater, 0);
  return current;
}

void PartitionWriter::ReleaseCacheAndWal() {
  sqlite3_db_release_memory(db_.get());
  // The WAL is cut back only when the log restarts, at a next commit: an
  // idle day truncates it now. TRUNCATE waits for readers of the WAL; this
  // runs on the writer thread, so without waiting: if a search holds the
  // WAL, it stays until the next idle time or compaction.
  sqlite3_busy_timeout(db_.get(), 0);
  sqlite3_wal_checkpoint_v2(db_.get(), nullptr, SQLITE_CHECKPOINT_TRUNCATE, nullptr, nullptr);
  sqlite3_busy_timeout(db_.get(), kBusyTimeoutMs);
}

Status PartitionWriter::FlushNumberRanges() {
  for (const auto& [field, n] : indexed_.numbers.pending()) {
    widen_numbers_.BindStatic(1, field);
    widen_numbers_.BindDouble(2, n.lo);
    widen_numbers_.BindDouble(3, n.hi);
    widen_numbers_.Bind(4, std::int64_t{n.plain});
    widen_numbers_.Bind(5, std::int64_t{n.strings});
    widen_numbers_.Bind(6, std::int64_t{n.integers});
    const int rc = widen_numbers_.Step();
    widen_numbers_.Reset();
    if (rc != SQLITE_DONE) return db_.Check(rc, "number_ranges");
  }
  return Status::Ok();
}

Result<std::unique_ptr<PartitionReader>> PartitionReader::Open(const std::string& path,
                                                               int cache_kib) {
  std::unique_ptr<PartitionReader> r(new PartitionReader());
  if (auto s = r->db_.Open(path, SQLITE_OPEN_READONLY); !s.ok()) return s;
  if (auto s = RegisterFtsTokenizer(r->db_.get()); !s.ok()) return s;
  if (auto s = RegisterRowPredicate(r->db_.get()); !s.ok()) return s;
  if (auto s = RegisterSourceFunction(r->db_.get()); !s.ok()) return s;
  if (auto s = RegisterNameFunction(r->db_.get()); !s.ok()) return s;
  if (auto s = RegisterRowidsGuard(r->db_.get()); !s.ok()) return s;
  if (auto s = RegisterDocnoKeyFunctions(r->db_.get()); !s.ok()) return s;
  if (auto s = RegisterFtsMembership(r->db_.get()); !s.ok()) return s;
  sqlite3_busy_timeout(r->db_.get(), kBusyTimeoutMs);
  if (auto s = r->db_.Exec(fmt::format("PRAGMA cache_size=-{}", cache_kib)); !s.ok()) return s;
  r->ReadMeta();  // a file without meta yet reads as legacy
  return r;
}

// Unknown (no meta yet, or not readable) reads as legacy: slower queries,
// never wrong ones.
Status PartitionReader::ReadMeta() {
  indexed_keywords_.clear();
  numbers_recorded_ = false;
  field_terms_recorded_ = false;
  rowids_ = RowidLayout();
  auto meta =
      db_.Prepare(fmt::format("SELECT key, value FROM meta WHERE key IN ('{}', '{}', '{}', '{}')",
                              kKeywordFieldsMeta, kNumberRangesMeta, kFieldTermsMeta, kRowidsMeta));
  if (!meta.ok()) return meta.status();
  int rc;
  while ((rc = meta->Step()) == SQLITE_ROW) {
    const std::string_view key = meta->Text(0), value = meta->Text(1);
    if (key == kKeywordFieldsMeta) indexed_keywords_ = value;
    if (key == kNumberRangesMeta) numbers_recorded_ = value == "all";
    if (key == kFieldTermsMeta) field_terms_recorded_ = value == "all";
    if (key == kRowidsMeta) rowids_ = ParseRowidLayout(value);
  }
  return rc == SQLITE_DONE ? Status::Ok() : db_.Check(rc, "read meta");
}

Result<std::string> PartitionReader::MetaValue(std::string_view key) {
  auto stmt = Statement(fmt::format("SELECT value FROM meta WHERE key = '{}'", key));
  if (!stmt.ok()) return stmt.status();
  const int rc = (*stmt)->Step();
  std::string value(rc == SQLITE_ROW ? (*stmt)->Text(0) : std::string_view());
  (*stmt)->Reset();
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) return db_.Check(rc, "read meta");
  return value;
}

Result<std::span<const std::string_view>> PartitionReader::LevelTermFields() {
  auto value = MetaValue(kLevelTermsMeta);
  if (!value.ok()) return value.status();
  return storage::LevelTermFields(*value);
}

Status PartitionReader::ReadRowids() {
  auto value = MetaValue(kRowidsMeta);
  if (!value.ok()) return value.status();
  if (*value != rowids_.meta) rowids_ = ParseRowidLayout(*value);
  return Status::Ok();
}

Result<Stmt*> PartitionReader::Statement(const std::string& sql) {
  auto it = cache_.find(sql);
  if (it != cache_.end()) return &it->second;
  if (cache_.size() >= 64) cache_.clear();
  auto stmt = db_.Prepare(sql, /*persistent=*/true);
  if (!stmt.ok()) return stmt.status();
  return &cache_.emplace(sql, std::move(*stmt)).first->second;
}

Result<std::optional<EventKey>> EndKey(PartitionReader& reader, KeyEnd end) {
  auto stmt = reader.Statement(end == KeyEnd::kOldest ? "SELECT min(key) FROM events"
                                                      : "SELECT max(key) FROM events");
  if (!stmt.ok()) return stmt.status();
  const int rc = (*stmt)->Step();
  std::optional<EventKey> key;
  if (rc == SQLITE_ROW && !(*stmt)->IsNull(0)) key = (*stmt)->Int(0);
  (*stmt)->Reset();
  if (rc != SQLITE_ROW) return SqliteStatus(rc, reader.db(), "end key");
  return key;
}

}  // namespace dashcam::storage
