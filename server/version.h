// The version dashcam reports: --version, the startup log, /metrics
// (dashcam_build_info) and GET /api/v1/status.
#pragma once

namespace dashcam::server {

inline constexpr const char* kVersion = "0.1.0";

}  // namespace dashcam::server
