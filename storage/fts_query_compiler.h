// Compiles a query AST into what one SQLite partition runs: an FTS5 MATCH
// expression that drives the search (when the query has a part FTS5 can
// answer or narrow), plus an SQL condition over `events AS e` for the rest.
//
// How each leaf runs (semantics: query_ast.h):
//   Term, prefix Term     FTS5 phrase / prefix, exactly.
//   Term on _id           SQL on e.doc_id / e.key.
//   Near                  FTS5 NEAR(...) on the message, exactly.
//   Wildcard, Fuzzy       expanded against the partition's vocabulary
//                         (TermSource) into an OR of index terms: exact for
//                         a one-position pattern and for fuzzy terms; a
//                         longer pattern also needs the row check (below),
//                         with its literal and expanded positions as the FTS5
//                         candidates. More than `max_expansions` terms for
//                         one position is InvalidArgument naming the limit.
//   Regex                 the row check, with the literals every match must
//                         contain (regex_prefilter.h) as FTS5 candidates
//                         when there are any; else every row in the time
//                         range is checked.
//   Range on @timestamp   SQL on the event key.
//   numeric Range         on a field whose numbers the partition records
//                         (TermSource::Numbers): the row check, with number
//                         terms by prefix as FTS5 candidates
//                         (number_ranges.h), or no event when the field's
//                         numbers all lie outside the range.
//   other Range           the row check.
//   Exists                on a field whose every value has an index term
//                         (CompileOptions::field_terms, and no unindexed
//                         field under it) and rare enough in the
//                         partition for how the caller reads
//                         (ExistsIndexShare; TermSource::Events, ShareBelow):
//                         FTS5, the prefixes of its terms, exactly.
//                         Otherwise the row check.
//   NOT Exists            on an indexed field, when no FTS5 expression
//                         drives the query: SQL on the FTS5 prefixes of its
//                         terms, plus the row check of the events holding
//                         none of them unless the terms tell it exactly.
//   Keyword fields        (attrs_codec.h) a Term is the value's one index
//                         term (a prefix Term: a prefix of it), exactly;
//                         Wildcard, Fuzzy and Regex expand against the
//                         vocabulary to an OR of those terms, exactly. Values
//                         too long to be indexed whole, or holding spaces
//                         (which may stand for 0x1E/0x1F), add the row check,
//                         and so do more than `max_expansions` matching values
//                         (no error: a fleet may run that many in a day).
//                         In a partition that may hold them indexed as text
//                         (CompileOptions::indexed_keywords), the candidates
//                         are either form (none known for Fuzzy: every row is
//                         read) and the row check decides.
// The row check is dc_match(dc_source(e.source), dc_name(e.idx), node)
// (row_predicate.h, stored_names.h).
//
// No text of the query is spliced into SQL: every FTS5 expression is a bound
// parameter, and inside it every user string is a double-quoted FTS5 string
// with quotes doubled, so FTS5 operators or column filters written by the
// user are matched as text. The SQL condition contains only fixed SQL and
// parameter placeholders.
//
// Thread-safety: pure function, apart from what `terms` does.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "storage/attrs_codec.h"
#include "storage/query_ast.h"
#include "storage/rowid_layout.h"
#include "storage/status.h"
#include "storage/term_source.h"
#include "storage/time_format.h"

