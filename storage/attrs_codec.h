// The text the FTS5 index is fed, and the phrases the query compiler asks it
// for. Both go through the "dashcam" FTS5 tokenizer (fts_tokenizer.h), which
// reads the first byte to know what it is looking at:
//
//   message column / message phrase:  0x01 <text>
//       tokens: TextTokenizer tokens of <text>.
//   attrs column:                      0x02 <record> (0x1E <record>)*
//   field phrase (query):              0x02 <record>
//       record := <name> 0x1F <type> <value>
//       type 's': tokens are <name> 0x1F <t> for each TextTokenizer token t of <value>;
//       type 'n': one token <name> 0x1F '#' <value> (a canonical number, kept
//       whole; the '#' keeps numbers apart from text tokens, so the number 1
//       and the text "-1" or "v1" do not meet).
//       type 'k' (a keyword field's string, IsKeywordField): one token
//       KeywordTerm(name, value) = <name> 0x1F '=' <value>, the value as it
//       is (case kept), cut to kMaxKeywordBytes on a UTF-8 boundary.
//       A record whose name equals the previous record's (an array) is preceded
//       by the token <name> 0x1F 0x1D, so a phrase cannot span two elements.
//       A type 's' value of no tokens ("", "---") gives that token too, so
//       every value of an indexed field leaves some term <name> 0x1F ...
//       (in files whose meta says so: partition.h), and _exists_ can be
//       answered from the index.
//   raw term (query only):             0x03 <term>
//       exactly one token, the bytes of <term> as they are: an index term the
//       query compiler already knows (a vocabulary expansion), e.g.
//       `cudaerror` or `host.name` 0x1F `gpu`. Columns never start with 0x03,
//       so no document text is read this way.
//   raw field term (query only):       0x04 <term>
//       the same, for a term (or prefix) the compiler knows to be a field's,
//       even one without a 0x1F yet (`gpu.`, the start of `gpu.util` 0x1F ...).
//   one-column event (since partition version 10):
//                                      0x05 <n: 4 bytes, little-endian>
//                                      <message: n bytes> <record> (0x1E <record>)*
//       the message's tokens, then the records' tokens, in one column.
//
// The one-column index. FTS5 stores two more bytes in every position list
// of a term in its second column (the column's number), and the fields'
// terms are ~13 of an event's ~30 index entries: a second column cost 26
// bytes an event (bench, 1M events in a day). A partition's index made since
// version 10 has one column, `message`, fed one-column events, and declares
// the tokenizer with the argument `field_lead`: there every field term is
// spelled with a leading 0x1F (kFieldTermLead), so a message prefix (`lo*`)
// can never reach a field's terms (`log.level` 0x1F ...) as the column
// filter `message :` kept it from them in two columns. The lead is the
// tokenizer's alone: it adds it to field terms of documents, field phrases,
// raw field terms and raw terms holding a 0x1F, and tells the vocabulary
// (IndexedTermSink) the terms without it, so the query compiler, the
// vocabulary and number ranges spell terms alike for both layouts.
// fts5vocab lists them with it (UnledTerm takes it off).
//
// Field names and string values never contain 0x1E/0x1F after encoding (they
// are replaced), so a hostile value cannot forge another field's tokens, and
// message tokens never contain 0x1F, so fields and message cannot collide.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "storage/record.h"

