// dense_rowids: what dense FTS5 rowids would buy a day partition, measured
// rather than estimated. It rebuilds the partition's FTS5 index twice, from
// the index itself, into two scratch databases that differ only in rowids:
//
//   keyed.db  rowid = the event's key, as stored ((time_ms << 20) | seq)
//   dense.db  rowid = the event's rank in key order (1, 2, 3, ...)
//
// and, to see what positions cost, the dense one twice more without them:
// dense_column.db (FTS5 detail=column) and dense_none.db (detail=none,
// which answers term queries but not phrases; its times are in the table);
// and once with every term in its first column (dense_one_column.db), to
// see what the second column's markers cost.
//
// Both get exactly the terms and positions of the original (read through
// fts5vocab 'instance', replayed by a tokenizer that emits them as they
// were), are written in key order, and are merged into one segment
// ('optimize'), as a compacted past day is. It then prints each index's
// bytes per event and, for every query given, the median time of FTS5
// alone (no events table, no documents) over both copies and the original:
// the count of matches, and the newest 100 (ORDER BY rowid DESC). Last, what
// mapping the dense copy's rowids back to keys costs (a docnos table, as a
// dense partition would keep): its bytes per event, and the newest 100 with
// their keys and a per-minute histogram, against the keyed copy.
//
//   build/tests/bench/dense_rowids DATA/2026-11-29.db SCRATCH_DIR
//       'host.name=gpu-node-07 user=bob log.level=ERROR gpu_id=3' 'user=bob' ...
//
// A query is terms ANDed together, each `field=value`: the index terms the
// field's value may have (a keyword term, a text token, a number) that the
// partition holds, ORed; or a bare word, a message token. Read-only on the
// partition; SCRATCH_DIR must not hold any of the five files yet.
#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "storage/ascii.h"
#include "storage/attrs_codec.h"
#include "storage/fts_query_compiler.h"
#include "storage/fts_tokenizer.h"
#include "storage/sqlite_db.h"

