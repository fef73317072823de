#include "storage/sqlite_db.h"

#include <cerrno>

#include <fmt/format.h>

namespace dashcam::storage {

Status SqliteStatus(int rc, sqlite3* db, std::string_view what) {
  if (rc == SQLITE_OK || rc == SQLITE_DONE || rc == SQLITE_ROW) return Status::Ok();
  const char* detail = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  std::string msg = fmt::format("{}: {}", what, detail ? detail : sqlite3_errstr(rc));
  switch (rc & 0xFF) {
    case SQLITE_FULL:
      return Status::NoSpace(msg);
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      return Status::Corruption(msg);
    case SQLITE_INTERRUPT:
      return Status::DeadlineExceeded(msg);
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return Status::Overloaded(msg);
    case SQLITE_IOERR: {
      // The unix VFS reports ENOSPC from write() as SQLITE_FULL, but from
      // fsync, ftruncate or fallocate as an SQLITE_IOERR_* with the errno kept.
      const int err = db ? sqlite3_system_errno(db) : 0;
      if (err == ENOSPC || err == EDQUOT)
        return Status::NoSpace(msg + " (no space left on device)");
      return Status::IoError(msg);
    }
    case SQLITE_CANTOPEN:
    case SQLITE_READONLY:
    case SQLITE_PERM:
      return Status::IoError(msg);
    case SQLITE_CONSTRAINT:
      return Status::AlreadyExists(msg);
    case SQLITE_ERROR:
      return Status::InvalidArgument(msg);
    default:
      return Status::Internal(msg);
  }
}

std::string SqlStringLiteral(std::string_view text) {
  std::string out = "'";
  for (char c : text) {
    out += c;
    if (c == '\'') out += '\'';
  }
  return out + "'";
}

std::string_view ValueText(sqlite3_value* v) {
  const auto* p = reinterpret_cast<const char*>(sqlite3_value_text(v));
  return p ? std::string_view(p, static_cast<std::size_t>(sqlite3_value_bytes(v)))
           : std::string_view();
}

std::string_view ValueBlob(sqlite3_value* v) {
  const auto* p = static_cast<const char*>(sqlite3_value_blob(v));
  return p ? std::string_view(p, static_cast<std::size_t>(sqlite3_value_bytes(v)))
           : std::string_view();
}

Stmt& Stmt::operator=(Stmt&& o) noexcept {
  if (this != &o) {
    sqlite3_finalize(stmt_);
    stmt_ = o.stmt_;
    o.stmt_ = nullptr;
  }
  return *this;
}

int Stmt::Reset() {
  const int rc = sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
  return rc;
}

std::string_view Stmt::Text(int col) const {
  const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, col));
  const int n = sqlite3_column_bytes(stmt_, col);
  return p ? std::string_view(p, static_cast<std::size_t>(n)) : std::string_view();
}

std::string_view Stmt::Blob(int col) const {
  const auto* p = static_cast<const char*>(sqlite3_column_blob(stmt_, col));
  const int n = sqlite3_column_bytes(stmt_, col);
  return p ? std::string_view(p, static_cast<std::size_t>(n)) : std::string_view();
}

Db& Db::operator=(Db&& o) noexcept {
  if (this != &o) {
    Close();
    db_ = o.db_;
    o.db_ = nullptr;
  }
  return *this;
}

Status Db::Open(const std::string& path, int flags) {
  Close();
  const int rc = sqlite3_open_v2(path.c_str(), &db_, flags | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    Status s = SqliteStatus(rc, db_, "open " + path);
    Close();
    return s;
  }
  sqlite3_extended_result_codes(db_, 1);
  return Status::Ok();
}

void Db::Close() {
  if (db_) {
    sqlite3_close_v2(db_);
    db_ = nullptr;
  }
}

Status Db::Exec(std::string_view sql) {
  std::string copy(sql);
  char* err = nullptr;
  const int rc = sqlite3_exec(db_, copy.c_str(), nullptr, nullptr, &err);
  sqlite3_free(err);
  return SqliteStatus(rc, db_, copy.substr(0, 60));
}

Result<Stmt> Db::Prepare(std::string_view sql, bool persistent) {
  sqlite3_stmt* stmt = nullptr;
  const int rc = sqlite3_prepare_v3(db_, sql.data(), static_cast<int>(sql.size()),
                                    persistent ? SQLITE_PREPARE_PERSISTENT : 0, &stmt, nullptr);
  if (rc != SQLITE_OK) return SqliteStatus(rc, db_, "prepare");
  return Stmt(stmt);
}

}  // namespace dashcam::storage
