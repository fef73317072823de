// dc_fts_has(key, fts, desc_sql, asc_sql, all_sql): whether event `key` is
// among the matches of the FTS5 expression `fts` in this partition: what
// `key IN (all_sql)` says with ?1 = fts, without building the whole set
// first.
//
// SQLite runs such an IN by reading every match of the day into a temporary
// b-tree before the first row, so `NOT log.level:INFO` paid for three
// quarters of a day's events to show a hundred others. The query compiler
// writes dc_fts_has instead wherever a condition asks whether the index
// matches an event (a NOT, an OR beside a row check, a row check's
// candidates), and scans visit keys in order (newest first for hits, oldest
// first for a count): the function walks the matches in step, through
// `desc_sql` (the keys <= ?2, descending) or `asc_sql` (>= ?2, ascending),
// each with ?1 = fts, so it reads only as far as the scan goes; a key far
// ahead (a scan of the few rows a rare term picked) is sought, not stepped
// to. A key out of step seeks again; after a few such seeks, or when the
// seek SQL is empty (rowid order is not key order), it reads all_sql once
// into a sorted array and answers by binary search. An expression with a
// prefix term (`"cud" *`) makes FTS5 merge every doclist of the prefix at
// each seek, so it is walked once, newest first from the top, as far down
// as the lowest key asked, keeping the keys it passed.
//
// State lives in the call's auxiliary data on argument `fts`, a bound
// parameter (constant for one run of a statement), and goes with it. The
// nested statements run on the caller's connection, in its transaction, so
// they read the same snapshot; their errors (an interrupt at the deadline
// among them) become the caller's.
//
// Thread-safety: per connection, as SQLite functions are.
#pragma once

#include <sqlite3.h>

#include "storage/status.h"

namespace dashcam::storage {

// Registers dc_fts_has on `db`.
Status RegisterFtsMembership(sqlite3* db);

}  // namespace dashcam::storage
