// SqliteBaseline: see sqlite_baseline.h.
#include "tests/bench/sqlite_baseline.h"

#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>

namespace dashcam::bench {
namespace {

constexpr const char* kSchema = R"sql(
  PRAGMA journal_mode=WAL;
  PRAGMA synchronous=NORMAL;
  PRAGMA cache_size=-65536;
  CREATE TABLE events(id INTEGER PRIMARY KEY, ts INTEGER, doc TEXT);
  CREATE VIRTUAL TABLE fts USING fts5(message, content='events', content_rowid='id',
                                      tokenize='unicode61');
)sql";

Status SqliteError(sqlite3* db, const std::string& what) {
  return Status::IoError(what + ": " + sqlite3_errmsg(db));
}

Status Exec(sqlite3* db, const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &err) == SQLITE_OK) return Status::Ok();
  std::string message = err ? err : "unknown error";
  sqlite3_free(err);
  return Status::IoError(std::string("exec: ") + message);
}

Result<sqlite3_stmt*> Prepare(sqlite3* db, const char* sql) {
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &stmt, nullptr) != SQLITE_OK) {
    return SqliteError(db, std::string("prepare ") + sql);
  }
  return stmt;
}

// Steps and resets; the statement is ready for the next row after.
Status StepOnce(sqlite3* db, sqlite3_stmt* stmt) {
  int rc = sqlite3_step(stmt);
  int reset_rc = sqlite3_reset(stmt);
  if (rc != SQLITE_DONE || reset_rc != SQLITE_OK) return SqliteError(db, "insert");
  return Status::Ok();
}

// The database file plus its -wal and -shm companions, where present.
uint64_t DatabaseFileBytes(const std::filesystem::path& db_path) {
  uint64_t total = 0;
  for (const char* suffix : {"", "-wal", "-shm"}) {
    std::error_code ec;
    uint64_t size = std::filesystem::file_size(db_path.string() + suffix, ec);
    if (!ec) total += size;
  }
  return total;
}

}  // namespace

void SqliteBaseline::DbCloser::operator()(sqlite3* db) const {
  sqlite3_close_v2(db);
}

void SqliteBaseline::StmtFinalizer::operator()(sqlite3_stmt* stmt) const {
  sqlite3_finalize(stmt);
}

Result<std::unique_ptr<SqliteBaseline>> SqliteBaseline::Create(
    const std::filesystem::path& db_path) {
  sqlite3* raw = nullptr;
  int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
  int rc = sqlite3_open_v2(db_path.c_str(), &raw, flags, nullptr);
  DbPtr db(raw);
  if (rc != SQLITE_OK) return SqliteError(raw, "open " + db_path.string());
  if (Status s = Exec(db.get(), kSchema); !s.ok()) return s;
  auto doc = Prepare(db.get(), "INSERT INTO events(id, ts, doc) VALUES(?1, ?2, ?3)");
  if (!doc.ok()) return doc.status();
  StmtPtr doc_stmt(*doc);
  auto fts = Prepare(db.get(), "INSERT INTO fts(rowid, message) VALUES(?1, ?2)");
  if (!fts.ok()) return fts.status();
  return std::unique_ptr<SqliteBaseline>(
      new SqliteBaseline(db_path, std::move(db), std::move(doc_stmt), StmtPtr(*fts)));
}

SqliteBaseline::SqliteBaseline(std::filesystem::path path, DbPtr db, StmtPtr doc, StmtPtr fts)
    : path_(std::move(path)), db_(std::move(db)), doc_(std::move(doc)), fts_(std::move(fts)) {}

// Statements first: a connection with live statements does not close.
SqliteBaseline::~SqliteBaseline() {
  doc_.reset();
  fts_.reset();
}

Status SqliteBaseline::InsertOne(int64_t id, int64_t ts, std::string_view doc,
                                 std::string_view message) {
  sqlite3_bind_int64(doc_.get(), 1, id);
  sqlite3_bind_int64(doc_.get(), 2, ts);
  sqlite3_bind_text(doc_.get(), 3, doc.data(), static_cast<int>(doc.size()), SQLITE_STATIC);
  if (Status s = StepOnce(db_.get(), doc_.get()); !s.ok()) return s;
  sqlite3_bind_int64(fts_.get(), 1, id);
  sqlite3_bind_text(fts_.get(), 2, message.data(), static_cast<int>(message.size()), SQLITE_STATIC);
  return StepOnce(db_.get(), fts_.get());
}

Status SqliteBaseline::Insert(const EventCorpus& chunk, int64_t first_id) {
  const auto start = std::chrono::steady_clock::now();
  for (size_t begin = 0; begin < chunk.size(); begin += kBaselineRowsPerTransaction) {
    size_t end = std::min(chunk.size(), begin + kBaselineRowsPerTransaction);
    if (Status s = Exec(db_.get(), "BEGIN"); !s.ok()) return s;
    for (size_t i = begin; i < end; ++i) {
      Status s = InsertOne(first_id + static_cast<int64_t>(i), chunk.TimestampMs(i), chunk.Json(i),
                           chunk.Message(i));
      if (!s.ok()) return s;
    }
    if (Status s = Exec(db_.get(), "COMMIT"); !s.ok()) return s;
  }
  insert_seconds_ +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return Status::Ok();
}

BaselineResult SqliteBaseline::Finish() {
  doc_.reset();
  fts_.reset();
  db_.reset();
  return BaselineResult{.insert_seconds = insert_seconds_,
                        .bytes_on_disk = DatabaseFileBytes(path_)};
}

}  // namespace dashcam::bench