namespace dashcam::storage {

inline constexpr char kMessageMarker = '\x01';
inline constexpr char kAttrsMarker = '\x02';
inline constexpr char kRawTermMarker = '\x03';
inline constexpr char kRawFieldTermMarker = '\x04';
inline constexpr char kEventMarker = '\x05';
inline constexpr char kFieldTermLead = '\x1f';
inline constexpr char kArraySeparator = '\x1d';
inline constexpr char kRecordSeparator = '\x1e';
inline constexpr char kNameSeparator = '\x1f';
inline constexpr char kNumberMark = '#';
inline constexpr char kKeywordMark = '=';

// The longest keyword value kept whole in its index term; a longer one is
// cut on a UTF-8 boundary, and only reading the event tells two values with
// the same start apart.
inline constexpr std::size_t kMaxKeywordBytes = 256;
// A cut value keeps at least this many bytes, so an index term whose value
// is shorter holds the whole value.
inline constexpr std::size_t kWholeKeywordBytes = kMaxKeywordBytes - 3;

// Whether a field's values are in the index. Fields under `train.` (the
// numbers a training loop prints, issue 8: loss, lr, step, ...) are not:
// nearly every value is distinct, so each would be an index term of its own
// for a single event. Measured on the bench's training lines (7 such numbers
// per event): indexing them cost 14 of the 40 us of server CPU an event
// takes. Queries on them are answered by reading the stored document (the
// query compiler checks rows, as it does for every numeric range), which is
// also true of documents indexed before this rule.
// Nor is `log.offset`, Filebeat's byte offset of the line in its file: a
// different number in nearly every event, so a term of its own each time,
// which cost 20 of the 425 bytes an event took on disk (bench, 1M events in
// one day) for a field searched, if ever, beside others that narrow it.
bool IsIndexedField(std::string_view name);
// Whether every field at or under `field` (the field itself, and the names
// under it when it names an object: query_ast.h's kExists) is indexed.
bool IndexesEverythingUnder(std::string_view field);

// Whether a field is a keyword: an identifier matched as a whole value,
// byte for byte (query_ast.h), and indexed as one term (type 'k') rather
// than as text tokens. Four are, as in Elasticsearch's Filebeat mapping:
// `run.id` (host + log path made it 4-8 tokens an event, and the detectors'
// budget of issue 8 could not afford them: 10.3% of ingest throughput with
// them, 5.9% without), `_index` and `log.file.path` (4 and 8.4 tokens an
// event on the bench's training logs, a quarter of all the index's
// term-document pairs, for values a search names whole or by a wildcard),
// and `host.name`: `gpu-node-07` was three tokens, two of them in every
// event, and an FTS5 AND over those two dense doclists made the bench's
// four-field query 90 ms where the same with one host term took 20 ms.
bool IsKeywordField(std::string_view name);
// The keyword fields, and the same list comma-separated as a partition's
// meta records it (partition.h): files that recorded another list index
// the fields missing from it as text for their older events.
// attrs_codec.cpp checks at compile time that the two agree.
inline constexpr std::array<std::string_view, 4> kKeywordFieldNames = {"_index", "host.name",
                                                                       "log.file.path", "run.id"};
inline constexpr std::string_view kKeywordFields = "_index,host.name,log.file.path,run.id";
// Whether `list` (a partition's meta, comma-separated) names `field`.
bool ListsField(std::string_view list, std::string_view field);

// Appends the attrs column text for the indexed `fields` plus the `_index`
// meta field.
void EncodeAttrs(const std::vector<Field>& fields, std::string_view index, std::string& out);

// The message column text.
void EncodeMessage(std::string_view message, std::string& out);

// Appends the one-column index's text for an event: its message, then
// what EncodeAttrs gives (a message of 4 GiB or more is not indexed whole).
void EncodeIndexedEvent(std::string_view message, const std::vector<Field>& fields,
                        std::string_view index, std::string& out);

// Query-side phrases, before FTS5 quoting.
std::string EncodeMessagePhrase(std::string_view text);
std::string EncodeFieldPhrase(std::string_view field, std::string_view text);
std::string EncodeFieldNumber(std::string_view field, std::string_view canonical);
// A query-side raw term, and raw field term (see above).
std::string EncodeRawTerm(std::string_view term);
std::string EncodeRawFieldTerm(std::string_view term);
// An index term as the vocabulary spells it: without the one-column
// index's kFieldTermLead (no message token starts with 0x1F).
std::string_view UnledTerm(std::string_view term);
// The index-term prefix of a field's string tokens: <name> 0x1F (the name
// sanitized as when indexing).
std::string FieldTermPrefix(std::string_view field);
// A keyword field's index term for `value` (type 'k' above): 0x1E and 0x1F
// in the value become spaces, as in the attrs column, and a long value is
// cut. KeywordTermPrefix is the part before the value.
std::string KeywordTerm(std::string_view field, std::string_view value);
std::string KeywordTermPrefix(std::string_view field);
// `s` cut to at most `max` bytes without splitting a UTF-8 sequence (backing
// off at most 3 bytes, so invalid UTF-8 is cut at max - 3 at the shortest).
std::string_view CutUtf8(std::string_view s, std::size_t max);

// Canonical number text: integers without fraction or exponent ("12", "-3"),
// other values in shortest round-trip form ("0.043", "1e+20").
std::string CanonicalInteger(std::int64_t v);
std::string CanonicalDouble(double v);
// The canonical form of a number written in a query ("0.50" -> "0.5"), or
// nullopt when `text` is not a plain decimal number.
std::optional<std::string> CanonicalNumberText(std::string_view text);

}  // namespace dashcam::storage
