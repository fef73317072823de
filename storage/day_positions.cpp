#include "storage/day_positions.h"

#include <fmt/format.h>

namespace dashcam::storage {
namespace {

// Steps `stmt` once for a single integer (an error when the row is missing).
Result<std::int64_t> OneInt(PartitionReader& reader, Stmt& stmt, const char* what) {
  const int rc = stmt.Step();
  const bool row = rc == SQLITE_ROW && !stmt.IsNull(0);
  const std::int64_t v = row ? stmt.Int(0) : 0;
  stmt.Reset();
  if (rc != SQLITE_ROW) return SqliteStatus(rc, reader.db(), what);
  if (!row) return Status::Internal(fmt::format("{}: no value", what));
  return v;
}

}  // namespace

Result<std::int64_t> PositionOf(PartitionReader& reader, const CompiledQuery& q, EventKey key,
                                bool after) {
  if (!ReadsDocnos(q)) return after ? key + 1 : key;
  auto stmt = reader.Statement(fmt::format(
      "SELECT {} WHERE {}", DocnoBoundSql(q.rowids, "?1", after), RowidsGuardSql(q.rowids)));
  if (!stmt.ok()) return stmt.status();
  (*stmt)->Bind(1, key);
  return OneInt(reader, **stmt, "docno of a key");
}

Status KeysAt(PartitionReader& reader, const CompiledQuery& q, std::vector<EventKey>& positions) {
  if (!ReadsDocnos(q) || positions.empty()) return Status::Ok();
  auto stmt = reader.Statement(
      fmt::format("SELECT key FROM docnos WHERE docno = ?1 AND {}", RowidsGuardSql(q.rowids)));
  if (!stmt.ok()) return stmt.status();
  for (EventKey& p : positions) {
    (*stmt)->Bind(1, p);
    auto key = OneInt(reader, **stmt, "key of a docno");
    if (!key.ok()) return key.status();
    p = *key;
  }
  return Status::Ok();
}

Result<std::vector<std::pair<TimeMs, std::int64_t>>> UnitStarts(PartitionReader& reader,
                                                                const CompiledQuery& q, TimeMs from,
                                                                TimeMs to, TimeMs unit) {
  const char* table = unit == kMsPerMinute ? "level_minutes" : "level_seconds";
  const char* column = unit == kMsPerMinute ? "minute" : "second";
  const std::string guard = RowidsGuardSql(q.rowids);
  const std::int64_t first = from / unit, last = (to - 1) / unit;
  auto before = reader.Statement(
      fmt::format("SELECT coalesce(sum(n), 0) FROM {} WHERE {} AND {} < ?1", table, guard, column));
  if (!before.ok()) return before.status();
  (*before)->Bind(1, first);
  auto below = OneInt(reader, **before, "level counts");
  if (!below.ok()) return below.status();
  auto units = reader.Statement(
      fmt::format("SELECT {0}, sum(n) FROM {1} WHERE {2} AND {0} BETWEEN ?1 AND ?2 GROUP BY {0} "
                  "ORDER BY {0}",
                  column, table, guard));
  if (!units.ok()) return units.status();
  (*units)->Bind(1, first);
  (*units)->Bind(2, last);
  std::vector<std::pair<TimeMs, std::int64_t>> out;
  std::int64_t next = *below + 1;
  int rc;
  while ((rc = (*units)->Step()) == SQLITE_ROW) {
    const std::int64_t n = (*units)->Int(1);
    if (n <= 0) continue;
    out.emplace_back(std::max(from, (*units)->Int(0) * unit), next);
    next += n;
  }
  (*units)->Reset();
  if (rc != SQLITE_DONE) return SqliteStatus(rc, reader.db(), "level counts");
  return out;
}

}  // namespace dashcam::storage
