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

}  // namespace dashcam::testing
