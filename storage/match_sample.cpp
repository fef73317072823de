#include "storage/match_sample.h"

#include <fmt/format.h>

#include "storage/row_predicate.h"

namespace dashcam::storage {

namespace {

Result<std::optional<EventKey>> EndKey(PartitionReader& reader, const char* which) {
  auto stmt = reader.Statement(fmt::format("SELECT {}(key) FROM events", which));
  if (!stmt.ok()) return stmt.status();
  const int rc = (*stmt)->Step();
  std::optional<EventKey> key;
  if (rc == SQLITE_ROW && !(*stmt)->IsNull(0)) key = (*stmt)->Int(0);
  (*stmt)->Reset();
  if (rc != SQLITE_ROW) return SqliteStatus(rc, reader.db(), "sample");
  return key;
}

}  // namespace

Result<std::optional<double>> SampleMatchShare(PartitionReader& reader, const query::Node& n) {
  auto lo = EndKey(reader, "min");
  if (!lo.ok()) return lo.status();
  auto hi = EndKey(reader, "max");
  if (!hi.ok()) return hi.status();
  if (!*lo || !*hi) return std::optional<double>();
  auto stmt = reader.Statement(fmt::format(
      "SELECT count(*), total(dc_match(dc_source(e.source), dc_name(e.idx), ?2)) "
      "FROM (SELECT source, idx FROM events WHERE key >= ?1 ORDER BY key LIMIT {}) AS e",
      kMatchSampleRun));
  if (!stmt.ok()) return stmt.status();
  const double span = static_cast<double>(**hi - **lo);
  std::int64_t seen = 0;
  double matched = 0;
  for (int i = 0; i < kMatchSampleRuns; ++i) {
    Stmt& s = **stmt;
    s.Bind(1, **lo + static_cast<EventKey>(span * i / kMatchSampleRuns));
    s.BindPointer(2, &n, kNodePointerType);
    const int rc = s.Step();
    if (rc == SQLITE_ROW) {
      seen += s.Int(0);
      matched += s.Double(1);
    }
    s.Reset();
    if (rc != SQLITE_ROW) return SqliteStatus(rc, reader.db(), "sample");
  }
  if (seen == 0) return std::optional<double>();
  return std::optional<double>(matched / static_cast<double>(seen));
}

}  // namespace dashcam::storage
