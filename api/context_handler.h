// GET /api/v1/context?id=<_id>&before=20&after=20&q=&from=&to=
//
// The events logged just before and after one event by the same source, in
// order, the way `grep -C` shows a line in its file.
//   id             the event (`_id` of a search hit); required
//   before, after  how many neighbours on each side (default 20, 0..1000)
//   q, from, to    optionally, only neighbours matching this query and range
//
// The same source. ApiContext::context_scopes is a list of rules, each a
// list of fields; the first rule whose fields the anchor event all has
// decides. Its neighbours have exactly the anchor's values of those fields,
// and none of the rules' fields the anchor lacks (so the other inputs of a
// shipper stay apart). The default rules, in order (--context-scope):
//   host.name+log.file.path   a file on a host (Filebeat's log inputs)
//   container.id              a container's output without a file path
//   agent.id                  any other input of one Beats shipper
//                             (journald, TCP, stdin ...)
//   host.name                 a program posting from a host without files
//   _index                    the same bulk stream (index or data stream)
// When no rule applies, the neighbours are the events that have none of the
// rules' fields either (bare NDJSON posted to /api/v1/ingest).
//
// Answer (200):
//   {"took_ms":2,"anchor":"<id>",
//    "scope":[{"field":"host.name","value":"gpu-node-07"},
//             {"field":"container.id","value":null}, ...],   (null: absent;
//                                                  an array for several values)
//    "events":[{"_id":..,"_index":..,"@timestamp":..,"_source":{..}}, ...,
//              {..., "anchor":true}, ...],
//    "has_more_before":true,"has_more_after":false}
// Events are oldest first, the anchor among them. has_more_* says whether
// more such events exist beyond the ones returned (also when the search for
// them stopped after a million candidates of other sources).
//
// Errors: 400 illegal_argument (no id, bad counts), 404 not_found (no event
// with that id), 400 query_parse_error, 503 query_timeout.
#pragma once

#include <string>
#include <vector>

#include <boost/asio/awaitable.hpp>

#include "api/search_handler.h"

namespace dashcam::api {

boost::asio::awaitable<HttpResponse> HandleContext(HttpRequest req, ApiContext& ctx);

// Parses --context-scope: rules separated by `,`, a rule's fields joined by
// `+` ("host.name+log.file.path,agent.id,_index"); empty: no rules (the
// neighbours in time, whatever their source). Errors: a reason.
std::variant<std::vector<std::vector<std::string>>, std::string> ParseContextScopes(
    std::string_view text);

}  // namespace dashcam::api
