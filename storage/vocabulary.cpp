#include "storage/vocabulary.h"

#include "storage/attrs_codec.h"
#include "storage/vocabulary_collector.h"

namespace dashcam::storage {
namespace {

constexpr const char* kFtsVocabTable =
    "CREATE VIRTUAL TABLE IF NOT EXISTS temp.dc_fts_vocab USING fts5vocab(main, fts, row)";

Result<Stmt*> RangeStatement(PartitionReader& reader, bool bounded, bool* from_fts) {
  const char* vocab_sql[] = {"SELECT term FROM vocab WHERE term >= ?1",
                             "SELECT term FROM vocab WHERE term >= ?1 AND term < ?2"};
  *from_fts = false;
  auto stmt = reader.Statement(vocab_sql[bounded ? 1 : 0]);
  if (stmt.ok()) return stmt;
  // A partition written before the vocab table existed: FTS5's own (slow)
  // list of its terms.
  if (auto s = SqliteStatus(sqlite3_exec(reader.db(), kFtsVocabTable, nullptr, nullptr, nullptr),
                            reader.db(), "fts5vocab");
      !s.ok()) {
    return s;
  }
  *from_fts = true;
  const char* fts_sql[] = {"SELECT term FROM temp.dc_fts_vocab WHERE term >= ?1",
                           "SELECT term FROM temp.dc_fts_vocab WHERE term >= ?1 AND term < ?2"};
  return reader.Statement(fts_sql[bounded ? 1 : 0]);
}

}  // namespace

Result<std::vector<std::string>> ListTerms(PartitionReader& reader, const TermRange& range,
                                           std::size_t max_terms) {
  bool from_fts = false;
  auto stmt = RangeStatement(reader, !range.limit.empty(), &from_fts);
  if (!stmt.ok()) return stmt.status();
  Stmt& st = **stmt;
  st.Bind(1, range.first);
  if (!range.limit.empty()) st.Bind(2, range.limit);
  std::vector<std::string> out;
  int rc = SQLITE_DONE;
  while (out.size() <= max_terms && (rc = st.Step()) == SQLITE_ROW) {
    const std::string_view term = st.Text(0);
    if (from_fts && !IsExpandableTerm(term)) continue;
    if (range.accept(term)) out.emplace_back(term);
  }
  const bool stopped_early = out.size() > max_terms;
  st.Reset();
  if (!stopped_early && rc != SQLITE_DONE) return SqliteStatus(rc, reader.db(), "list terms");
  return out;
}

Result<FieldNumbersLookup> ReadFieldNumbers(PartitionReader& reader, const std::string& field) {
  FieldNumbersLookup out;
  if (!reader.numbers_recorded()) return out;
  auto stmt = reader.Statement(
      "SELECT lo, hi, plain, strings, integers FROM number_ranges WHERE field = ?1");
  if (!stmt.ok()) return stmt.status();
  Stmt& st = **stmt;
  std::string name = FieldTermPrefix(field);
  name.pop_back();  // the 0x1F
  st.BindStatic(1, name);
  const int rc = st.Step();
  if (rc == SQLITE_ROW) {
    out.numbers =
        FieldNumbers{st.Double(0), st.Double(1), st.Int(2) != 0, st.Int(3) != 0, st.Int(4) != 0};
  }
  st.Reset();
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
    return SqliteStatus(rc, reader.db(), "number_ranges");
  }
  out.recorded = true;
  return out;
}

std::string PrefixLimit(std::string_view prefix) {
  std::string limit(prefix);
  while (!limit.empty() && static_cast<unsigned char>(limit.back()) == 0xFF) limit.pop_back();
  if (!limit.empty())
    limit.back() = static_cast<char>(static_cast<unsigned char>(limit.back()) + 1);
  return limit;
}

}  // namespace dashcam::storage
