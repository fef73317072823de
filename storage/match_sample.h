// How common a query leaf is in one partition, read from a sample of its
// events, and how many events the partition and a time range hold: the
// query compiler picks per partition between reading rows in key order,
// which stops early when most events match, and an index expression, whose
// cost grows with the events that match (fts_query_compiler.h).
//
// Thread-safety: as the reader's (one thread at a time).
#pragma once

#include <optional>

#include "storage/partition.h"
#include "storage/query_ast.h"
#include "storage/status.h"
#include "storage/term_source.h"

namespace dashcam::storage {

// The sample: kMatchSampleRuns runs of kMatchSampleRun consecutive events,
// spread evenly over the partition's keys, so that a field common in one
// hour only is not taken for common in the day.
inline constexpr int kMatchSampleRuns = 16;
inline constexpr int kMatchSampleRun = 32;

// Whether `n` matches (row_predicate.h's check of the stored document)
// fewer than `share` of the sampled events; nullopt when the partition
// holds no events. Reads the runs until the answer is certain: a common
// leaf is told apart from a rare one in a few runs. `n` must outlive the
// call.
Result<std::optional<bool>> SampleShareBelow(PartitionReader& reader, const query::Node& n,
                                             double share);

// The partition's events, all and in [from, to) by the minute (level_minutes:
// a range's partial first and last minutes count whole).
Result<std::optional<TermSource::EventCounts>> CountEvents(PartitionReader& reader, TimeMs from,
                                                           TimeMs to);

}  // namespace dashcam::storage
