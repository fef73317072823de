// Stored names: an event's level and index name, kept once per file.
//
// Nearly every event of a day has one of a few levels and one index name
// ("filebeat-8.17.0"), ~20 bytes an event as text. Files since partition
// schema 8 (partition.h) store both columns of `events` as the id of a row
// of `names`; older files hold the text itself. Statements read either kind
// through the SQL function
//
//   dc_name(value)   the name of an integer id; text and NULL as they are;
//                    an error for an id the file lacks.
//
// registered per connection by RegisterNameFunction; it reads `names` on
// first use and again when it meets an id it has not seen. Ids are never
// reused once committed, so what a connection cached stays true.
//
// NameIds is the writer's side: the id of a name, adding a row to `names`
// in the open transaction for a new one. A rolled-back transaction takes
// its new rows with it, so the writer must then call Forget().
//
// Thread-safety: a NameIds belongs to its writer's thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "storage/sqlite_db.h"
#include "storage/status.h"

namespace dashcam::storage {

inline constexpr const char* kNamesSchemaSql =
    "CREATE TABLE IF NOT EXISTS names(id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE)";

// An events row's level name as SQL, without dc_name: for the writer's
// connection, which sees the names its open transaction added and keeps no
// cache that a rollback could leave wrong.
inline constexpr const char* kLevelNameSql =
    "CASE WHEN typeof(level) = 'integer' THEN (SELECT name FROM names WHERE id = level) "
    "ELSE level END";

// Registers dc_name on `db`.
Status RegisterNameFunction(sqlite3* db);

class NameIds {
 public:
  // REQUIRES: `db` has the names table and outlives this.
  Status Prepare(Db& db);

  // The id of `name`, added to `names` in the open transaction if new.
  Result<std::int64_t> Id(std::string_view name);

  // Drops what is cached: after a rollback, ids it added may be gone.
  void Forget();

 private:
  Status Load();

  struct Hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
  };

  Db* db_ = nullptr;
  Stmt insert_;
  bool loaded_ = false;
  std::unordered_map<std::string, std::int64_t, Hash, std::equal_to<>> ids_;
};

}  // namespace dashcam::storage
