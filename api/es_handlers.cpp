#include "api/es_handlers.h"

#include <boost/beast/http/field.hpp>

#include "api/json_writer.h"

namespace dashcam::api {
namespace {

bool IsRead(http::verb v) {
  return v == http::verb::get || v == http::verb::head;
}
bool IsWrite(http::verb v) {
  return v == http::verb::put || v == http::verb::post;
}

HttpResponse Json(const HttpRequest& req, std::string body) {
  HttpResponse res = MakeJsonResponse(req, http::status::ok, std::move(body));
  if (req.method() == http::verb::head) {
    const auto n = res.body().size();
    res.body().clear();
    res.content_length(n);
  }
  return res;
}

HttpResponse Acknowledged(const HttpRequest& req) {
  return Json(req, R"({"acknowledged":true})");
}

std::string Info(const ApiContext& ctx) {
  JsonWriter w;
  w.BeginObject();
  w.Key("name").String("dashcam");
  w.Key("cluster_name").String("dashcam");
  w.Key("cluster_uuid").String("ZGFzaGNhbS1jbHVzdGVy");
  w.Key("version").BeginObject();
  w.Key("number").String(ctx.es_version);
  w.Key("build_flavor").String("default");
  w.Key("build_type").String("deb");
  w.Key("build_hash").String("dashcam");
  w.Key("build_snapshot").Bool(false);
  w.Key("lucene_version").String("9.12.0");
  w.Key("minimum_wire_compatibility_version").String("7.17.0");
  w.Key("minimum_index_compatibility_version").String("7.0.0");
  w.EndObject();
  w.Key("tagline").String("You Know, for Search");
  w.EndObject();
  return w.Release();
}

std::string NamedObject(const std::string& name, std::string_view inner) {
  JsonWriter w;
  w.BeginObject().Key(name).Raw(inner).EndObject();
  return w.Release();
}

std::string NamedList(std::string_view list_key, std::string_view item_key, const std::string& name,
                      std::string_view inner) {
  JsonWriter w;
  w.BeginObject().Key(list_key).BeginArray().BeginObject();
  w.Key("name").String(name).Key(item_key).Raw(inner);
  w.EndObject().EndArray().EndObject();
  return w.Release();
}

constexpr std::string_view kPolicy =
    R"({"version":1,"modified_date":"2026-01-01T00:00:00.000Z","policy":{"phases":{"hot":{"min_age":"0ms","actions":{}}}}})";
constexpr std::string_view kTemplate = R"({"index_patterns":["*"],"template":{},"data_stream":{}})";
std::string DataStream(const std::string& name) {
  JsonWriter w;
  w.BeginObject().Key("data_streams").BeginArray().BeginObject();
  w.Key("name").String(name);
  w.Key("timestamp_field").BeginObject().Key("name").String("@timestamp").EndObject();
  w.Key("indices").BeginArray().EndArray();
  w.Key("generation").Int(1);
  w.Key("status").String("GREEN");
  w.Key("template").String(name);
  w.EndObject().EndArray().EndObject();
  return w.Release();
}

std::optional<HttpResponse> Management(const HttpRequest& req,
                                       const std::vector<std::string>& seg) {
  const http::verb m = req.method();
  const std::string& kind = seg[0];
  if (seg.size() == 3 && kind == "_ilm" && seg[1] == "policy") {
    if (IsWrite(m)) return Acknowledged(req);
    if (IsRead(m)) return Json(req, NamedObject(seg[2], kPolicy));
  }
  if (seg.size() == 2 && (kind == "_index_template" || kind == "_template")) {
    if (IsWrite(m)) return Acknowledged(req);
    if (IsRead(m)) {
      return Json(req, kind == "_template"
                           ? NamedObject(seg[1], kTemplate)
                           : NamedList("index_templates", "index_template", seg[1], kTemplate));
    }
  }
  if (seg.size() == 2 && kind == "_data_stream") {
    if (IsWrite(m)) return Acknowledged(req);
    if (IsRead(m)) return Json(req, DataStream(seg[1]));
  }
  if (seg.size() == 3 && kind == "_ingest" && seg[1] == "pipeline") {
    if (IsWrite(m)) return Acknowledged(req);
    if (IsRead(m))
      return Json(req, NamedObject(seg[2], R"({"description":"dashcam","processors":[]})"));
  }
  return std::nullopt;
}

}  // namespace

std::optional<HttpResponse> HandleEsManagement(const HttpRequest& req,
                                               const std::vector<std::string>& seg,
                                               const ApiContext& ctx) {
  const http::verb m = req.method();
  if (seg.empty()) {
    if (IsRead(m)) return Json(req, Info(ctx));
    return std::nullopt;
  }
  if (seg.size() == 1 && seg[0] == "_license" && IsRead(m)) {
    return Json(
        req,
        R"({"license":{"status":"active","uid":"dashcam-basic","type":"basic",)"
        R"("issue_date":"2026-01-01T00:00:00.000Z","issue_date_in_millis":1767225600000,)"
        R"("max_nodes":1000,"max_resource_units":null,"issued_to":"dashcam","issuer":"dashcam",)"
        R"("start_date_in_millis":-1}})");
  }
  if (seg.size() == 2 && seg[0] == "_cluster" && seg[1] == "health" && IsRead(m)) {
    return Json(
        req, R"({"cluster_name":"dashcam","status":"green","timed_out":false,"number_of_nodes":1,)"
             R"("number_of_data_nodes":1,"active_primary_shards":1,"active_shards":1,)"
             R"("relocating_shards":0,"initializing_shards":0,"unassigned_shards":0,)"
             R"("delayed_unassigned_shards":0,"number_of_pending_tasks":0,)"
             R"("number_of_in_flight_fetch":0,"task_max_waiting_in_queue_millis":0,)"
             R"("active_shards_percent_as_number":100.0})");
  }
  const bool refresh =
      (seg.size() == 1 && seg[0] == "_refresh") || (seg.size() == 2 && seg[1] == "_refresh");
  if (refresh && (IsWrite(m) || m == http::verb::get)) {
    return Json(req, R"({"_shards":{"total":1,"successful":1,"failed":0}})");
  }
  return Management(req, seg);
}

}  // namespace dashcam::api
