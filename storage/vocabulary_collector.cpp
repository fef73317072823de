#include "storage/vocabulary_collector.h"

#include "storage/attrs_codec.h"

namespace dashcam::storage {

void VocabularyCollector::OnIndexedTerm(std::string_view term) {
  if (known_.find(term) != known_.end()) return;
  if (known_.size() >= kMaxKnown) known_.clear();
  known_.emplace(term);
  pending_.emplace_back(term);
}

void VocabularyCollector::RolledBack() {
  for (const std::string& term : pending_) known_.erase(term);
  pending_.clear();
}

bool IsExpandableTerm(std::string_view term) {
  const std::size_t sep = term.find(kNameSeparator);
  if (sep == std::string_view::npos) return true;
  return sep + 1 < term.size() && term[sep + 1] != kNumberMark && term[sep + 1] != kArraySeparator;
}

Status BackfillVocabulary(Db& db) {
  if (auto s = db.Exec("CREATE VIRTUAL TABLE temp.dc_backfill USING fts5vocab(main, fts, row)");
      !s.ok()) {
    return s;
  }
  Status status;
  {
    auto insert = db.Prepare("INSERT OR IGNORE INTO vocab(term) VALUES(?1)");
    auto scan = db.Prepare("SELECT term FROM temp.dc_backfill");
    if (!insert.ok()) return insert.status();
    if (!scan.ok()) return scan.status();
    int rc = SQLITE_DONE;
    while (status.ok() && (rc = scan->Step()) == SQLITE_ROW) {
      const std::string_view term = scan->Text(0);
      if (!IsExpandableTerm(term)) continue;
      insert->Bind(1, term);
      const int irc = insert->Step();
      insert->Reset();
      if (irc != SQLITE_DONE) status = db.Check(irc, "backfill vocab");
    }
    if (status.ok() && rc != SQLITE_DONE) status = db.Check(rc, "scan fts5vocab");
  }
  const Status dropped = db.Exec("DROP TABLE temp.dc_backfill");
  return status.ok() ? dropped : status;
}

}  // namespace dashcam::storage
