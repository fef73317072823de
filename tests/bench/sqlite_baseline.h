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
// Thread-safety: RunSqliteBaseline is self-contained; it opens and closes
// its own connection.
#pragma once

#include <cstdint>
#include <filesystem>

#include "storage/status.h"
#include "tests/bench/event_corpus.h"

namespace dashcam::bench {

inline constexpr int kBaselineRowsPerTransaction = 10000;

struct BaselineResult {
  double insert_seconds = 0;   // from the first BEGIN to the last COMMIT
  uint64_t bytes_on_disk = 0;  // database, WAL and shm after closing
};

// REQUIRES: `db_path` does not exist yet.
Result<BaselineResult> RunSqliteBaseline(const EventCorpus& corpus,
                                         const std::filesystem::path& db_path);

}  // namespace dashcam::bench
