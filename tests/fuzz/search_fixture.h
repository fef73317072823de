// A small SQLite store for the query fuzz targets: 40 events of training
// logs (CJK, quotes, FTS5 and SQL syntax in the text, keyword and numeric
// fields) in a temporary directory removed when the fixture is destroyed.
// Search() runs a parsed query against it and aborts, for the fuzzer to
// report, unless the search ends OK, InvalidArgument (a 400) or
// DeadlineExceeded (a 503): an SQL or other storage error would be a 500.
//
// Thread-compatible: one fuzz target's thread uses it.
#pragma once

#include <memory>
#include <string>

#include "storage/log.h"
#include "storage/query_ast.h"
#include "storage/sqlite_store.h"
#include "storage/time_format.h"

namespace dashcam::fuzz {

class SearchFixture {
 public:
  SearchFixture();
  ~SearchFixture();
  SearchFixture(const SearchFixture&) = delete;
  SearchFixture& operator=(const SearchFixture&) = delete;

  void Search(const query::Node& root);

  // The "now" the stored events are around (2026-11-29 12:34:56.789 UTC).
  static constexpr TimeMs kNow = 1795955696789;

 private:
  std::string dir_;
  Log log_ = Log::Null();
  std::unique_ptr<storage::SqliteStore> store_;
};

}  // namespace dashcam::fuzz
