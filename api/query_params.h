// The request parameters every query endpoint shares (search, histogram,
// fields, context, export, tail), and the error answers they share:
//   q         the query (query_parser.h); empty: every event
//   from, to  the time range: RFC 3339, epoch ms, `now`, `now-15m` ...;
//             `from` later than `to` is an error
// Each endpoint's own parameters go to a callback; unknown ones are ignored,
// so `pretty` passes through to the router and a newer client's parameters
// do not break an older server.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "api/query_parser.h"
#include "api/search_handler.h"

namespace dashcam::api {

struct QueryParams {
  std::string q;
  std::optional<TimeMs> from, to;  // nullopt: not given
};

// Reads a parameter the endpoint knows: returns an error reason for a bad
// value, nullopt otherwise (also for a key it does not know).
using ParamReader =
    std::function<std::optional<std::string>(std::string_view key, std::string_view value)>;

// Parses the query string of `target`. Errors: a reason, for a 400.
std::variant<QueryParams, std::string> ParseQueryParams(std::string_view target, TimeMs now,
                                                        const ParamReader& other);

// The query `q` of a request, its dates (`now-1h`) resolved against the same
// `now` as the request's from/to.
std::variant<query::Node, QueryError> ParseRequestQuery(std::string_view q, TimeMs now);

// An unsigned integer parameter in [min, max]; nullopt when it is not one.
std::optional<std::size_t> ParseCount(std::string_view value, std::size_t min, std::size_t max);

// A ParamReader for `limit` alone: an integer in [1, max] into `*out`.
ParamReader LimitParam(std::size_t* out, std::size_t max);

// 400 {"error":{"type":"illegal_argument","reason":..}}.
HttpResponse BadParamResponse(const HttpRequest& req, std::string_view reason);
// 400 {"error":{"type":"query_parse_error","reason":..,"position":N}}.
HttpResponse QueryErrorResponse(const HttpRequest& req, const QueryError& err);

}  // namespace dashcam::api