namespace {

using dashcam::storage::Db;

// One token of the original index: document, column, position, term.
struct Instance {
  long long doc;
  unsigned term;
  unsigned col;
  unsigned offset;
};

struct IndexDump {
  std::vector<std::string> terms;  // by id
  std::unordered_map<std::string, unsigned> ids;
  std::vector<Instance> instances;  // sorted by doc, col, offset
  std::vector<long long> keys;      // distinct docs, ascending
};

bool Fail(const dashcam::Status& s) {
  std::fprintf(stderr, "%s\n", s.ToString().c_str());
  return false;
}

bool Dump(Db& db, IndexDump& out) {
  if (auto s = db.Exec("CREATE VIRTUAL TABLE temp.inst USING fts5vocab(main, fts, instance)");
      !s.ok()) {
    return Fail(s);
  }
  auto st = db.Prepare("SELECT term, doc, col, offset FROM temp.inst");
  if (!st.ok()) return Fail(st.status());
  std::string last;
  unsigned id = 0;
  while (st->Step() == SQLITE_ROW) {
    const std::string_view term = st->Text(0);
    if (out.terms.empty() || term != last) {
      last = term;
      id = static_cast<unsigned>(out.terms.size());
      out.terms.emplace_back(term);
      out.ids.emplace(last, id);
    }
    const std::string_view col = st->Text(2);
    out.instances.push_back(
        Instance{st->Int(1), id, col == "message" ? 0u : 1u, static_cast<unsigned>(st->Int(3))});
  }
  std::sort(out.instances.begin(), out.instances.end(), [](const Instance& a, const Instance& b) {
    if (a.doc != b.doc) return a.doc < b.doc;
    if (a.col != b.col) return a.col < b.col;
    return a.offset < b.offset;
  });
  for (const Instance& i : out.instances) {
    if (out.keys.empty() || out.keys.back() != i.doc) out.keys.push_back(i.doc);
  }
  return true;
}

// The replay tokenizer's text: per token a flag byte ('c' when it shares
// the previous token's position, else 'n'), two length bytes (0x80 | 7 bits
// each: never NUL) and the term's bytes.
void AppendToken(std::string& text, std::string_view term, bool colocated) {
  text += colocated ? 'c' : 'n';
  text += static_cast<char>(0x80 | (term.size() >> 7));
  text += static_cast<char>(0x80 | (term.size() & 0x7f));
  text += term;
}

int ReplayCreate(void*, const char**, int, Fts5Tokenizer** out) {
  *out = reinterpret_cast<Fts5Tokenizer*>(1);
  return SQLITE_OK;
}
void ReplayDelete(Fts5Tokenizer*) {}
int ReplayTokenize(Fts5Tokenizer*, void* ctx, int, const char* text, int n,
                   int (*emit)(void*, int, const char*, int, int, int)) {
  for (int at = 0; at + 3 <= n;) {
    const bool colocated = text[at] == 'c';
    const int len = ((text[at + 1] & 0x7f) << 7) | (text[at + 2] & 0x7f);
    if (at + 3 + len > n) return SQLITE_ERROR;
    const int rc =
        emit(ctx, colocated ? FTS5_TOKEN_COLOCATED : 0, text + at + 3, len, at, at + 3 + len);
    if (rc != SQLITE_OK) return rc;
    at += 3 + len;
  }
  return SQLITE_OK;
}

bool RegisterReplay(Db& db) {
  auto api = dashcam::storage::Fts5Api(db.get());
  if (!api.ok()) return Fail(api.status());
  static fts5_tokenizer replay{ReplayCreate, ReplayDelete, ReplayTokenize};
  return (*api)->xCreateTokenizer(*api, "replay", nullptr, &replay, nullptr) == SQLITE_OK;
}

// Writes the dump into a new database at `path`, document i (in key order)
// as rowid rowid_of(i), then merges the index into one segment. `detail` is
// FTS5's: full (positions, as dashcam's index), column or none. With
// `one_column` every token goes into the first column, the message's
// first, then the fields' after them.
template <class RowidOf>
bool Rebuild(const IndexDump& dump, const std::string& path, const char* detail, RowidOf rowid_of,
             bool one_column = false) {
  Db db;
  if (auto s = db.Open(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE); !s.ok()) return Fail(s);
  if (!RegisterReplay(db)) return false;
  const std::string schema = std::string(
                                 "PRAGMA journal_mode=WAL; PRAGMA synchronous=OFF;"
                                 "CREATE VIRTUAL TABLE fts USING fts5(message, attrs, content='', "
                                 "columnsize=0, tokenize='replay', detail=") +
                             detail +
                             ");"
                             "INSERT INTO fts(fts, rank) VALUES('automerge', 16);"
                             "INSERT INTO fts(fts, rank) VALUES('hashsize', 16777216);"
                             "BEGIN";
  if (auto s = db.Exec(schema); !s.ok()) {
    return Fail(s);
  }
  auto ins = db.Prepare("INSERT INTO fts(rowid, message, attrs) VALUES(?1, ?2, ?3)");
  if (!ins.ok()) return Fail(ins.status());
  std::string cols[2];
  std::size_t doc_index = 0;
  for (std::size_t i = 0; i < dump.instances.size();) {
    const long long doc = dump.instances[i].doc;
    cols[0].clear();
    cols[1].clear();
    long long last_col = -1, last_offset = -1;
    for (; i < dump.instances.size() && dump.instances[i].doc == doc; ++i) {
      const Instance& in = dump.instances[i];
      const bool colocated = in.col == last_col && in.offset == last_offset;
      AppendToken(cols[one_column ? 0 : in.col], dump.terms[in.term], colocated);
      last_col = in.col;
      last_offset = in.offset;
    }
    ins->Bind(1, static_cast<std::int64_t>(rowid_of(doc_index++, doc)));
    ins->Bind(2, std::string_view(cols[0]));
    ins->Bind(3, std::string_view(cols[1]));
    if (ins->Step() != SQLITE_DONE) return Fail(db.Check(SQLITE_ERROR, "insert"));
    ins->Reset();
    if (doc_index % 20000 == 0) {
      if (auto s = db.Exec("COMMIT; BEGIN"); !s.ok()) return Fail(s);
    }
  }
  if (auto s = db.Exec("COMMIT; INSERT INTO fts(fts) VALUES('optimize'); VACUUM"); !s.ok()) {
    return Fail(s);
  }
  return true;
}

// Adds to the dense copy the map a dense partition would need from its
// rowids back to the events' keys: docnos(docno INTEGER PRIMARY KEY, key).
bool MapDocnos(const std::string& path, const IndexDump& dump) {
  Db db;
  if (auto s = db.Open(path, SQLITE_OPEN_READWRITE); !s.ok()) return Fail(s);
  if (auto s =
          db.Exec("CREATE TABLE docnos(docno INTEGER PRIMARY KEY, key INTEGER NOT NULL); BEGIN");
      !s.ok()) {
    return Fail(s);
  }
  auto ins = db.Prepare("INSERT INTO docnos VALUES(?1, ?2)");
  if (!ins.ok()) return Fail(ins.status());
  for (std::size_t i = 0; i < dump.keys.size(); ++i) {
    ins->Bind(1, static_cast<std::int64_t>(i + 1));
    ins->Bind(2, static_cast<std::int64_t>(dump.keys[i]));
    if (ins->Step() != SQLITE_DONE) return Fail(db.Check(SQLITE_ERROR, "insert docno"));
    ins->Reset();
  }
  if (auto s = db.Exec("COMMIT; VACUUM"); !s.ok()) return Fail(s);
  return true;
}

double TableBytesPerEvent(Db& db, const char* table, double events) {
  auto st = db.Prepare("SELECT sum(pgsize) FROM dbstat WHERE name = ?1");
  if (!st.ok()) return -1;
  st->Bind(1, std::string_view(table));
  return st->Step() == SQLITE_ROW ? static_cast<double>(st->Int(0)) / events : -1;
}

double FtsBytesPerEvent(Db& db, double events) {
  auto st = db.Prepare("SELECT sum(pgsize) FROM dbstat WHERE name IN ('fts_data', 'fts_idx')");
  return st.ok() && st->Step() == SQLITE_ROW ? static_cast<double>(st->Int(0)) / events : -1;
}

// An FTS5 string holding `term` as one token of the replay tokenizer, or
// (for the original) as a raw term of dashcam's.
std::string Quoted(std::string_view term, bool replay) {
  std::string text;
  if (replay) {
    AppendToken(text, term, false);
  } else {
    // The index's tokenizer leads a field term again where the table does.
    text = dashcam::storage::EncodeRawTerm(dashcam::storage::UnledTerm(term));
  }
  return dashcam::storage::QuoteFtsString(text);
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = dashcam::storage::AsciiLower(c);
  return out;
}

// The index terms a query word may stand for, of those the index holds.
std::vector<std::string> TermsOf(std::string_view word, const IndexDump& dump) {
  const auto eq = word.find('=');
  std::vector<std::string> candidates;
  if (eq == std::string_view::npos) {
    candidates = {Lower(word)};
  } else {
    const std::string field(word.substr(0, eq)), value(word.substr(eq + 1));
    const std::string prefix = field + dashcam::storage::kNameSeparator;
    candidates = {dashcam::storage::KeywordTerm(field, value), prefix + Lower(value),
                  prefix + dashcam::storage::kNumberMark + value};
    // The same, as a one-column index spells them.
    for (std::size_t i = 0, n = candidates.size(); i < n; ++i) {
      candidates.push_back(dashcam::storage::kFieldTermLead + candidates[i]);
    }
  }
  std::vector<std::string> held;
  for (std::string& c : candidates) {
    if (dump.ids.count(c)) held.push_back(std::move(c));
  }
  return held;
}

// The FTS5 expression of `query` for one index; empty if a word has no term.
std::string Expression(std::string_view query, const IndexDump& dump, bool replay) {
  std::string expr;
  std::size_t at = 0;
  while (at < query.size()) {
    const std::size_t end = std::min(query.find(' ', at), query.size());
    const std::string_view word = query.substr(at, end - at);
    at = end + 1;
    if (word.empty()) continue;
    const auto terms = TermsOf(word, dump);
    if (terms.empty()) return {};
    std::string any;
    for (const std::string& t : terms) any += (any.empty() ? "" : " OR ") + Quoted(t, replay);
    expr += (expr.empty() ? "(" : " AND (") + any + ")";
  }
  return expr;
}

// Median milliseconds of `runs` executions of `sql` bound with `expr`, and
// what the last one answered: the value of its first column (`value`), else
// how many rows.
double MedianMs(Db& db, const std::string& sql, const std::string& expr, int runs, bool value,
                long long& result) {
  auto st = db.Prepare(sql);
  if (!st.ok()) {
    Fail(st.status());
    return -1;
  }
  std::vector<double> ms;
  for (int r = 0; r < runs; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    st->Bind(1, std::string_view(expr));
    long long rows = 0;
    while (st->Step() == SQLITE_ROW) result = value ? st->Int(0) : ++rows;
    st->Reset();
    ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

int Run(const std::string& partition, const std::string& scratch,
        const std::vector<std::string>& queries) {
  Db original;
  if (auto s = original.Open(partition, SQLITE_OPEN_READONLY); !s.ok()) return Fail(s), 1;
  dashcam::storage::RegisterFtsTokenizer(original.get());
  IndexDump dump;
  if (!Dump(original, dump)) return 1;
  const double events = static_cast<double>(dump.keys.size());
  std::printf("events %.0f, term instances %zu, terms %zu\n", events, dump.instances.size(),
              dump.terms.size());

  const auto as_key = [](std::size_t, long long key) { return key; };
  const auto as_rank = [](std::size_t i, long long) { return static_cast<long long>(i) + 1; };
  const std::string keyed_path = scratch + "/keyed.db", dense_path = scratch + "/dense.db",
                    column_path = scratch + "/dense_column.db",
                    none_path = scratch + "/dense_none.db",
                    one_column_path = scratch + "/dense_one_column.db";
  if (!Rebuild(dump, keyed_path, "full", as_key) || !Rebuild(dump, dense_path, "full", as_rank) ||
      !Rebuild(dump, column_path, "column", as_rank) ||
      !Rebuild(dump, none_path, "none", as_rank) ||
      !Rebuild(dump, one_column_path, "full", as_rank, /*one_column=*/true)) {
    return 1;
  }
  if (!MapDocnos(dense_path, dump)) return 1;
  Db keyed, dense, column, none, one_column;
  for (auto [db, path] : {std::pair{&keyed, &keyed_path}, std::pair{&column, &column_path},
                          std::pair{&none, &none_path}, std::pair{&one_column, &one_column_path}}) {
    if (!db->Open(*path, SQLITE_OPEN_READONLY).ok() || !RegisterReplay(*db)) return 1;
  }
  if (!dense.Open(dense_path, SQLITE_OPEN_READONLY).ok() || !RegisterReplay(dense)) return 1;
  std::printf(
      "FTS5 index bytes per event: original %.1f; one segment: keyed %.1f, dense %.1f, dense "
      "without positions (detail=column) %.1f, dense without columns either (detail=none) "
      "%.1f\n\n",
      FtsBytesPerEvent(original, events), FtsBytesPerEvent(keyed, events),
      FtsBytesPerEvent(dense, events), FtsBytesPerEvent(column, events),
      FtsBytesPerEvent(none, events));
  // A term of a second column pays a column marker (2 bytes) in every
  // posting; one column would not (its field terms kept apart from message
  // terms by their own first byte, a byte per distinct term).
  std::printf("dense, every term in one column (message then fields): %.1f\n\n",
              FtsBytesPerEvent(one_column, events));

  std::printf("docno -> key map: %.1f bytes per event\n\n",
              TableBytesPerEvent(dense, "docnos", events));

  constexpr int kRuns = 15;
  std::printf("%-56s %-8s %10s %10s %10s %10s %8s\n", "query (FTS5 alone, median ms of 15)", "what",
              "original", "keyed", "dense", "none", "matches");
  for (const std::string& q : queries) {
    const std::string replay_expr = Expression(q, dump, true);
    const std::string raw_expr = Expression(q, dump, false);
    if (replay_expr.empty()) {
      std::printf("%-56s no such term\n", q.c_str());
      continue;
    }
    for (const bool count : {true, false}) {
      const std::string sql = count ? "SELECT count(*) FROM fts WHERE fts MATCH ?1"
                                    : "SELECT rowid FROM fts WHERE fts MATCH ?1 "
                                      "ORDER BY rowid DESC LIMIT 100";
      long long n_orig = 0, n_keyed = 0, n_dense = 0, n_none = 0;
      const double a = MedianMs(original, sql, raw_expr, kRuns, count, n_orig);
      const double b = MedianMs(keyed, sql, replay_expr, kRuns, count, n_keyed);
      const double c = MedianMs(dense, sql, replay_expr, kRuns, count, n_dense);
      const double d = MedianMs(none, sql, replay_expr, kRuns, count, n_none);
      const bool agree = n_orig == n_keyed && n_keyed == n_dense && n_dense == n_none;
      std::printf("%-56s %-8s %10.2f %10.2f %10.2f %10.2f %8lld%s\n", q.c_str(),
                  count ? "count" : "top 100", a, b, c, d, n_dense,
                  agree ? "" : "  (copies disagree!)");
    }
  }

  // What the keys cost a dense copy: its rowids must be mapped back for the
  // hits' keys and for a histogram's buckets (the keyed copy reads both off
  // its rowids).
  std::printf("\n%-56s %-10s %10s %10s %8s\n", "query, keys through docnos (median ms of 15)",
              "what", "keyed", "dense", "rows");
  struct Shape {
    const char* what;
    const char* keyed;
    const char* dense;
    bool value;
  };
  const Shape shapes[] = {
      {"top 100", "SELECT rowid FROM fts WHERE fts MATCH ?1 ORDER BY rowid DESC LIMIT 100",
       "SELECT d.key FROM fts CROSS JOIN docnos AS d ON d.docno = fts.rowid WHERE fts MATCH ?1 "
       "ORDER BY fts.rowid DESC LIMIT 100",
       false},
      {"minutes", "SELECT (rowid >> 20) / 60000, count(*) FROM fts WHERE fts MATCH ?1 GROUP BY 1",
       "SELECT (d.key >> 20) / 60000, count(*) FROM fts CROSS JOIN docnos AS d "
       "ON d.docno = fts.rowid WHERE fts MATCH ?1 GROUP BY 1",
       false},
      // The rowids alone, as a caller that buckets them itself would read them.
      {"rowids", "SELECT rowid FROM fts WHERE fts MATCH ?1",
       "SELECT d.key FROM fts CROSS JOIN docnos AS d ON d.docno = fts.rowid WHERE fts MATCH ?1",
       false},
  };
  for (const std::string& q : queries) {
    const std::string expr = Expression(q, dump, true);
    if (expr.empty()) continue;
    for (const Shape& shape : shapes) {
      long long n_keyed = 0, n_dense = 0;
      const double a = MedianMs(keyed, shape.keyed, expr, kRuns, shape.value, n_keyed);
      const double b = MedianMs(dense, shape.dense, expr, kRuns, shape.value, n_dense);
      std::printf("%-56s %-10s %10.2f %10.2f %8lld%s\n", q.c_str(), shape.what, a, b, n_dense,
                  n_keyed == n_dense ? "" : "  (copies disagree!)");
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: dense_rowids PARTITION.db SCRATCH_DIR [QUERY ...]\n");
    return 2;
  }
  std::vector<std::string> queries(argv + 3, argv + argc);
  return Run(argv[1], argv[2], queries);
}
