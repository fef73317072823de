// Registers the "dashcam" FTS5 tokenizer on a connection. Every connection
// that writes or queries a partition's FTS table must call this first. The
// formats it reads are documented in attrs_codec.h, and so is its one
// argument, `field_lead` (a table declared with any other cannot be opened).
#pragma once

#include <sqlite3.h>

#include <string_view>

#include "storage/status.h"

namespace dashcam::storage {

inline constexpr const char* kFtsTokenizerName = "dashcam";

// Told every index term a wildcard or fuzzy query may expand to, as the
// document is indexed: each message token, and each token of a string field
// value as its index term (name 0x1F token, without the one-column index's
// lead: attrs_codec.h). Never number terms or array
// markers. Also told each attrs record (attrs_codec.h) before its tokens:
// name, type ('s', 'n' or 'k') and value. Called on the thread running the
// INSERT; must not use the connection.
class IndexedTermSink {
 public:
  virtual ~IndexedTermSink() = default;
  virtual void OnIndexedTerm(std::string_view term) = 0;
  virtual void OnFieldValue(std::string_view /*name*/, char /*type*/, std::string_view /*value*/) {}
};

// `sink` (optional) must outlive the connection.
Status RegisterFtsTokenizer(sqlite3* db, IndexedTermSink* sink = nullptr);

// The connection's FTS5 API, through which tokenizers are registered.
Result<fts5_api*> Fts5Api(sqlite3* db);

}  // namespace dashcam::storage
