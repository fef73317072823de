// CheckPartitionFile: whether a file in the data directory is a partition
// dashcam can open, checked at startup before anything writes to it. Cheap:
// it reads the SQLite header and the schema, not the whole file (a file of
// tens of GiB must not delay startup); damage deeper inside surfaces as a
// Corruption error of the query that reads it.
//
// Thread-safety: a pure function of the file.
#pragma once

#include <string>

#include "storage/status.h"

namespace dashcam::storage {

// Ok for a partition (of any schema version up to the current one) or an
// empty file. Corruption, naming what is wrong, for: not an SQLite database
// (garbage), a file shorter than its header says (truncated; unless a
// non-empty -wal file lies beside it, as after a crash during a checkpoint,
// which SQLite recovers from the WAL), an SQLite
// database without dashcam's schema. InvalidArgument for a partition written
// by a newer dashcam (not damaged: it must not be quarantined). IoError when
// the file cannot be read.
Status CheckPartitionFile(const std::string& path);

}  // namespace dashcam::storage
