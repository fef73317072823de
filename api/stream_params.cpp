#include "api/stream_params.h"

#include <charconv>

#include <fmt/format.h>
#include <boost/url/parse.hpp>

#include "api/json_writer.h"

namespace dashcam::api {
namespace {

constexpr int kMaxHeartbeatSeconds = 300;

// Applies one parameter; a reason when it is bad.
std::optional<std::string> Apply(std::string_view key, std::string_view value, TimeMs now,
                                 StreamEndpoint endpoint, StreamParams& p, bool& fields_given) {
  const bool tail = endpoint == StreamEndpoint::kTail;
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
  } else if (key == "format") {
    auto f = ParseEventFormat(value);
    const bool allowed = f && (tail ? (*f == EventFormat::kSse || *f == EventFormat::kText)
                                    : *f != EventFormat::kSse);
    if (!allowed) {
      return tail ? "[format] must be sse or text" : "[format] must be ndjson, csv or text";
    }
    p.format = *f;
  } else if (key == "fields") {
    if (tail) return "[fields] applies to export only";
    std::string error;
    auto columns = ParseColumns(value, error);
    if (!columns) return error;
    p.columns = std::move(*columns);
    fields_given = true;
  } else if (key == "order") {
    if (tail) return "[order] applies to export only: a tail delivers events as they are committed";
    if (value != "asc" && value != "desc") return "[order] must be asc or desc";
    p.ascending = value == "asc";
  } else if (key == "heartbeat") {
    int s = 0;
    auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), s);
    if (!tail || ec != std::errc() || ptr != value.data() + value.size() || s < 1 ||
        s > kMaxHeartbeatSeconds) {
      return tail ? fmt::format("[heartbeat] must be whole seconds from 1 to {}",
                                kMaxHeartbeatSeconds)
                  : std::string("[heartbeat] applies to tail only");
    }
    p.heartbeat = std::chrono::seconds(s);
  }
  return std::nullopt;
}

}  // namespace

std::variant<StreamParams, std::string> ParseStreamParams(std::string_view target, TimeMs now,
                                                          StreamEndpoint endpoint) {
  StreamParams p;
  if (endpoint == StreamEndpoint::kTail) p.format = EventFormat::kSse;
  auto url = boost::urls::parse_origin_form(target);
  if (!url) return std::string("malformed request target");
  bool fields_given = false;
  for (auto param : url->params(boost::urls::encoding_opts(true))) {
    if (auto err = Apply(param.key, param.value, now, endpoint, p, fields_given)) return *err;
  }
  if (p.from > p.to) return std::string("[from] is later than [to]");
  if (fields_given && p.format == EventFormat::kText) {
    return std::string(
        "[fields] applies to csv and ndjson; text is always "
        "`timestamp level host message`");
  }
  if (fields_given && p.columns.empty()) return std::string("[fields] names no column");
  return p;
}

HttpResponse IllegalArgument(const HttpRequest& req, std::string_view reason) {
  return MakeErrorResponse(req, http::status::bad_request, "illegal_argument", reason);
}

HttpResponse QueryParseError(const HttpRequest& req, const QueryError& err) {
  JsonWriter w;
  w.BeginObject().Key("error").BeginObject();
  w.Key("type").String("query_parse_error").Key("reason").String(err.reason);
  w.Key("position").Uint(err.position);
  w.EndObject().EndObject();
  return MakeJsonResponse(req, http::status::bad_request, w.Release());
}

HttpResponse StorageFailure(const HttpRequest& req, const Status& s) {
  if (s.code() == StatusCode::kDeadlineExceeded) {
    return MakeErrorResponse(req, http::status::service_unavailable, "query_timeout",
                             "the query ran past its time budget");
  }
  if (s.code() == StatusCode::kInvalidArgument) {
    return MakeErrorResponse(req, http::status::bad_request, "illegal_argument", s.message());
  }
  return MakeErrorResponse(req, http::status::internal_server_error, "storage_error", s.message());
}

}  // namespace dashcam::api
