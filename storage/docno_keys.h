// The keys of a numbered day's docnos, stored in blocks (rowid_layout.h).
//
// A re-index numbers a past day's events 1..N in key order; each docno's
// key must be found again. Until version 11 that was a row each,
// `docnos(docno INTEGER PRIMARY KEY, key INTEGER)`: 17 bytes an event of a
// compacted day, for a key whose neighbour is a few milliseconds away.
// Since, the keys go in blocks of kDocnosPerBlock:
//
//   docno_keys(block INTEGER PRIMARY KEY, first INTEGER NOT NULL,
//              keys BLOB NOT NULL)
//
// Block b holds docnos b * 128 + 1 .. b * 128 + 128 (the last block fewer);
// `first` is the key of its first docno; `keys` all of its keys:
//   varint(count), varint(first), then for each next key k after p:
//   varint(2 * (ms(k) - ms(p)) + (seq(k) != 0)), then varint(seq(k)) if
//   that is not 0;
// where ms(k) = k >> 20 and seq(k) = k & (2^20 - 1) (partition.h's keys).
// Varints are LEB128. An event of the bench's logs takes 1-2 bytes.
//
// Statements read a docno's key with the SQL function
// dc_docno_key(keys, docno), joined on its block (DocnoKeyJoin in
// rowid_layout.h), and the first docno at or past a key with
// dc_docno_bound(keys, block, key, after) on the block a binary search over
// `first` found (DocnoBoundSql). Both fail the statement on a block that
// does not decode, or that lacks the docno asked for: a damaged file is
// reported, never misread.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "storage/record.h"
#include "storage/sqlite_db.h"
#include "storage/status.h"

namespace dashcam::storage {

inline constexpr int kDocnoBlockShift = 7;
inline constexpr std::int64_t kDocnosPerBlock = std::int64_t{1} << kDocnoBlockShift;
inline constexpr const char* kDocnoKeysTable = "docno_keys";

// The first docno of block `block` (which holds docno d at (d - 1) >> 7).
inline std::int64_t FirstDocnoOf(std::int64_t block) {
  return block * kDocnosPerBlock + 1;
}

// `keys` (1..kDocnosPerBlock of them, rising) as a block's `keys` blob.
std::string EncodeDocnoBlock(std::span<const EventKey> keys);

// The keys of a `keys` blob, appended to `out`; false when it does not
// decode (truncated, overlong, or more than kDocnosPerBlock keys).
bool DecodeDocnoBlock(std::string_view blob, std::vector<EventKey>& out);

// CREATE TABLE statement for a docno_keys table named `table`.
std::string DocnoKeysTableSql(std::string_view table);

// Registers dc_docno_key and dc_docno_bound (file comment) on `db`.
Status RegisterDocnoKeyFunctions(sqlite3* db);

// Writes the keys of docnos 1, 2, ... into a docno_keys table, a block at
// a time: Add each key in docno order, then Finish. The table must exist.
class DocnoKeysWriter {
 public:
  DocnoKeysWriter(Db& db, std::string_view table);

  Status Add(EventKey key);
  // Writes the last, partial block. Add may not follow.
  Status Finish();

 private:
  Status Flush();

  Db& db_;
  Stmt insert_;
  std::string table_;
  std::vector<EventKey> pending_;
  std::int64_t block_ = 0;
};

}  // namespace dashcam::storage
