// What a partition's FTS5 rowids are: event keys, or dense document numbers.
//
// A day is written with rowid = key (partition.h). Keys are ~2^60 and spaced
// by milliseconds << 20, so each posting of the index spends 4-5 bytes on
// its rowid delta. When a past day is re-indexed at compaction
// (partition_reindex.h) its events are numbered 1..N in key order instead,
// "docnos", and table `docno_keys` holds each one's key, in blocks
// (docno_keys.h; before version 11, `docnos(docno INTEGER PRIMARY KEY, key
// INTEGER)`, a row each): the index shrinks by about half and every
// doclist it walks with it (tests/bench/dense_rowids).
//
// Events written to such a day afterwards ("late": a late shipper, a
// document sent again by id) go in with rowid = key as ever, far above N.
// The first write that comes after the numbering marks the day late (the
// writer, in the same transaction), and its readers then take a form
// correct for both kinds of rowid, slower, until the compactor numbers the
// day again.
//
// meta "rowids" holds which: absent (keys), "docnos:N:G:blocks[:nopos]" or
// "late:N:G:blocks[:nopos]", where G counts the numberings of the file.
// Without ":blocks" (a file numbered before version 11) the keys are in
// `docnos`. With ":nopos" (CompactionSteps::drop_positions, since version
// 12) the index has no positions (detail=none: its postings are docnos
// alone, 37.9 of the 99.9 MB the 1M-event bench day's index took).
//
// A statement compiled for one value must not run on another (the same
// rowids would mean other events), so every statement that reads the index
// checks it in its own snapshot: RowidsGuardSql, which fails with
// kRowidsChanged when it differs. The value changes with every numbering,
// so a statement compiled for positions that meets an index without fails
// its guard, or fails in FTS5 first (it reads the MATCH expression before
// the guard runs) in a way IsRowidsChanged knows.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "storage/status.h"

namespace dashcam::storage {

inline constexpr const char* kRowidsMeta = "rowids";
// The message of the SQLite error RowidsGuardSql raises.
inline constexpr std::string_view kRowidsChanged = "partition rowids changed";

struct RowidLayout {
  std::int64_t docnos = 0;      // N; 0: rowids are keys
  std::int64_t generation = 0;  // G: numberings of the file so far
  bool late = false;            // events written since the numbering
  bool blocks = false;          // keys in docno_keys; false: in docnos
  // The index holds positions (detail=full); false on a day numbered with
  // CompactionSteps::drop_positions (detail=none): phrases are then the AND
  // of their terms, checked on the row (fts_query_compiler.h).
  bool positions = true;
  std::string meta;  // meta "rowids" as read; "" when absent

  bool dense() const { return docnos > 0; }
  bool clean() const { return dense() && !late; }
};

// The layout meta "rowids" = `value` says; keys when it is empty or not
// understood (a reader then fails its guard rather than misreading).
RowidLayout ParseRowidLayout(std::string_view value);

// meta "rowids" for a file numbered 1..n for the `generation`th time, its
// keys in docno_keys (`blocks`) or, as before version 11, in docnos; its
// index without positions unless `positions`.
std::string DocnosMeta(std::int64_t n, std::int64_t generation, bool blocks = true,
                       bool positions = true);

// How a statement reads the key of docno fts.rowid on a numbered day:
// `join` brings in what holds it as `d`, and `key` is then the key. With
// `late`, the join is a LEFT JOIN and `key` the rowid itself when that is
// not a docno (a late event's key).
struct DocnoKeySql {
  std::string join;
  std::string key;
};
DocnoKeySql KeyOfDocno(const RowidLayout& layout, bool late);

// A statement reading the key of docno ?1 (no row when there is none),
// without the guard.
std::string KeyOfDocnoSql(const RowidLayout& layout);

// The statement a writer runs in every write transaction: marks a numbered
// file late (a no-op otherwise).
std::string MarkLateSql();

// An SQL condition true when the file's meta "rowids" is still `layout`'s,
// failing the statement with kRowidsChanged otherwise. Needs
// RegisterRowidsGuard on the connection.
std::string RowidsGuardSql(const RowidLayout& layout);
Status RegisterRowidsGuard(sqlite3* db);

// Whether `s` is a statement failing its RowidsGuardSql, or failing as one
// compiled for the rowids before a re-index does before its guard runs.
bool IsRowidsChanged(const Status& s);

// The smallest docno whose key is >= `key_sql` (or > with `after`), as an
// SQL scalar subquery (a binary search: ~15 lookups of blocks, or ~20 of
// `docnos`); N + 1 when none is.
std::string DocnoBoundSql(const RowidLayout& layout, std::string_view key_sql, bool after);

}  // namespace dashcam::storage
