#include "storage/vocabulary_collector.h"

#include <algorithm>
#include <string_view>

#include <fmt/format.h>

#include "storage/attrs_codec.h"

namespace dashcam::storage {
namespace {

std::uint64_t HashTerm(std::string_view s) {
  std::uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a
  for (char c : s) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
  return h ^ (h >> 29);
}

}  // namespace

// Linear probing over a power-of-two array, at most half full. A slot keeps
// the hash and, for terms up to kInline bytes, the term itself, so a hit
// on a short term touches one cache line; longer terms live in `long_`.
class VocabularyCollector::TermSet {
 public:
  TermSet() : slots_(2 * kMaxKnown) {}

  // True when `term` was not in the set (it is now).
  bool Insert(std::string_view term, std::uint64_t hash) {
    if (size_ >= kMaxKnown) Clear();
    Slot* slot = Find(term, hash);
    if (slot->used) return false;
    slot->used = true;
    slot->hash = hash;
    slot->length = static_cast<std::uint32_t>(term.size());
    if (term.size() <= kInline) {
      term.copy(slot->bytes, term.size());
    } else {
      slot->index = static_cast<std::uint32_t>(long_.size());
      long_.emplace_back(term);
    }
    ++size_;
    return true;
  }

  void Clear() {
    std::fill(slots_.begin(), slots_.end(), Slot{});
    long_.clear();
    size_ = 0;
  }

 private:
  static constexpr std::size_t kInline = 19;
  struct Slot {
    std::uint64_t hash = 0;
    std::uint32_t length = 0;
    bool used = false;
    union {
      char bytes[kInline];
      std::uint32_t index;
    };
    Slot() : bytes{} {}
  };

  // The slot holding `term`, or the empty slot where it would go.
  Slot* Find(std::string_view term, std::uint64_t hash) {
    const std::size_t mask = slots_.size() - 1;
    for (std::size_t i = hash & mask;; i = (i + 1) & mask) {
      Slot& s = slots_[i];
      if (!s.used) return &s;
      if (s.hash != hash || s.length != term.size()) continue;
      const std::string_view stored = term.size() <= kInline
                                          ? std::string_view(s.bytes, term.size())
                                          : std::string_view(long_[s.index]);
      if (stored == term) return &s;
    }
  }

  std::vector<Slot> slots_;
  std::vector<std::string> long_;
  std::size_t size_ = 0;
};

VocabularyCollector::VocabularyCollector() : known_(std::make_unique<TermSet>()) {}
VocabularyCollector::~VocabularyCollector() = default;

void VocabularyCollector::OnIndexedTerm(std::string_view term) {
  if (known_->Insert(term, HashTerm(term))) pending_.emplace_back(term);
}

// The pending terms cannot be taken out of the open-addressing table one by
// one; forgetting everything is rare (a failed transaction) and safe.
void VocabularyCollector::RolledBack() {
  known_->Clear();
  pending_.clear();
}

bool IsExpandableTerm(std::string_view term) {
  const std::size_t sep = term.find(kNameSeparator);
  if (sep == std::string_view::npos) return true;
  return sep + 1 < term.size() && term[sep + 1] != kNumberMark && term[sep + 1] != kArraySeparator;
}

Status BackfillVocabulary(Db& db, std::string_view fts_table) {
  if (auto s = db.Exec(fmt::format(
          "CREATE VIRTUAL TABLE temp.dc_backfill USING fts5vocab(main, {}, row)", fts_table));
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
      const std::string_view term = UnledTerm(scan->Text(0));
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
