// Positions: where a day's matches lie in the order its index reads them.
//
// On a day whose rowids are keys a position is the key. On a clean
// numbered day (rowid_layout.h) it is the docno, and a statement that only
// counts matches or reads where they lie reads docnos, mapping to keys only
// what it keeps: each key read through `docnos` is a B-tree lookup. 10 000
// matches of a phrase spread over a 1M-event day: 2.6 ms as docnos, 7 ms as
// keys with a warm cache, 21 ms cold.
//
// Every statement here checks the day's rowids in its own snapshot
// (RowidsGuardSql), so positions and keys mapped by separate statements
// agree: a numbering changes meta "rowids", and a clean day's `docnos` and
// level counts change only with it.
#pragma once

#include <cstdint>
#include <vector>

#include "storage/fts_query_compiler.h"
#include "storage/partition.h"
#include "storage/status.h"

namespace dashcam::storage {

// Whether statements of `q` that read positions read docnos.
inline bool ReadsDocnos(const CompiledQuery& q) {
  return q.fts.has_value() && q.rowids.clean();
}

// The first position whose key is >= `key`, or > `key` with `after`.
Result<std::int64_t> PositionOf(PartitionReader& reader, const CompiledQuery& q, EventKey key,
                                bool after);

// The keys at `positions`, in place.
Status KeysAt(PartitionReader& reader, const CompiledQuery& q, std::vector<EventKey>& positions);

// For a clean numbered day: the first position of each minute from `from`
// on, up to `to`, from the level counts, as (minute start time, or `from`
// in the first, and first position). Minutes without events are left out.
Result<std::vector<std::pair<TimeMs, std::int64_t>>> MinuteStarts(PartitionReader& reader,
                                                                  const CompiledQuery& q,
                                                                  TimeMs from, TimeMs to);

}  // namespace dashcam::storage