namespace dashcam::storage {

struct CompiledQuery {
  // The driving FTS5 expression (bound as ?1), or nullopt: scan by key.
  std::optional<std::string> fts;
  // SQL boolean condition on `e` (events); "1" when there is nothing more.
  std::string where = "1";
  // Values of the ?N placeholders in `where`, numbered from kFirstWhereParam.
  // A query::Node* is bound as a pointer for dc_match (row_predicate.h); it
  // points into the compiled tree, which must outlive the query.
  std::vector<std::variant<std::string, std::int64_t, const query::Node*>> params;
  // `fts` holds a prefix term. FTS5 then merges the doclists of every term
  // with the prefix for each statement, whatever its rowid range: a second
  // statement over the same partition costs as much again.
  bool fts_prefix = false;
  // `fts` or an index condition of `where` (dc_fts_has) holds a prefix
  // term, so that every statement merges the prefix's doclists once more.
  bool merges_prefix = false;
  // The partition's rowids the SQL was compiled for (CompileOptions).
  RowidLayout rowids = {};
};

// ?1 = fts expression, ?2/?3 = key range, ?4 = limit; `where` uses ?10 on.
inline constexpr int kFirstWhereParam = 10;

struct CompileOptions {
  // Most index terms one wildcard position or fuzzy term may expand to in a
  // partition. Default: 1024 (Lucene's classic clause limit).
  std::size_t max_expansions = 1024;
  // The keyword fields the partition indexed as keywords from its start
  // (its meta, partition.h): a keyword field of this version that is not
  // listed may hold values indexed as text tokens.
  std::string indexed_keywords = std::string(kKeywordFields);
  // Every value of an indexed field has an index term in the partition
  // (its meta field_terms, partition.h), so the terms tell where a field
  // exists.
  bool field_terms = false;
  // How the caller reads the matches, which decides between the index and
  // rows for Exists (ExistsIndexShare): the time range [from, to), and how
  // many matches one statement reads before it stops (a page and a capped
  // count; 0: every match of the range). The compiled query is run only on
  // events in [from, to): a @timestamp range holding all of it is true of
  // each of them, and is left out of the SQL.
  TimeMs from = kMinEventTime;
  TimeMs to = kMaxEventTime;
  std::size_t stops_after = 10'100;
  // What the partition's index rowids are (its meta rowids): how an FTS5
  // sub-select of `where` reads a match's key.
  RowidLayout rowids = {};
};

// Narrows [from, to) to the @timestamp ranges every match of `root` lies
// in: `root` itself, or a conjunct of a root AND (a child, or a child of a
// child AND, ...). Elasticsearch clients
// (Grafana, Kibana) put their time picker's range there, as a filter, rather
// than in the request's own range; narrowed, the request reads only the
// days and keys of that range, and the range itself (CompileOptions: from,
// to) costs no row check. A bound that cannot be read narrows nothing (the
// compiler names it).
void NarrowToTimestampRanges(const query::Node& root, TimeMs& from, TimeMs& to);

// Reading a field's index terms costs about 1/kRowToTermCost of checking a
// row, per event that has the field (1M bench events in a day: FTS5 merged
// the 8 terms of gpu_id, 982k events, in 76 ms and the 27k of gpu_mem_mb,
// 735k events, in 157 ms; checking a row takes ~0.8 us).
inline constexpr double kRowToTermCost = 4;

// The share of a partition's `events` under which Exists on a field reads
// the index (its terms of every event with the field, at each statement:
// FTS5 merges a prefix's doclists whatever the range) rather than rows
// (those `in_range` of the caller's range, or as many as it takes to find
// `stops_after` matches; 0: no stop). 0 when the partition is empty; 1 or
// more: whatever the share.
double ExistsIndexShare(double events, double in_range, std::size_t stops_after);

// Errors: InvalidArgument for malformed @timestamp range bounds and for
// expansions past the limit; what `terms` returns. `terms` may be null: an
// empty vocabulary. The result refers to `root` (dc_match pointers): keep
// `root` alive while it is used.
Result<CompiledQuery> CompileFtsQuery(const query::Node& root, TermSource* terms = nullptr,
                                      const CompileOptions& options = {});

// The FTS5 string literal for `text`: "..." with inner quotes doubled.
std::string QuoteFtsString(std::string_view text);

// Whether an expression built here holds a prefix term (`"cud" *`).
bool HasPrefixTerm(std::string_view fts);

// An FTS5 expression no event matches (a term no index holds).
std::string NeverMatchingFts();

}  // namespace dashcam::storage
