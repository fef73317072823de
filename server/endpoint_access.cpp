#include "server/endpoint_access.h"

#include "web/assets.h"

namespace dashcam::server {
namespace {

namespace http = boost::beast::http;

bool IsReadMethod(http::verb v) {
  return v == http::verb::get || v == http::verb::head;
}

bool IsEsManagement(const std::vector<std::string>& seg) {
  if (seg.empty()) return false;
  const std::string& first = seg[0];
  return first == "_license" || first == "_ilm" || first == "_index_template" ||
         first == "_template" || first == "_data_stream" || first == "_ingest" ||
         first == "_cluster" || first == "_refresh" || (seg.size() == 2 && seg[1] == "_refresh");
}

Access ApiV1Access(const std::vector<std::string>& seg) {
  if (seg.size() == 3) {
    const std::string& name = seg[2];
    if (name == "ingest") return Access::kIngest;
    if (name == "status") return Access::kFleetRead;
    if (name == "search" || name == "histogram" || name == "fields" || name == "context" ||
        name == "export" || name == "tail" || name == "patterns" || name == "insights" ||
        name == "runs") {
      return Access::kRead;
    }
  }
  if (seg.size() == 4 && seg[2] == "redaction" && seg[3] == "rules") return Access::kRead;
  if (seg.size() == 5 && seg[2] == "runs" && seg[4] == "metrics") return Access::kRead;
  return Access::kAdmin;
}

}  // namespace

Access RequiredAccess(http::verb method, const std::vector<std::string>& seg, bool wants_html) {
  if (seg.empty()) return IsReadMethod(method) && wants_html ? Access::kOpen : Access::kAnyKey;
  if (seg.size() == 1) {
    const std::string& s = seg[0];
    if (s == "healthz" || s == "readyz") return Access::kOpen;
    if (s == "metrics") return Access::kFleetRead;
    if (s == "_bulk") return Access::kIngest;
    if (s == "_search" || s == "_count") return Access::kRead;
    if (IsReadMethod(method) && web::FindAsset("/" + s) != nullptr) return Access::kOpen;
  }
  if (seg.size() == 2 && seg[1] == "_bulk") return Access::kIngest;
  if (seg.size() == 2 && (seg[1] == "_search" || seg[1] == "_count")) return Access::kRead;
  if (seg.size() >= 3 && seg[0] == "api" && seg[1] == "v1") return ApiV1Access(seg);
  if (IsEsManagement(seg)) return IsReadMethod(method) ? Access::kAnyKey : Access::kIngest;
  return Access::kAdmin;
}

bool Allows(Role role, bool has_filter, Access access) {
  switch (access) {
    case Access::kOpen:
    case Access::kAnyKey:
      return true;
    case Access::kIngest:
      return role == Role::kIngest || role == Role::kAdmin;
    case Access::kRead:
      return role == Role::kRead || role == Role::kAdmin;
    case Access::kFleetRead:
      return role == Role::kAdmin || (role == Role::kRead && !has_filter);
    case Access::kAdmin:
      return role == Role::kAdmin;
  }
  return false;
}

}  // namespace dashcam::server
