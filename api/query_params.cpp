#include "api/query_params.h"

#include <charconv>

#include <fmt/format.h>
#include <boost/url/parse.hpp>

#include "api/json_writer.h"

namespace dashcam::api {

std::variant<QueryParams, std::string> ParseQueryParams(std::string_view target, TimeMs now,
                                                        const ParamReader& other) {
  QueryParams p;
  auto url = boost::urls::parse_origin_form(target);
  if (!url) return std::string("malformed request target");
  for (auto param : url->params(boost::urls::encoding_opts(true))) {
    const std::string_view key = param.key, value = param.value;
    if (key == "q") {
      p.q = std::string(value);
    } else if (key == "from" || key == "to") {
      auto t = ParseTimeParam(value, now);
      if (!t) {
        return fmt::format(
            "[{}] must be RFC 3339, epoch milliseconds or now-<n><s|m|h|d|w>, got '{}'", key,
            value.substr(0, 64));
      }
      (key == "from" ? p.from : p.to) = *t;
    } else if (auto err = other(key, value)) {
      return *err;
    }
  }
  if (p.from && p.to && *p.from > *p.to) return std::string("[from] is later than [to]");
  return p;
}

std::variant<query::Node, QueryError> ParseRequestQuery(std::string_view q, TimeMs now) {
  ParseLimits limits;
  limits.now = now;
  return ParseQuery(q, limits);
}

std::optional<std::size_t> ParseCount(std::string_view value, std::size_t min, std::size_t max) {
  std::size_t n = 0;
  auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
  if (ec != std::errc() || ptr != value.data() + value.size() || n < min || n > max) {
    return std::nullopt;
  }
  return n;
}

ParamReader LimitParam(std::size_t* out, std::size_t max) {
  return [out, max](std::string_view key, std::string_view value) -> std::optional<std::string> {
    if (key != "limit") return std::nullopt;
    auto n = ParseCount(value, 1, max);
    if (!n) return fmt::format("[limit] must be an integer from 1 to {}", max);
    *out = *n;
    return std::nullopt;
  };
}

HttpResponse BadParamResponse(const HttpRequest& req, std::string_view reason) {
  return MakeErrorResponse(req, http::status::bad_request, "illegal_argument", reason);
}

HttpResponse QueryErrorResponse(const HttpRequest& req, const QueryError& err) {
  JsonWriter w;
  w.BeginObject().Key("error").BeginObject();
  w.Key("type").String("query_parse_error").Key("reason").String(err.reason);
  w.Key("position").Uint(err.position);
  w.EndObject().EndObject();
  return MakeJsonResponse(req, http::status::bad_request, w.Release());
}

}  // namespace dashcam::api
