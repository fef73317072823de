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
  auto stmt =
      reader.Statement(fmt::format("{} AND {}", KeyOfDocnoSql(q.rowids), RowidsGuardSql(q.rowids)));
  if (!stmt.ok()) return stmt.status();
  for (EventKey& p : positions) {
    (*stmt)->Bind(1, p);
    auto key = OneInt(reader, **stmt, "key of a docno");
    if (!key.ok()) return key.status();
    p = *key;
  }
  return Status::Ok();
}

Result<std::vector<std::pair<TimeMs, std::int64_t>>> MinuteStarts(PartitionReader& reader,
                                                                  const CompiledQuery& q,
                                                                  TimeMs from, TimeMs to) {
  const std::string guard = RowidsGuardSql(q.rowids);
  const std::int64_t first = from / kMsPerMinute, last = (to - 1) / kMsPerMinute;
  auto before = reader.Statement(
      fmt::format("SELECT coalesce(sum(n), 0) FROM level_minutes WHERE {} AND minute < ?1", guard));
  if (!before.ok()) return before.status();
  (*before)->Bind(1, first);
  auto below = OneInt(reader, **before, "level counts");
  if (!below.ok()) return below.status();
  // Rows by (minute, level) in key order, summed here: a GROUP BY of the
  // ~6 000 rows of a day's minutes took as long as the histogram's matches.
  auto minutes = reader.Statement(fmt::format(
      "SELECT minute, n FROM level_minutes WHERE {} AND minute BETWEEN ?1 AND ?2 ORDER BY minute",
      guard));
  if (!minutes.ok()) return minutes.status();
  (*minutes)->Bind(1, first);
  (*minutes)->Bind(2, last);
  std::vector<std::pair<TimeMs, std::int64_t>> out;
  std::int64_t next = *below + 1;
  int rc;
  while ((rc = (*minutes)->Step()) == SQLITE_ROW) {
    const std::int64_t n = (*minutes)->Int(1);
    if (n <= 0) continue;
    const TimeMs start = std::max(from, (*minutes)->Int(0) * kMsPerMinute);
    if (out.empty() || out.back().first != start) out.emplace_back(start, next);
    next += n;
  }
  (*minutes)->Reset();
  if (rc != SQLITE_DONE) return SqliteStatus(rc, reader.db(), "level counts");
  return out;
}

}  // namespace dashcam::storage
