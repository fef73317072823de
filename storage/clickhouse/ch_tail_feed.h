// ChTailFeed: which events other dashcam instances have written to the
// cluster since the last look, so that this instance's live tails show
// them too (issue 10: "the live tail works across instances").
//
// Every row carries `ins`, the writing instance's wall clock (ms) when it
// inserted the row's batch. Poll() asks for the rows of the last hour of
// event time whose `ins` is past the high-water mark minus `overlap`, and
// returns the keys it has not seen yet: rows this instance wrote itself
// (NoteOwn) and rows an earlier poll returned are left out. The overlap
// covers inserts that commit after a later one did and clocks that differ
// between instances by less than it; the ids seen within it are kept as
// 64-bit hashes, so memory follows the cluster's insert rate over the
// overlap (16 bytes and the set's overhead per event).
//
// Limitation: an event whose time is more than an hour old when another
// instance writes it is searchable but not shown in this instance's tails.
//
// Thread-safety: all methods may be called from any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "storage/record.h"
#include "storage/status.h"

namespace dashcam::storage::clickhouse {

class ChTailFeed {
 public:
  // Runs SQL on the cluster; the JSONEachRow answer.
  using QueryFn = std::function<Result<std::string>(const std::string& sql)>;

  // `table`: the Distributed table, quoted. Rows inserted before `start_ms`
  // (minus the overlap) are never returned.
  ChTailFeed(std::string table, TimeMs start_ms, TimeMs overlap_ms = 10'000);

  // Rows this instance inserted, at `ins_ms`: Poll() leaves them out.
  void NoteOwn(const std::vector<std::string>& ids, TimeMs ins_ms);

  // The keys of rows new to this instance, by UTC day of event time, each
  // list ascending. `now_ms`: the wall clock.
  Result<std::map<std::int64_t, std::vector<EventKey>>> Poll(const QueryFn& query, TimeMs now_ms);

 private:
  // Forgets ids inserted before the window that polls still look at.
  void PruneLocked();

  const std::string table_;
  const TimeMs overlap_ms_;
  std::mutex mu_;
  TimeMs high_water_ms_;                            // guarded by mu_
  std::unordered_map<std::uint64_t, TimeMs> seen_;  // id hash -> ins; guarded by mu_
};

}  // namespace dashcam::storage::clickhouse
