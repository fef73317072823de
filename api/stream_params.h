// The query parameters of the streaming endpoints (export, tail), parsed from
// the request target (q, from and to as every query endpoint: api/query_params.h).
//
//   q        the query (api/query_parser.h); default: every event
//   from,to  event time bounds [from, to): RFC 3339, epoch ms or now-<n><unit>
//   format   export: ndjson (default) | csv | text; tail: sse (default) | text
//   fields   csv and ndjson columns, comma-separated (api/event_format.h)
//   order    export: desc (default, newest first) | asc
//   heartbeat  tail, SSE: seconds of silence before a heartbeat comment, 1..300
//              (default 15)
// Parameters this version does not know are ignored, as search does; a known
// parameter that does not apply to the endpoint (order on tail, fields with
// format=text) is an error, never silently ignored.
//
// Thread-safety: pure functions.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "api/event_format.h"
#include "api/query_parser.h"
#include "api/search_handler.h"
#include "storage/time_format.h"

namespace dashcam::api {

enum class StreamEndpoint { kExport, kTail };

struct StreamParams {
  std::string q;
  TimeMs from = kMinEventTime, to = kMaxEventTime;
  EventFormat format = EventFormat::kNdjson;
  std::vector<std::string> columns;  // empty: the format's default
  bool ascending = false;
  std::chrono::milliseconds heartbeat{15'000};
};

// The parameters, or the reason they are bad (for a 400 illegal_argument).
std::variant<StreamParams, std::string> ParseStreamParams(std::string_view target, TimeMs now,
                                                          StreamEndpoint endpoint);

}  // namespace dashcam::api
