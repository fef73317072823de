// Fuzz target: the Elasticsearch Query DSL that `_search` and `_count`
// bodies carry (es_query_dsl.h), from untrusted bytes down to a search of a
// real partition (search_fixture.h). The input is parsed as JSON the way the
// handler parses a body; a document is translated both as a whole query and,
// when it has one, as a request's `query` member, and each translation that
// succeeds is searched. The raw text is also read as an index expression and
// a date. Checks: no crash; every refusal is InvalidArgument (a 400) with a
// reason; a search ends OK, InvalidArgument or DeadlineExceeded.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include <boost/json.hpp>

#include "api/es_query_dsl.h"
#include "tests/fuzz/search_fixture.h"

namespace {

namespace json = boost::json;
using dashcam::Status;
using dashcam::StatusCode;
using dashcam::fuzz::SearchFixture;

void CheckRefusal(const Status& s, const char* what) {
  if (s.code() == StatusCode::kInvalidArgument && !s.message().empty()) return;
  std::fprintf(stderr, "%s: not a 400 with a reason: %s\n", what, s.ToString().c_str());
  std::abort();
}

void TranslateAndSearch(const json::value& query, SearchFixture& fixture) {
  auto node = dashcam::api::TranslateEsQuery(query, SearchFixture::kNow);
  if (!node.ok()) return CheckRefusal(node.status(), "TranslateEsQuery");
  fixture.Search(*node);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static SearchFixture fixture;
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  auto index = dashcam::api::TranslateIndexExpression(text);
  if (index.ok()) {
    fixture.Search(*index);
  } else {
    CheckRefusal(index.status(), "TranslateIndexExpression");
  }

  json::error_code ec;
  const json::value doc = json::parse(text, ec);
  if (ec) return 0;
  auto date = dashcam::api::ResolveEsDate(doc, SearchFixture::kNow);
  if (!date.ok()) CheckRefusal(date.status(), "ResolveEsDate");
  TranslateAndSearch(doc, fixture);
  if (const json::object* o = doc.if_object()) {
    if (const json::value* q = o->if_contains("query")) TranslateAndSearch(*q, fixture);
  }
  return 0;
}
