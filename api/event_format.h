// EventFormatter: writes stored events in the formats of export and tail.
//
//   ndjson  one JSON object per line. Without columns, the hit as search
//           answers it: {"_id":..,"_index":..,"@timestamp":..,"_source":{..}}.
//           With columns, a flat object of those columns only, e.g.
//           {"@timestamp":"2026-11-29T10:23:15.123Z","host.name":"gpu-node-07"}
//           (a column the event lacks is null; a multi-valued field an array).
//   csv     RFC 4180: a header row of the column names, then one row per
//           event, CRLF line ends; a cell holding a comma, a double quote, CR
//           or LF is quoted, with quotes doubled. A multi-valued field's
//           values are joined with ", "; a missing one is an empty cell.
//   text    one line per event for terminals: `timestamp level host message`,
//           `-` for a missing level or host; host is host.name, else
//           host.hostname, else a string `host`; without a message, the
//           stored document. Line breaks, tabs and other control characters
//           in values are written as \n, \r, \t, \xNN (a backslash as \\) so
//           an event is always one line and cannot drive the terminal.
//   sse     a Server-Sent Events message per event: `id: <event key>` and
//           `data: <the ndjson hit>`, then a blank line.
//
// Columns (csv, ndjson): `@timestamp` (the event time, RFC 3339 UTC),
// `_id`, `_index`, `level`, `message`, `_source` (the stored document), or
// any field by its dotted name (`host.name`, `gpu_id`). csv's default is
// @timestamp, level, host.name, message.
//
// Thread-safety: none (a formatter owns a JSON parser); one per thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "storage/field_extractor.h"
#include "storage/record.h"

namespace dashcam::api {

enum class EventFormat { kNdjson, kCsv, kText, kSse };

// "ndjson", "csv", "text", "sse"; nullopt for anything else.
std::optional<EventFormat> ParseEventFormat(std::string_view name);

// The column names of a `fields=` value: comma-separated, blanks trimmed,
// empty names dropped. Nullopt (with `error` set) for more than 100 columns,
// a name over 256 bytes or a name given twice (so that one event's output is
// bounded by a small multiple of its size).
std::optional<std::vector<std::string>> ParseColumns(std::string_view fields, std::string& error);

class EventFormatter {
 public:
  // `columns` empty: the format's default. Columns are ignored by text/sse.
  EventFormatter(EventFormat format, std::vector<std::string> columns);

  // What comes before the first event: csv's header row; else empty.
  std::string Preamble() const;
  // Appends `ev` in the format to `out`.
  void Append(const storage::StoredEvent& ev, std::string& out);

 private:
  void AppendHit(const storage::StoredEvent& ev, std::string& out);
  void AppendTimestamp(TimeMs t, std::string& out);
  void AppendColumnsJson(const storage::StoredEvent& ev, std::string& out);
  void AppendCsvRow(const storage::StoredEvent& ev, std::string& out);
  void AppendTextLine(const storage::StoredEvent& ev, std::string& out);
  // Reads the fields the format shows from the event's document, and its
  // message (DocumentReader's rule: `message`, else `msg`, else `log`);
  // none of them if it is not valid JSON, which a stored document always is.
  void ReadDocument(const storage::StoredEvent& ev);
  // The values read of extracted name `i` (kMessage... or a column's).
  const std::vector<storage::FieldExtractor::Value>& Values(std::size_t i) const;
  // The host read for the text line; empty when it has none.
  std::string Host() const;

  const EventFormat format_;
  const std::vector<std::string> columns_;
  // What the extractor reads: `message`, `msg` and `log`, then the field
  // columns' names (or, for text, the host's), each once.
  std::vector<std::string> names_;
  // Per column, its index in names_ (for the event's own columns, such as
  // _id or level, which are not read from the document: unused).
  std::vector<std::size_t> column_names_;
  storage::FieldExtractor extractor_;
  bool read_ = false;                        // the last ReadDocument read the document
  std::optional<std::string_view> message_;  // into extractor_, until the next read
  TimeMs cached_second_ = -1;                // AppendTimestamp's cache
  std::string cached_prefix_;
};

}  // namespace dashcam::api
