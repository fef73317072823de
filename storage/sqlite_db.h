// Thin RAII wrappers over the SQLite C API: Db owns a connection, Stmt a
// prepared statement. Every return code is turned into a Status.
//
// Thread-safety: a Db and its Stmts belong to one thread at a time (SQLite is
// built in multi-thread mode; connections are never shared concurrently).
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "storage/status.h"

namespace dashcam::storage {

// Maps an SQLite result code (and the connection's message) to a Status.
// SQLITE_FULL, and an SQLITE_IOERR_* whose errno is ENOSPC or EDQUOT, give
// NoSpace: the write did not happen for lack of space, and may once space
// returns.
Status SqliteStatus(int rc, sqlite3* db, std::string_view what);

// `text` as an SQL string literal: in single quotes, each quote doubled.
std::string SqlStringLiteral(std::string_view text);

// An SQL function argument's text or blob bytes, valid until the argument
// changes; empty for NULL.
std::string_view ValueText(sqlite3_value* v);
std::string_view ValueBlob(sqlite3_value* v);

class Stmt {
 public:
  Stmt() = default;
  explicit Stmt(sqlite3_stmt* s) : stmt_(s) {}
  ~Stmt() { sqlite3_finalize(stmt_); }
  Stmt(Stmt&& o) noexcept : stmt_(o.stmt_) { o.stmt_ = nullptr; }
  Stmt& operator=(Stmt&& o) noexcept;
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  sqlite3_stmt* get() const { return stmt_; }
  explicit operator bool() const { return stmt_ != nullptr; }

  // Binding (1-based). Text and blobs are copied unless noted.
  void Bind(int i, std::int64_t v) { sqlite3_bind_int64(stmt_, i, v); }
  void Bind(int i, std::string_view v) {
    sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  }
  // The bytes must stay valid until the statement is reset.
  void BindStatic(int i, std::string_view v) {
    sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_STATIC);
  }
  void BindBlobStatic(int i, std::string_view v) {
    sqlite3_bind_blob(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_STATIC);
  }
  void BindDouble(int i, double v) { sqlite3_bind_double(stmt_, i, v); }
  void BindNull(int i) { sqlite3_bind_null(stmt_, i); }
  // Binds a pointer for an SQL function (sqlite3_bind_pointer); `p` must
  // outlive the statement's use.
  void BindPointer(int i, const void* p, const char* type) {
    sqlite3_bind_pointer(stmt_, i, const_cast<void*>(p), type, nullptr);
  }

  // SQLITE_ROW, SQLITE_DONE or an error code.
  int Step() { return sqlite3_step(stmt_); }
  // Resets and clears bindings; returns the code of the last step.
  int Reset();

  std::int64_t Int(int col) const { return sqlite3_column_int64(stmt_, col); }
  double Double(int col) const { return sqlite3_column_double(stmt_, col); }
  std::string_view Text(int col) const;
  std::string_view Blob(int col) const;
  bool IsNull(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }

 private:
  sqlite3_stmt* stmt_ = nullptr;
};

class Db {
 public:
  Db() = default;
  ~Db() { Close(); }
  Db(Db&& o) noexcept : db_(o.db_) { o.db_ = nullptr; }
  Db& operator=(Db&& o) noexcept;
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;

  // flags: SQLITE_OPEN_READONLY or SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE.
  Status Open(const std::string& path, int flags);
  void Close();

  sqlite3* get() const { return db_; }
  explicit operator bool() const { return db_ != nullptr; }

  Status Exec(std::string_view sql);
  Result<Stmt> Prepare(std::string_view sql, bool persistent = false);
  Status Check(int rc, std::string_view what) const { return SqliteStatus(rc, db_, what); }

 private:
  sqlite3* db_ = nullptr;
};

}  // namespace dashcam::storage
