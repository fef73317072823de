// The Elasticsearch endpoints that clients call around ingest and search,
// answered so that Filebeat (index management on or off) and the official
// clients connect (PROTOCOLS.md 1.1 and 3):
//   GET|HEAD /                              cluster info, with the configured version
//   GET  /_license                          an active basic license
//   GET|PUT /_ilm/policy/{name}             policies exist; PUT acknowledges
//   HEAD|GET|PUT /_index_template/{name}    templates exist; PUT acknowledges
//   HEAD|GET|PUT /_template/{name}          legacy templates, likewise
//   GET|PUT /_data_stream/{name}            data streams exist; PUT acknowledges
//   GET|PUT /_ingest/pipeline/{id}          pipelines exist; PUT acknowledges
//   GET  /_cluster/health                   green
//   POST /_refresh, /{index}/_refresh       no-op: acknowledged data is already searchable
// dashcam keeps no templates, policies or pipelines: it stores documents as
// sent, so accepting these calls changes nothing and loses nothing.
#pragma once

#include <string>
#include <vector>

#include "api/search_handler.h"

namespace dashcam::api {

// The answer for an Elasticsearch management request, or nullopt when `seg`
// (the decoded path segments) is not one of the endpoints above.
std::optional<HttpResponse> HandleEsManagement(const HttpRequest& req,
                                               const std::vector<std::string>& seg,
                                               const ApiContext& ctx);

}  // namespace dashcam::api
