#include "storage/match_sample.h"

#include <fmt/format.h>

#include "storage/row_predicate.h"

namespace dashcam::storage {

Result<std::optional<bool>> SampleShareBelow(PartitionReader& reader, const query::Node& n,
                                             double share) {
  auto lo = EndKey(reader, KeyEnd::kOldest);
  if (!lo.ok()) return lo.status();
  auto hi = EndKey(reader, KeyEnd::kNewest);
  if (!hi.ok()) return hi.status();
  if (!*lo || !*hi) return std::optional<bool>();
  auto stmt = reader.Statement(fmt::format(
      "SELECT count(*), total(dc_match(dc_source(e.source), dc_name(e.idx), ?2)) "
      "FROM (SELECT source, idx FROM events WHERE key >= ?1 ORDER BY key LIMIT {}) AS e",
      kMatchSampleRun));
  if (!stmt.ok()) return stmt.status();
  // The answer of the whole sample, once the runs read so far decide it.
  const double most = share * kMatchSampleRuns * kMatchSampleRun;
  const double span = static_cast<double>(**hi - **lo);
  double matched = 0, seen = 0;
  for (int i = 0; i < kMatchSampleRuns; ++i) {
    Stmt& s = **stmt;
    s.Bind(1, **lo + static_cast<EventKey>(span * i / kMatchSampleRuns));
    s.BindPointer(2, &n, kNodePointerType);
    const int rc = s.Step();
    if (rc == SQLITE_ROW) {
      seen += static_cast<double>(s.Int(0));
      matched += s.Double(1);
    }
    s.Reset();
    if (rc != SQLITE_ROW) return SqliteStatus(rc, reader.db(), "sample");
    if (matched >= most) return std::optional<bool>(false);  // seen <= the whole sample
  }
  return std::optional<bool>(matched < share * seen);
}

Result<std::optional<TermSource::EventCounts>> CountEvents(PartitionReader& reader, TimeMs from,
                                                           TimeMs to) {
  auto stmt = reader.Statement(
      "SELECT coalesce(sum(n), 0), coalesce(sum(n) FILTER (WHERE minute BETWEEN ?1 AND ?2), 0) "
      "FROM level_minutes");
  if (!stmt.ok()) return stmt.status();
  Stmt& s = **stmt;
  s.Bind(1, from / kMsPerMinute);
  s.Bind(2, (to - 1) / kMsPerMinute);
  const int rc = s.Step();
  std::optional<TermSource::EventCounts> counts;
  if (rc == SQLITE_ROW) {
    counts = TermSource::EventCounts{static_cast<std::uint64_t>(s.Int(0)),
                                     static_cast<std::uint64_t>(s.Int(1))};
  }
  s.Reset();
  if (rc != SQLITE_ROW) return SqliteStatus(rc, reader.db(), "event counts");
  return counts;
}

}  // namespace dashcam::storage
