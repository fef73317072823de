// The rule that keeps dashcam from being opened to a network by accident:
// a listener on a non-loopback address needs authentication, or an explicit
// --insecure-allow-open.
//   HTTP (--listen): non-loopback requires --auth-file.
//   Beats (--beats-listen): the Lumberjack protocol has no credentials; it can
//     only authenticate clients by TLS client certificate (mutual TLS, not yet
//     supported), so a non-loopback Beats listener is refused even with
//     --auth-file.
// Loopback: 127.0.0.0/8, ::1, ::ffff:127.x.x.x, and the name "localhost".
// Any other name counts as non-loopback (it may resolve anywhere).
//
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/config.h"

namespace dashcam::server {

bool IsLoopbackHost(std::string_view host);

// Why the listeners may not open as configured (a bad_config reason), or
// nullopt when they may. `beats` is nullopt when the Beats listener is off.
std::optional<std::string> OpenListenerProblem(const HostPort& http,
                                               const std::optional<HostPort>& beats, bool auth_on,
                                               bool insecure_allow_open);

// The non-loopback listeners that are open without authentication (for the
// warning logged under --insecure-allow-open).
std::vector<std::string> UnauthenticatedExposures(const HostPort& http,
                                                  const std::optional<HostPort>& beats,
                                                  bool auth_on);

}  // namespace dashcam::server
