#include "api/stream_params.h"

#include <charconv>

#include <fmt/format.h>

#include "api/query_params.h"

namespace dashcam::api {
namespace {

constexpr int kMaxHeartbeatSeconds = 300;

// Applies one of the streaming endpoints' own parameters; a reason when it
// is bad.
std::optional<std::string> Apply(std::string_view key, std::string_view value,
                                 StreamEndpoint endpoint, StreamParams& p, bool& fields_given) {
  const bool tail = endpoint == StreamEndpoint::kTail;
  if (key == "format") {
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
  bool fields_given = false;
  auto common = ParseQueryParams(target, now, [&](std::string_view key, std::string_view value) {
    return Apply(key, value, endpoint, p, fields_given);
  });
  if (auto* reason = std::get_if<std::string>(&common)) return std::move(*reason);
  QueryParams& q = std::get<QueryParams>(common);
  p.q = std::move(q.q);
  p.from = q.from.value_or(kMinEventTime);
  p.to = q.to.value_or(kMaxEventTime);
  if (fields_given && p.format == EventFormat::kText) {
    return std::string(
        "[fields] applies to csv and ndjson; text is always "
        "`timestamp level host message`");
  }
  if (fields_given && p.columns.empty()) return std::string("[fields] names no column");
  return p;
}

}  // namespace dashcam::api
