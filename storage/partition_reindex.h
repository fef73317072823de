// Re-indexing a past day's partition from its stored documents.
//
// An event's index entry is what its writer fed FTS5: EncodeIndexedEvent of
// the Record's message, fields and index name (PartitionWriter; before
// version 10, EncodeMessage and EncodeAttrs in two columns), and a Record's
// message and fields are what
// DocumentReader reads from its source (record.h). So the index can be made
// again from the `events` table alone, under today's rules: a term for every
// value of an indexed field (meta "field_terms") and today's keyword fields
// (meta "keyword_fields"). A file written by an older dashcam
// (NeedsReindex) then gets today's query plans: `_exists_` from the index,
// keyword values as one term without a row check. The entries that replaced
// events left stale are gone as well. The new index always has one column
// (attrs_codec.h), so a day of an older version's two columns is re-indexed
// too.
//
// A day whose keys lie far above any count (every day but 1970-01-01's) is
// also numbered: its index's rowids become docnos 1..N in key order, with
// table `docno_keys` holding their keys (docno_keys.h, rowid_layout.h). That
// halves the index, so NeedsReindex asks it of every past day that is not
// numbered, that has been written to since (late), or whose keys are in the
// `docnos` table of a file numbered before version 11.
//
// A day of at least CompactionSteps::day_dictionary_events events also has
// its documents encoded anew (source_codec.h): a dictionary trained on
// documents spread over the whole day (stored in `dicts` first, or the one
// an earlier re-index stored), at a higher zstd level than the writer's.
// The events are copied into table `events_reindex` in the same steps as
// they are indexed, with their documents so encoded, and the swap renames
// it to `events`; meta "sources" says it was done. ~18 bytes less a bench
// event, for ~11 s of compression a million events.
//
// The new index is built beside the old one, in table `fts_reindex`: steps of
// a bounded number of events in key order, each its own transaction; then
// FTS5 merge steps into one segment; then its terms go into `vocab`. The
// writer and the readers go on meanwhile (WAL). Last, one transaction swaps
// it in: drops `fts` (and `docnos` or `docno_keys`, `events`), renames the new tables, and records
// the rules and meta "rowids" in meta. It does so only if no other connection has written to the
// file since the build began (PRAGMA data_version), since a late event could lack an entry;
// otherwise the new index is dropped, and the day is re-indexed the next time it is compacted.
//
// A reader that compiled its query against the old meta stays right on the
// new index as far as its rules go, only slower: a keyword field the old
// meta does not list is matched as a keyword term or as text, then on the
// row, and `_exists_` without field_terms on the rows. Not as far as its
// rowids go: those statements fail their guard (rowid_layout.h), and the
// store runs the request once more. A connection reads the new meta once
// reopened (PartitionFiles::generation), and meta "rowids" at every request.
#pragma once

#include <cstdint>
#include <string_view>

#include "storage/compaction_types.h"
#include "storage/partition_compaction.h"
#include "storage/source_codec.h"
#include "storage/sqlite_db.h"
#include "storage/status.h"

namespace dashcam::storage {

// The tables a re-index builds its index and its docnos in, until the swap.
inline constexpr const char* kReindexTable = "fts_reindex";
inline constexpr const char* kReindexDocnosTable = "docnos_reindex";
inline constexpr const char* kReindexEventsTable = "events_reindex";
// Meta key: "day" when every document was encoded anew with the day's
// dictionary at the last re-index, "kept" when they were left as they were
// (too few events, or documents stored uncompressed).
inline constexpr const char* kSourcesMeta = "sources";

// Whether `db`'s meta says its index was made under older rules than
// today's, or its rowids are not (or no longer all) docnos, or its index
// has positions where `positions` is false or none where it is true
// (CompactionSteps::drop_positions), or its documents are not encoded anew
// (meta "sources"), while its events can be numbered (rowid_layout.h).
Result<bool> NeedsReindex(Db& db, bool positions = true);

// Creates FTS5 table `table` (CreateFtsTable) and indexes every event of
// `db` in it, in key order, `events_per_step` events a transaction, then
// merges it into one segment (`merge_pages` a step). `pace` as compaction's;
// false stops with Unavailable, leaving the table as far as it got. Adds to
// `*indexed` the events indexed. `db` must be open for compaction
// (OpenForCompaction: it reads documents with dc_source and dc_name). With `docnos` (a table name)
// the rowids are 1..N in key order, and table `docnos` is made with each one's key, in blocks
// (docno_keys.h) or, with `docnos_table`, a row each as before version 11; else they are
// the keys. Without `positions` the new index has none (detail=none). With `recoder`, every event
// is also copied into table kReindexEventsTable (made here), its document encoded by `recoder`.
Status BuildIndexFromDocuments(Db& db, std::string_view table, const CompactionSteps& steps,
                               const CompactionPace& pace, std::uint64_t* indexed,
                               std::string_view docnos = "",
                               DayDictionaryEncoder* recoder = nullptr, bool docnos_table = false,
                               bool positions = true);

struct ReindexResult {
  std::uint64_t events = 0;   // indexed anew
  bool swapped = false;       // false: another connection wrote meanwhile, nothing changed
  bool numbered = false;      // the rowids are now docnos
  bool recoded = false;       // the documents are now in the day-dictionary form
  std::uint64_t encoded = 0;  // documents compressed anew for it (not already so)
};

// Re-indexes `db` (open for compaction: OpenForCompaction) as the file
// comment says. Dropping a table left by an
// interrupted re-index comes first. Errors: Unavailable when `pace` stopped
// it (the new table stays until the next attempt drops it); what SQLite or
// a document that cannot be read gave.
Result<ReindexResult> ReindexPartition(Db& db, const CompactionSteps& steps,
                                       const CompactionPace& pace);

}  // namespace dashcam::storage
