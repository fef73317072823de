// Fuzz target: the query language, end to end below HTTP — untrusted text
// from any user is parsed (both ways the API parses: the search box and an
// Elasticsearch query_string), compiled for SQLite and run against a real
// partition of a few events, with a vocabulary so that wildcards and fuzzy
// terms expand (search_fixture.h). Checks: no crash; a parse error has a
// position within the text; a search ends OK, InvalidArgument (a 400) or
// DeadlineExceeded (a 503) — never an SQL or other storage error, which
// would be a 500.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <variant>

#include "api/query_parser.h"
#include "tests/fuzz/search_fixture.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static dashcam::fuzz::SearchFixture fixture;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  for (bool lucene : {false, true}) {
    dashcam::api::ParseLimits limits;
    limits.now = dashcam::fuzz::SearchFixture::kNow;
    limits.default_operator_or = lucene;
    limits.lowercase_operators = !lucene;
    auto parsed = dashcam::api::ParseQuery(text, limits);
    if (auto* err = std::get_if<dashcam::api::QueryError>(&parsed)) {
      if (err->position > text.size() && size <= limits.max_bytes) std::abort();
      if (err->reason.empty()) std::abort();
      continue;
    }
    fixture.Search(std::get<dashcam::query::Node>(parsed));
  }
  return 0;
}
