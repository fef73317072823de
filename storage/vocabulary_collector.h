// The writer's half of a partition's vocabulary (vocabulary.h): the
// distinct index terms wildcard and fuzzy queries expand to, kept in
//
//   vocab(term TEXT PRIMARY KEY) WITHOUT ROWID
//
// and filled in the same transaction as the events. VocabularyCollector
// learns the terms of a transaction from the tokenizer (fts_tokenizer.h)
// and says which the table may lack.
//
// Thread-safety: a collector belongs to its writer's connection and thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "storage/fts_tokenizer.h"
#include "storage/sqlite_db.h"
#include "storage/status.h"

namespace dashcam::storage {

class VocabularyCollector final : public IndexedTermSink {
 public:
  // Terms remembered as already stored, so that each is inserted about
  // once. At the cap the memory is dropped and relearned (inserts are OR
  // IGNORE), bounding it to ~5 MiB per open partition.
  static constexpr std::size_t kMaxKnown = 64 * 1024;

  VocabularyCollector();
  ~VocabularyCollector() override;

  // Called for every indexed token (~40 per event), so it must be cheap:
  // one probe of an open-addressing table whose slots hold short terms
  // inline (measured: a std::unordered_set<std::string> here cost 25% more
  // writer CPU per event; this table about 5%).
  void OnIndexedTerm(std::string_view term) override;

  // Terms first seen since the last Committed/RolledBack, in order.
  const std::vector<std::string>& pending() const { return pending_; }
  // The pending terms are stored (the transaction committed).
  void Committed() { pending_.clear(); }
  // The transaction rolled back: the pending terms were not stored.
  void RolledBack();

 private:
  class TermSet;  // the known terms
  std::unique_ptr<TermSet> known_;
  std::vector<std::string> pending_;
};

// Part of the partition schema.
inline constexpr const char* kVocabularySchemaSql =
    "CREATE TABLE IF NOT EXISTS vocab(term TEXT PRIMARY KEY) WITHOUT ROWID;";

// False for index terms the vocabulary leaves out: numbers (name 0x1F '#'
// ...) and array markers (name 0x1F 0x1D).
bool IsExpandableTerm(std::string_view term);

// Fills the vocab table of a partition written before it existed, from the
// FTS index `fts_table` (one fts5vocab scan: seconds per million events,
// once; a re-index adds the terms of its new index the same way), spelled
// without the one-column index's lead (UnledTerm). Runs inside the caller's
// transaction.
Status BackfillVocabulary(Db& db, std::string_view fts_table = "fts");

}  // namespace dashcam::storage
