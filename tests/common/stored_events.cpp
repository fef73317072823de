#include "tests/common/stored_events.h"

#include <boost/json.hpp>

#include "tests/common/http_client.h"

namespace dashcam::testing {

bool CountStored(std::uint16_t port, std::string_view field, StoredCounts& out) {
  HttpClient http("127.0.0.1", port);
  const HttpResult res = http.Get("/api/v1/export?order=asc");
  if (res.status != 200) {
    out.error = "export: " + std::to_string(res.status) + " " + res.error + " " + res.body;
    return false;
  }
  const std::string_view body = res.body;
  for (std::size_t at = 0; at < body.size();) {
    std::size_t end = body.find('\n', at);
    if (end == std::string_view::npos) end = body.size();
    if (end > at) {
      const std::string_view line = body.substr(at, end - at);
      const boost::json::value v = boost::json::parse(line);
      const auto* value = v.at("_source").as_object().if_contains(field);
      if (value == nullptr || !value->is_string()) {
        out.without_field.emplace_back(line);
      } else {
        ++out.by_value[std::string(value->as_string())];
      }
      ++out.events;
    }
    at = end + 1;
  }
  return true;
}

namespace {

// `source` without its last member when that is `"name":{...}` holding
// `required` (any member when empty).
std::string WithoutLastObject(std::string_view source, std::string_view name,
                              std::string_view required) {
  const std::string member = "\"" + std::string(name) + "\":{";
  const auto at = source.rfind(member);
  if (at == std::string_view::npos || at == 0 || source.empty() || source.back() != '}') {
    return std::string(source);
  }
  // The member is last: its object runs to the source's closing brace.
  const std::string_view object =
      source.substr(at + member.size() - 1, source.size() - 1 - (at + member.size() - 1));
  boost::system::error_code ec;
  const auto v = boost::json::parse(object, ec);
  if (ec || !v.is_object() || (!required.empty() && !v.as_object().contains(required))) {
    return std::string(source);
  }
  std::size_t cut = at;
  if (source[cut - 1] == ',') --cut;
  return std::string(source.substr(0, cut)) + "}";
}

}  // namespace

std::string WithoutServerInsight(std::string_view source) {
  return WithoutLastObject(source, "insight", "kind");
}

std::string WithoutServerAdditions(std::string_view source) {
  std::string out = WithoutLastObject(source, "insight", "kind");
  out = WithoutLastObject(out, "run", "");
  return WithoutLastObject(out, "train", "");
}

}  // namespace dashcam::testing
