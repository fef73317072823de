#include "storage/stored_names.h"

#include <functional>
#include <memory>

namespace dashcam::storage {
namespace {

// One connection's dc_name state: the file's names by id, as last read.
struct NameReader {
  std::unordered_map<std::int64_t, std::string> names;
};

// Calls `add(id, name)` for every row of `names` in `db`.
Status ReadNames(sqlite3* db, const std::function<void(std::int64_t, std::string_view)>& add) {
  sqlite3_stmt* raw = nullptr;
  int rc = sqlite3_prepare_v2(db, "SELECT id, name FROM names", -1, &raw, nullptr);
  Stmt stmt(raw);
  if (rc != SQLITE_OK) return SqliteStatus(rc, db, "read names");
  while ((rc = stmt.Step()) == SQLITE_ROW) add(stmt.Int(0), stmt.Text(1));
  return rc == SQLITE_DONE ? Status::Ok() : SqliteStatus(rc, db, "read names");
}

void NameFunction(sqlite3_context* ctx, int, sqlite3_value** argv) {
  if (sqlite3_value_type(argv[0]) != SQLITE_INTEGER) return sqlite3_result_value(ctx, argv[0]);
  auto& reader = *static_cast<NameReader*>(sqlite3_user_data(ctx));
  const std::int64_t id = sqlite3_value_int64(argv[0]);
  auto it = reader.names.find(id);
  if (it == reader.names.end()) {
    // A name added since the last read.
    reader.names.clear();
    const Status s = ReadNames(sqlite3_context_db_handle(ctx), [&](std::int64_t i, auto name) {
      reader.names.emplace(i, std::string(name));
    });
    if (!s.ok()) return sqlite3_result_error(ctx, s.ToString().c_str(), -1);
    it = reader.names.find(id);
    if (it == reader.names.end()) {
      return sqlite3_result_error(ctx, "an event names a level or index the file lacks", -1);
    }
  }
  sqlite3_result_text(ctx, it->second.data(), static_cast<int>(it->second.size()),
                      SQLITE_TRANSIENT);
}

}  // namespace

Status RegisterNameFunction(sqlite3* db) {
  auto reader = std::make_unique<NameReader>();
  const int rc =
      sqlite3_create_function_v2(db, "dc_name", 1, SQLITE_UTF8, reader.get(), NameFunction, nullptr,
                                 nullptr, [](void* p) { delete static_cast<NameReader*>(p); });
  // On failure SQLite has already called the destructor.
  reader.release();
  return SqliteStatus(rc, db, "register dc_name");
}

Status NameIds::Prepare(Db& db) {
  db_ = &db;
  auto insert = db.Prepare("INSERT INTO names(name) VALUES(?1)", /*persistent=*/true);
  if (!insert.ok()) return insert.status();
  insert_ = std::move(*insert);
  return Status::Ok();
}

Status NameIds::Load() {
  ids_.clear();
  const Status s =
      ReadNames(db_->get(), [this](std::int64_t id, auto name) { ids_.emplace(name, id); });
  loaded_ = s.ok();
  return s;
}

Result<std::int64_t> NameIds::Id(std::string_view name) {
  if (!loaded_) {
    if (auto s = Load(); !s.ok()) return s;
  }
  if (auto it = ids_.find(name); it != ids_.end()) return it->second;
  insert_.BindStatic(1, name);
  const int rc = insert_.Step();
  insert_.Reset();
  if (rc != SQLITE_DONE) return db_->Check(rc, "insert name");
  const std::int64_t id = sqlite3_last_insert_rowid(db_->get());
  ids_.emplace(name, id);
  return id;
}

void NameIds::Forget() {
  ids_.clear();
  loaded_ = false;
}

}  // namespace dashcam::storage
