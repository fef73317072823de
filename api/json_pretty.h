// IndentJson: re-indents a JSON text for people (`?pretty` on any JSON
// answer), two spaces per level, one member or element per line, `": "`
// after keys, empty objects and arrays kept as `{}` and `[]`. It works on
// the text (whitespace outside strings is dropped and re-inserted), so
// numbers, strings, key order and stored documents come out byte for byte
// as they went in.
//
// Input that is not valid JSON is re-indented as far as its brackets and
// strings go; never a crash. Indentation stops growing past 32 levels, so
// the output is at most a constant factor (~66x, for a text of nothing but
// brackets) larger than the input; ordinary answers grow 1.5-2x.
//
// Thread-safety: a pure function.
#pragma once

#include <string>
#include <string_view>

namespace dashcam::api {

std::string IndentJson(std::string_view json);

// True when a request's query string asks for indented JSON: `pretty`,
// `pretty=true` or `pretty=1` (not `pretty=false`), as Elasticsearch reads it.
bool WantsPretty(std::string_view target);

}  // namespace dashcam::api
