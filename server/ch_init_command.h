// `dashcam ch-init`: creates the ClickHouse backend's database and tables on
// every node of a cluster (storage/clickhouse/ch_schema.h), idempotently.
//
//   dashcam ch-init --storage 'clickhouse://h1:8123,h2:8123/dashcam?cluster=logs'
//
// Prints one line per node (version, shards of the cluster) on stdout and
// exits 0; on an error prints it on stderr and exits 1 (2 for bad
// arguments).
#pragma once

namespace dashcam::server {

// `argv[0]` is "ch-init". Returns the process exit code.
int RunChInitCommand(int argc, char** argv);

}  // namespace dashcam::server
