// SqliteBaseline: see sqlite_baseline.h.
#include "tests/bench/sqlite_baseline.h"

#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>

namespace dashcam::bench {
namespace {

struct DbCloser {
  void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
};
struct StmtFinalizer {
  void operator()(sqlite3_stmt* stmt) const { sqlite3_finalize(stmt); }
};
using DbPtr = std::unique_ptr<sqlite3, DbCloser>;
using StmtPtr = std::unique_ptr<sqlite3_stmt, StmtFinalizer>;

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

Result<StmtPtr> Prepare(sqlite3* db, const char* sql) {
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &stmt, nullptr) != SQLITE_OK) {
    return SqliteError(db, std::string("prepare ") + sql);
  }
  return StmtPtr(stmt);
}

// Binds, steps and resets; the statement is ready for the next row after.
Status StepOnce(sqlite3* db, sqlite3_stmt* stmt) {
  int rc = sqlite3_step(stmt);
  int reset_rc = sqlite3_reset(stmt);
  if (rc != SQLITE_DONE || reset_rc != SQLITE_OK) return SqliteError(db, "insert");
  return Status::Ok();
}

class BaselineInserter {
 public:
  static Result<BaselineInserter> Open(const std::filesystem::path& path) {
    sqlite3* raw = nullptr;
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
    int rc = sqlite3_open_v2(path.c_str(), &raw, flags, nullptr);
    DbPtr db(raw);
    if (rc != SQLITE_OK) return SqliteError(raw, "open " + path.string());
    if (Status s = Exec(db.get(), kSchema); !s.ok()) return s;
    auto doc = Prepare(db.get(), "INSERT INTO events(id, ts, doc) VALUES(?1, ?2, ?3)");
    if (!doc.ok()) return doc.status();
    auto fts = Prepare(db.get(), "INSERT INTO fts(rowid, message) VALUES(?1, ?2)");
    if (!fts.ok()) return fts.status();
    return BaselineInserter(std::move(db), std::move(doc).value(), std::move(fts).value());
  }

  Status Insert(int64_t id, int64_t ts, std::string_view doc, std::string_view message) {
    sqlite3_bind_int64(doc_.get(), 1, id);
    sqlite3_bind_int64(doc_.get(), 2, ts);
    sqlite3_bind_text(doc_.get(), 3, doc.data(), static_cast<int>(doc.size()), SQLITE_STATIC);
    if (Status s = StepOnce(db_.get(), doc_.get()); !s.ok()) return s;
    sqlite3_bind_int64(fts_.get(), 1, id);
    sqlite3_bind_text(fts_.get(), 2, message.data(), static_cast<int>(message.size()),
                      SQLITE_STATIC);
    return StepOnce(db_.get(), fts_.get());
  }

  Status Begin() { return Exec(db_.get(), "BEGIN"); }
  Status Commit() { return Exec(db_.get(), "COMMIT"); }

  // Statements first: a connection with live statements does not close.
  void Close() {
    doc_.reset();
    fts_.reset();
    db_.reset();
  }

 private:
  BaselineInserter(DbPtr db, StmtPtr doc, StmtPtr fts)
      : db_(std::move(db)), doc_(std::move(doc)), fts_(std::move(fts)) {}

  DbPtr db_;
  StmtPtr doc_;
  StmtPtr fts_;
};

Status InsertAll(const EventCorpus& corpus, BaselineInserter& inserter) {
  for (size_t begin = 0; begin < corpus.size(); begin += kBaselineRowsPerTransaction) {
    size_t end = std::min(corpus.size(), begin + kBaselineRowsPerTransaction);
    if (Status s = inserter.Begin(); !s.ok()) return s;
    for (size_t i = begin; i < end; ++i) {
      Status s = inserter.Insert(static_cast<int64_t>(i) + 1, corpus.TimestampMs(i), corpus.Json(i),
                                 corpus.Message(i));
      if (!s.ok()) return s;
    }
    if (Status s = inserter.Commit(); !s.ok()) return s;
  }
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

Result<BaselineResult> RunSqliteBaseline(const EventCorpus& corpus,
                                         const std::filesystem::path& db_path) {
  Result<BaselineInserter> inserter = BaselineInserter::Open(db_path);
  if (!inserter.ok()) return inserter.status();
  auto start = std::chrono::steady_clock::now();
  if (Status s = InsertAll(corpus, *inserter); !s.ok()) return s;
  BaselineResult result;
  result.insert_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  inserter->Close();
  result.bytes_on_disk = DatabaseFileBytes(db_path);
  return result;
}

}  // namespace dashcam::bench
