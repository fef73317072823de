// EndpointAccess: who may call which endpoint when --auth-file is set. The
// route table (router.h) decides what a request does; this decides whether
// its caller may. Kept beside each other so a new route gets a line here:
// an endpoint not listed needs an admin key.
//
//   open (no key)   GET / for browsers (text/html: the page, which holds no
//                   data and asks for a key), the embedded web assets,
//                   /healthz, /readyz (a load balancer's probes)
//   any key         GET|HEAD / for Elasticsearch clients (the cluster info
//                   every client reads first), GET|HEAD of the Elasticsearch
//                   management endpoints (_license, _cluster/health, ...)
//   ingest          POST|PUT _bulk, {index}/_bulk, /api/v1/ingest, and the
//                   writes Filebeat makes at connect time (PUT _index_template,
//                   _ilm, _data_stream, _ingest/pipeline, POST _refresh)
//   read            /api/v1/{search,histogram,fields,context,export,tail},
//                   /api/v1/redaction/rules, _search, _count (any index)
//   fleet read      /metrics, /api/v1/status: counts over every user's events,
//                   so a read key with a filter may not see them
//   admin           everything
// Roles: admin may do everything; ingest: "any key" and ingest; read:
// "any key" and read, plus fleet read when it has no filter.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include <boost/beast/http/verb.hpp>

#include "server/api_keys.h"

namespace dashcam::server {

enum class Access { kOpen, kAnyKey, kIngest, kRead, kFleetRead, kAdmin };

// `seg`: the decoded path segments ("/" is none); `wants_html`: the request
// accepts text/html (a browser).
Access RequiredAccess(boost::beast::http::verb method, const std::vector<std::string>& seg,
                      bool wants_html);

// Whether a key with `role` (and a row filter, or not) may call an endpoint
// that requires `access`.
bool Allows(Role role, bool has_filter, Access access);

}  // namespace dashcam::server
