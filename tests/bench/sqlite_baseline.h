// SqliteBaseline: what a user gets by inserting the same events straight into
// SQLite from one thread, with no server in between. The benchmark prints the
// server's ingest rate as a ratio of this one.
//
// The database (one file, created fresh):
//   PRAGMA journal_mode=WAL; synchronous=NORMAL; cache_size=64 MiB
//   CREATE TABLE events(id INTEGER PRIMARY KEY, ts INTEGER, doc TEXT)
//   CREATE VIRTUAL TABLE fts USING fts5(message, content='events',
//       content_rowid='id', tokenize='unicode61')
// Each event is one row of `events` (doc = its JSON) plus its message in
// `fts`, committed in transactions of kBaselineRowsPerTransaction rows.
//
// The events may come in chunks (CorpusChunks); only the inserts and commits
// are timed, not what the caller does between chunks.
//
// Thread-safety: a SqliteBaseline owns its connection and belongs to one
// thread at a time.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string_view>

#include "storage/sqlite_db.h"
#include "storage/status.h"
#include "tests/bench/event_corpus.h"

namespace dashcam::bench {

inline constexpr int kBaselineRowsPerTransaction = 10000;

struct BaselineResult {
  double insert_seconds = 0;      // inserting and committing, summed over the chunks
  double insert_cpu_seconds = 0;  // the inserting thread's CPU time in those spans
  uint64_t bytes_on_disk = 0;     // database, WAL and shm after closing
};

class SqliteBaseline {
 public:
  // Creates the database. REQUIRES: `db_path` does not exist yet.
  static Result<std::unique_ptr<SqliteBaseline>> Create(const std::filesystem::path& db_path);

  // Inserts every event of `chunk`, with ids from `first_id` on, in
  // transactions of kBaselineRowsPerTransaction rows (a chunk's last may be
  // shorter).
  Status Insert(const EventCorpus& chunk, int64_t first_id);
  // Closes the database: the time spent in Insert and the bytes on disk.
  BaselineResult Finish();

 private:
  SqliteBaseline() = default;
  Status InsertOne(int64_t id, int64_t ts, std::string_view doc, std::string_view message);

  std::filesystem::path path_;
  storage::Db db_;  // before the statements: closed after them
  storage::Stmt doc_;
  storage::Stmt fts_;
  double insert_seconds_ = 0;
  double insert_cpu_seconds_ = 0;
};

}  // namespace dashcam::bench
