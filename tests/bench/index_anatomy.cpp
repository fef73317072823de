// index_anatomy: where a day partition's bytes go, read from the file itself
// (no server). For one partition file it prints
//   - the size of each table and index (SQLite's dbstat), per event;
//   - the FTS5 index's term-document pairs per event, by field, and the
//     terms that occur in a single document (unique numbers and the like);
//   - the bytes per event that the doclists spend on rowid deltas (varints)
//     with the keys as stored (time << 20 | seq), and what they would be
//     with dense rowids (1, 2, 3, ... in key order) or a 10-bit sequence.
//
//   build/tests/bench/index_anatomy DATA/2026-11-29.db
//
// Keep the server stopped (or the file copied): the file is read as it is.
//
//   build/tests/bench/index_anatomy --compact COPY.db
//
// instead compacts the file as dashcam does a past day in the background
// (storage/partition_compaction.h: FTS5 merge steps, then incremental-vacuum
// steps), without the pauses between steps, and prints the time it took, the
// longest step (what a late event could wait), and the file size and segment
// count before and after. It changes the file: give it a copy.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "storage/attrs_codec.h"
#include "storage/fts_tokenizer.h"
#include "storage/partition_compaction.h"
#include "storage/sqlite_db.h"

namespace {

using dashcam::storage::Db;

// The length of SQLite's (and FTS5's) varint of `v`.
int VarintBytes(unsigned long long v) {
  int n = 1;
  while (v >= 128 && n < 9) {
    v >>= 7;
    ++n;
  }
  return n;
}

struct FieldTerms {
  long long terms = 0, single_doc_terms = 0, pairs = 0;
};

// The field an index term belongs to: its name before 0x1F (after the
// one-column index's lead), else the message ("(message)").
std::string FieldOf(const std::string& led_term) {
  const std::string_view term = dashcam::storage::UnledTerm(led_term);
  const auto sep = term.find('\x1f');
  if (sep == std::string::npos) return "(message)";
  std::string field(term.substr(0, sep));
  if (sep + 1 < term.size() && term[sep + 1] == '#') field += " (number)";
  return field;
}

// Opens the partition file with dashcam's tokenizer registered (FTS5 needs
// it to open the index); says why not on stderr.
bool OpenPartition(const char* path, int flags, Db& db) {
  if (auto s = db.Open(path, flags); !s.ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    return false;
  }
  dashcam::storage::RegisterFtsTokenizer(db.get());
  return true;
}

int Run(const char* path) {
  Db db;
  if (!OpenPartition(path, SQLITE_OPEN_READONLY, db)) return 1;
  std::vector<long long> keys;
  {
    auto st = db.Prepare("SELECT key FROM events ORDER BY key");
    if (!st.ok()) return 1;
    while (st->Step() == SQLITE_ROW) keys.push_back(st->Int(0));
  }
  const double events = static_cast<double>(keys.size());
  if (keys.empty()) {
    std::printf("no events\n");
    return 0;
  }
  std::printf("events %.0f\n\n", events);

  if (auto st = db.Prepare("SELECT name, sum(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC");
      st.ok()) {
    std::printf("%-24s %12s\n", "table or index", "bytes/event");
    while (st->Step() == SQLITE_ROW) {
      std::printf("%-24s %12.1f\n", std::string(st->Text(0)).c_str(),
                  static_cast<double>(st->Int(1)) / events);
    }
    std::printf("\n");
  }

  if (!db.Exec("CREATE VIRTUAL TABLE temp.instances USING fts5vocab(main, fts, instance)").ok()) {
    return 1;
  }
  auto st = db.Prepare("SELECT term, doc FROM temp.instances");
  if (!st.ok()) return 1;
  std::map<std::string, FieldTerms> fields;
  std::string term;
  long long last_key = -1, last_rank = 0, last_key10 = 0, docs_of_term = 0;
  unsigned long long stored = 0, dense = 0, seq10 = 0, pairs = 0;
  FieldTerms* field = nullptr;
  auto end_term = [&] {
    if (field && docs_of_term == 1) ++field->single_doc_terms;
  };
  while (st->Step() == SQLITE_ROW) {
    const std::string_view t = st->Text(0);
    const long long key = st->Int(1);
    if (t != term) {
      end_term();
      term = t;
      field = &fields[FieldOf(term)];
      ++field->terms;
      last_key = -1;
      docs_of_term = 0;
    }
    if (key == last_key) continue;  // another position in the same document
    const long long rank = std::lower_bound(keys.begin(), keys.end(), key) - keys.begin() + 1;
    const long long key10 = ((key >> 20) << 10) | (key & 1023);
    const bool first = last_key < 0;
    stored += VarintBytes(first ? key : key - last_key);
    dense += VarintBytes(first ? rank : rank - last_rank);
    seq10 += VarintBytes(first ? key10 : key10 - last_key10);
    last_key = key;
    last_rank = rank;
    last_key10 = key10;
    ++docs_of_term;
    ++field->pairs;
    ++pairs;
  }
  end_term();

  std::vector<std::pair<std::string, FieldTerms>> by_pairs(fields.begin(), fields.end());
  std::sort(by_pairs.begin(), by_pairs.end(),
            [](const auto& a, const auto& b) { return a.second.pairs > b.second.pairs; });
  std::printf("%-32s %14s %10s %16s\n", "field", "pairs/event", "terms", "single-doc terms");
  for (const auto& [name, f] : by_pairs) {
    if (f.pairs < events / 100) continue;  // under 1 pair in 100 events
    std::printf("%-32s %14.2f %10lld %16lld\n", name.c_str(), f.pairs / events, f.terms,
                f.single_doc_terms);
  }
  std::printf("\nterm-document pairs per event   %.1f\n", pairs / events);
  std::printf(
      "rowid varint bytes per event:   stored keys %.1f, dense rowids %.1f, "
      "10-bit sequence %.1f\n",
      stored / events, dense / events, seq10 / events);
  return 0;
}

// The file's size with its WAL, and the FTS index's segment count.
void PrintState(Db& db, const char* path, const char* when) {
  std::error_code ec;
  auto size = [&](const std::string& p) {
    const auto n = std::filesystem::file_size(p, ec);
    return ec ? 0ull : static_cast<unsigned long long>(n);
  };
  long long segments = -1;
  if (auto st = db.Prepare("SELECT count(DISTINCT segid) FROM fts_idx");
      st.ok() && st->Step() == SQLITE_ROW) {
    segments = st->Int(0);
  }
  std::printf("%-16s file %llu bytes, wal %llu bytes, %lld FTS segments\n", when, size(path),
              size(std::string(path) + "-wal"), segments);
}

int Compact(const char* path) {
  Db db;
  if (!OpenPartition(path, SQLITE_OPEN_READWRITE, db)) return 1;
  PrintState(db, path, "before");
  using Clock = std::chrono::steady_clock;
  Clock::duration longest{};
  int steps = 0;
  const auto t0 = Clock::now();
  auto r = dashcam::storage::CompactPartition(db, {}, [&](Clock::duration step) {
    longest = std::max(longest, step);
    ++steps;
    return true;
  });
  const std::chrono::duration<double> took = Clock::now() - t0;
  if (!r.ok()) {
    std::fprintf(stderr, "compaction: %s\n", r.status().ToString().c_str());
    return 1;
  }
  std::printf(
      "compaction %.2f s: %d merge steps, %d vacuum steps, longest step %.0f ms, "
      "%s\n",
      took.count(), r->merge_steps, r->vacuum_steps,
      std::chrono::duration<double, std::milli>(longest).count(),
      r->returns_pages ? "pages returned" : "auto_vacuum off: pages kept");
  PrintState(db, path, "after");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "--compact") return Compact(argv[2]);
  if (argc != 2) {
    std::fprintf(stderr, "usage: index_anatomy PARTITION.db | index_anatomy --compact COPY.db\n");
    return 2;
  }
  return Run(argv[1]);
}
