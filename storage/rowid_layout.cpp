#include "storage/rowid_layout.h"

#include <charconv>

#include <fmt/format.h>

#include "storage/docno_keys.h"
#include "storage/sqlite_db.h"

namespace dashcam::storage {
namespace {

constexpr std::string_view kDocnos = "docnos:";
constexpr std::string_view kLate = "late:";
constexpr std::string_view kBlocks = ":blocks";
constexpr std::string_view kNoPositions = ":nopos";

// "N:G" -> N and G; false when malformed.
bool ParseCounts(std::string_view s, std::int64_t& n, std::int64_t& g) {
  const auto colon = s.find(':');
  if (colon == std::string_view::npos) return false;
  const char* end = s.data() + colon;
  auto r1 = std::from_chars(s.data(), end, n);
  auto r2 = std::from_chars(end + 1, s.data() + s.size(), g);
  return r1.ec == std::errc() && r1.ptr == end && r2.ec == std::errc() &&
         r2.ptr == s.data() + s.size() && n > 0 && g > 0;
}

// "N:G[:blocks][:nopos]" -> N, G, whether the keys are in blocks and
// whether the index has positions.
bool ParseNumbering(std::string_view s, RowidLayout& layout) {
  layout.positions = !s.ends_with(kNoPositions);
  if (!layout.positions) s.remove_suffix(kNoPositions.size());
  layout.blocks = s.ends_with(kBlocks);
  if (layout.blocks) s.remove_suffix(kBlocks.size());
  return ParseCounts(s, layout.docnos, layout.generation);
}

// dc_rowids(current, expected): 1 when equal (NULL reads as ''), else the
// statement fails with kRowidsChanged.
void RowidsGuard(sqlite3_context* ctx, int, sqlite3_value** argv) {
  if (ValueText(argv[0]) == ValueText(argv[1])) {
    sqlite3_result_int(ctx, 1);
  } else {
    sqlite3_result_error(ctx, kRowidsChanged.data(), static_cast<int>(kRowidsChanged.size()));
  }
}

}  // namespace

RowidLayout ParseRowidLayout(std::string_view value) {
  RowidLayout parsed;
  parsed.meta = value;
  parsed.late = value.starts_with(kLate);
  const std::string_view prefix = parsed.late ? kLate : kDocnos;
  if (value.starts_with(prefix) && ParseNumbering(value.substr(prefix.size()), parsed)) {
    return parsed;
  }
  RowidLayout keys;
  keys.meta = value;
  return keys;
}

std::string DocnosMeta(std::int64_t n, std::int64_t generation, bool blocks, bool positions) {
  return fmt::format("{}{}:{}{}{}", kDocnos, n, generation, blocks ? kBlocks : "",
                     positions ? "" : kNoPositions);
}

DocnoKeySql KeyOfDocno(const RowidLayout& layout, bool late) {
  const char* join = late ? "LEFT JOIN" : "CROSS JOIN";
  if (!layout.blocks) {
    return {fmt::format("{} docnos AS d ON d.docno = fts.rowid", join),
            late ? "coalesce(d.key, fts.rowid)" : "d.key"};
  }
  // The block's rowid: a lookup, as the docno's was in `docnos`.
  std::string on = fmt::format("{} {} AS d ON d.block = (fts.rowid - 1) >> {}", join,
                               kDocnoKeysTable, kDocnoBlockShift);
  if (!late) return {std::move(on), "dc_docno_key(d.keys, fts.rowid)"};
  return {fmt::format("{} AND fts.rowid <= {}", on, layout.docnos),
          "coalesce(dc_docno_key(d.keys, fts.rowid), fts.rowid)"};
}

std::string KeyOfDocnoSql(const RowidLayout& layout) {
  if (!layout.blocks) return "SELECT key FROM docnos WHERE docno = ?1";
  return fmt::format("SELECT dc_docno_key(keys, ?1) FROM {} WHERE block = (?1 - 1) >> {}",
                     kDocnoKeysTable, kDocnoBlockShift);
}

std::string MarkLateSql() {
  return fmt::format(
      "UPDATE meta SET value = '{}' || substr(value, {}) WHERE key = '{}' AND value LIKE '{}%'",
      kLate, kDocnos.size() + 1, kRowidsMeta, kDocnos);
}

std::string RowidsGuardSql(const RowidLayout& layout) {
  // The meta value is digits and a prefix of ours, or a file's own text:
  // quoted as an SQL string either way. A scalar subquery: SQLite evaluates
  // it once per statement, where the function call alone would be evaluated
  // for every row.
  return fmt::format("(SELECT dc_rowids((SELECT value FROM meta WHERE key = '{}'), {}))",
                     kRowidsMeta, SqlStringLiteral(layout.meta));
}

Status RegisterRowidsGuard(sqlite3* db) {
  const int rc = sqlite3_create_function_v2(db, "dc_rowids", 2, SQLITE_UTF8 | SQLITE_DETERMINISTIC,
                                            nullptr, &RowidsGuard, nullptr, nullptr, nullptr);
  return rc == SQLITE_OK ? Status::Ok() : Status::Internal("cannot register dc_rowids");
}

bool IsRowidsChanged(const Status& s) {
  if (s.ok()) return false;
  const std::string_view m = s.message();
  // What a statement compiled before a re-index's swap meets before its
  // guard runs: FTS5 reads the MATCH expression first, and an index
  // without positions refuses a phrase; a numbering before version 11
  // had table `docnos`, which the next numbering drops.
  return m.find(kRowidsChanged) != std::string_view::npos ||
         m.find("queries are not supported (detail") != std::string_view::npos ||
         m.find("no such table: docnos") != std::string_view::npos;
}

std::string DocnoBoundSql(const RowidLayout& layout, std::string_view key_sql, bool after) {
  const char* below = after ? "<=" : "<";
  if (layout.blocks) {
    // The blocks whose first key is below, counted by halving [lo, hi);
    // the last of them holds the bound, or docno 1 is it when none is.
    return fmt::format(
        "(WITH RECURSIVE b(lo, hi) AS (SELECT 0, {0} UNION ALL "
        "SELECT CASE WHEN m.first {1} {2} THEN (b.lo + b.hi) / 2 + 1 ELSE b.lo END, "
        "CASE WHEN m.first {1} {2} THEN b.hi ELSE (b.lo + b.hi) / 2 END "
        "FROM b JOIN {3} AS m ON m.block = (b.lo + b.hi) / 2 WHERE b.lo < b.hi) "
        "SELECT coalesce((SELECT dc_docno_bound(k.keys, k.block, {2}, {4}) FROM {3} AS k "
        "WHERE k.block = (SELECT max(lo) FROM b) - 1), 1))",
        (layout.docnos + kDocnosPerBlock - 1) / kDocnosPerBlock, below, key_sql, kDocnoKeysTable,
        after ? 1 : 0);
  }
  // lower_bound over docnos 1..N: [lo, hi) halves until empty.
  return fmt::format(
      "(WITH RECURSIVE b(lo, hi) AS (SELECT 1, {0} UNION ALL "
      "SELECT CASE WHEN m.key {1} {2} THEN (b.lo + b.hi) / 2 + 1 ELSE b.lo END, "
      "CASE WHEN m.key {1} {2} THEN b.hi ELSE (b.lo + b.hi) / 2 END "
      "FROM b JOIN docnos AS m ON m.docno = (b.lo + b.hi) / 2 WHERE b.lo < b.hi) "
      "SELECT max(lo) FROM b)",
      layout.docnos + 1, below, key_sql);
}

}  // namespace dashcam::storage
