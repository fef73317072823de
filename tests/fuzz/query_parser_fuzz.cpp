// Fuzz target: the query language parser and its compilation to FTS5 + SQL
// (untrusted text from any user). Checks: no crash; an error has a position
// within the text; a parsed query either compiles or is refused with
// InvalidArgument, never another error.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <variant>

#include "api/query_parser.h"
#include "storage/fts_query_compiler.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto parsed = dashcam::api::ParseQuery(text);
  if (auto* err = std::get_if<dashcam::api::QueryError>(&parsed)) {
    if (err->position > text.size() && size <= 16 * 1024) std::abort();
    return 0;
  }
  auto compiled = dashcam::storage::CompileFtsQuery(std::get<dashcam::query::Node>(parsed));
  if (!compiled.ok() && compiled.status().code() != dashcam::StatusCode::kInvalidArgument) {
    std::abort();
  }
  return 0;
}
