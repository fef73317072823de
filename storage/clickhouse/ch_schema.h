// The ClickHouse backend's tables, created on every node of the cluster
// (`dashcam ch-init`; idempotent, so it may run on every start):
//
//   <db>.events_local   ReplacingMergeTree, PARTITION BY toYYYYMMDD(ts)
//                       (one partition per UTC day, so retention drops
//                       days), ORDER BY (ts, ms, id): time-ordered scans, and
//                       rows with the same time and id are one event.
//   <db>.events         Distributed over the cluster, sharded by
//                       sipHash64(id).
//
// Columns: ts DateTime('UTC') (seconds, days cut in UTC whatever the
// server's time zone; 18.16 has no DateTime64) and ms UInt16
// (the milliseconds), seq UInt32 (ch_row.h's ChEventKey), ins UInt64 (the
// writing instance's wall clock at insert, ms: ch_tail_feed.h), id String (the event's unique id:
// the client's _id, else one dashcam assigns), idx String (the index name), level String, message
// String (the document's message), the search columns of ch_row.h (has_msg, tokens, ftokens and the
// name/value arrays of the fields), grp String and grp_end UInt8 (the event's
// run and whether it closes it: Record::group, the runs rollup), and source
// String (the document as stored). Tables created before grp and grp_end
// get them (ALTER TABLE ... ADD COLUMN) when init runs.
//
// Duplicates: a batch retried after an unclear failure may insert an event
// again. Sharding by id puts both copies on the same shard, where the
// ReplacingMergeTree merges them into one; reads until then collapse them
// (LIMIT 1 BY id). So dedupe is on write, eventually, and on read, always.
//
// Thread-safety: a pure function of its options (and the cluster's state).
#pragma once

#include <string>
#include <vector>

#include "storage/clickhouse/ch_options.h"
#include "storage/status.h"

namespace dashcam::storage::clickhouse {

inline constexpr const char* kLocalTable = "events_local";
inline constexpr const char* kDistributedTable = "events";

struct ChNodeReport {
  ChHost host;
  std::string version;  // the server's version()
  int shards = 0;       // shards of the cluster as this node declares it
};

// Creates the database and both tables on every host, checking first that
// each declares the cluster. Errors: Unavailable when a node cannot be
// reached; InvalidArgument when a node does not know the cluster or
// declares it with another number of shards than the first; Internal for
// other ClickHouse errors. Nodes before the failing one keep their tables.
Result<std::vector<ChNodeReport>> InitClickHouseSchema(const ChOptions& options);

}  // namespace dashcam::storage::clickhouse
