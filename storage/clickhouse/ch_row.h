// The row the ClickHouse backend stores for an event, written as one
// JSONEachRow line, and the encoding of its search columns, which the query
// compiler (ch_query_compiler.h) matches against. The values come from the
// stored document by DocumentReader's rules, so that ClickHouse sees the
// same fields as a reader of the document (query_ast.h's "values of F").
//
// Search columns (ch_schema.h declares them):
//   tokens       the message's tokens (TextTokenizer) as " t1 t2 ... tn ":
//                tokens hold no space, so a phrase is the substring
//                " t1 t2 " and a token prefix " t1 t2" (position()).
//   ftokens      the tokens of every string value of every other field
//                (keyword fields excepted; _index included), one segment
//                per value: 0x1E then " F<US>t1 F<US>t2 ... " where F is
//                ChTokenName(field) and <US> 0x1F. A phrase cannot cross
//                two values: each segment starts with 0x1E, not a space.
//   has_msg      1 when the document has a message.
//   str_names/str_values     string and boolean values ("true"/"false"),
//                            _index included (non-empty only), and the
//                            message as kChMessageName (ranges only);
//   num_names/num_values     number values;
//   snum_names/snum_values   string values that parse whole as a double
//                            (std::from_chars; not NaN), for numeric ranges.
// The fields are the document's (DocumentReader), then those of
// Record::fields that the document lacks (ingest derives some, such as
// run.id beside a client's own `run` object, without writing them into it).
//
// Thread-safety: functions are pure; a ChRowEncoder is used by one thread
// at a time.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "storage/document_reader.h"
#include "storage/record.h"
#include "storage/status.h"

namespace dashcam::storage::clickhouse {

inline constexpr char kChValueMark = '\x1e';
inline constexpr char kChNameMark = '\x1f';

// A field name as it prefixes its tokens in `ftokens`: bytes that delimit
// the encoding (space, 0x1E, 0x1F) become 0x1D, so no name can forge
// another's tokens. Names differing only there share tokens (documented
// limitation: such names do not occur in logs).
std::string ChTokenName(std::string_view field);

// The EventKey of an event stored at `ts_ms` with `seq` (ch_store.h): the
// time in ms, then the low 20 bits of the row's `seq`, which the writer
// counts up from a random start, so events of one millisecond get distinct
// keys (as the SQLite store's sequence does).
inline constexpr std::uint32_t kChSeqMask = 0xFFFFF;
inline EventKey ChEventKey(TimeMs ts_ms, std::uint32_t seq) {
  return (static_cast<EventKey>(ts_ms) << 20) | (seq & kChSeqMask);
}
// The same key as a ClickHouse expression over a row.
inline constexpr const char* kChEventKey =
    "bitOr(bitShiftLeft(toInt64(toUInt64(ts) * 1000 + ms), 20), toInt64(seq))";

// The name the message goes by in the value arrays, for ranges on it. A
// document field of that name (0x1D, then "message") would be seen by those
// ranges too; logs do not have one.
inline constexpr const char* kChMessageName = "\x1dmessage";

class ChRowEncoder {
 public:
  // Appends the JSONEachRow line (with its '\n') of `record`, stored under
  // `id` with `seq`, inserted at `ins_ms`. Errors: InvalidArgument when the source is not a JSON
  // object or the time is past what a ClickHouse DateTime holds (2106-02-07).
  Status Append(const Record& record, std::string_view id, std::uint32_t seq, TimeMs ins_ms,
                std::string& out);

 private:
  DocumentReader reader_;
  DocumentView view_;
  std::string tokens_, ftokens_;
};

}  // namespace dashcam::storage::clickhouse
