// How common a query leaf is in one partition, read from a sample of its
// events: the query compiler picks per partition between reading rows in
// key order, which stops early when most events match, and an index
// expression, whose cost grows with the events that match.
//
// Thread-safety: as the reader's (one thread at a time).
#pragma once

#include <optional>

#include "storage/partition.h"
#include "storage/query_ast.h"
#include "storage/status.h"

namespace dashcam::storage {

// The sample: kMatchSampleRuns runs of kMatchSampleRun consecutive events,
// spread evenly over the partition's keys, so that a field common in one
// hour only is not taken for common in the day.
inline constexpr int kMatchSampleRuns = 16;
inline constexpr int kMatchSampleRun = 32;

// The share of the sampled events that `n` matches (row_predicate.h's
// check of the stored document), in [0, 1]; nullopt when the partition
// holds no events. `n` must outlive the call.
Result<std::optional<double>> SampleMatchShare(PartitionReader& reader, const query::Node& n);

}  // namespace dashcam::storage
