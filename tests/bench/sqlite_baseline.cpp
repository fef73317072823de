// SqliteBaseline: see sqlite_baseline.h.
#include "tests/bench/sqlite_baseline.h"

#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>

#include "tests/bench/stream_load.h"

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

Result<std::unique_ptr<SqliteBaseline>> SqliteBaseline::Create(
    const std::filesystem::path& db_path) {
  std::unique_ptr<SqliteBaseline> b(new SqliteBaseline());
  b->path_ = db_path;
  if (Status s = b->db_.Open(db_path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE); !s.ok()) {
    return s;
  }
  if (Status s = b->db_.Exec(kSchema); !s.ok()) return s;
  auto doc = b->db_.Prepare("INSERT INTO events(id, ts, doc) VALUES(?1, ?2, ?3)", true);
  if (!doc.ok()) return doc.status();
  b->doc_ = std::move(*doc);
  auto fts = b->db_.Prepare("INSERT INTO fts(rowid, message) VALUES(?1, ?2)", true);
  if (!fts.ok()) return fts.status();
  b->fts_ = std::move(*fts);
  return b;
}

// Steps and resets; the statement is ready for the next row after.
Status SqliteBaseline::InsertOne(int64_t id, int64_t ts, std::string_view doc,
                                 std::string_view message) {
  doc_.Bind(1, id);
  doc_.Bind(2, ts);
  doc_.BindStatic(3, doc);
  if (const int rc = doc_.Step(); rc != SQLITE_DONE) return db_.Check(doc_.Reset(), "insert");
  doc_.Reset();
  fts_.Bind(1, id);
  fts_.BindStatic(2, message);
  if (const int rc = fts_.Step(); rc != SQLITE_DONE) return db_.Check(fts_.Reset(), "insert");
  fts_.Reset();
  return Status::Ok();
}

Status SqliteBaseline::Insert(const EventCorpus& chunk, int64_t first_id) {
  const auto start = std::chrono::steady_clock::now();
  const double cpu_start = CallingThreadCpuSeconds();
  for (size_t begin = 0; begin < chunk.size(); begin += kBaselineRowsPerTransaction) {
    size_t end = std::min(chunk.size(), begin + kBaselineRowsPerTransaction);
    if (Status s = db_.Exec("BEGIN"); !s.ok()) return s;
    for (size_t i = begin; i < end; ++i) {
      Status s = InsertOne(first_id + static_cast<int64_t>(i), chunk.TimestampMs(i), chunk.Json(i),
                           chunk.Message(i));
      if (!s.ok()) return s;
    }
    if (Status s = db_.Exec("COMMIT"); !s.ok()) return s;
  }
  insert_seconds_ +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  insert_cpu_seconds_ += CallingThreadCpuSeconds() - cpu_start;
  return Status::Ok();
}

BaselineResult SqliteBaseline::Finish() {
  doc_ = storage::Stmt();
  fts_ = storage::Stmt();
  db_.Close();
  return BaselineResult{.insert_seconds = insert_seconds_,
                        .insert_cpu_seconds = insert_cpu_seconds_,
                        .bytes_on_disk = DatabaseFileBytes(path_)};
}

}  // namespace dashcam::bench
