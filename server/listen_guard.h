// The rule that keeps dashcam from being opened to a network by accident:
// a listener on a non-loopback address needs authentication, or an explicit
// --insecure-allow-open.
//   HTTP (--listen): non-loopback requires --auth-file.
//   Beats (--beats-listen): the Lumberjack protocol has no credentials; it can
//     only authenticate clients by TLS client certificate, so non-loopback
//     requires mutual TLS (--tls-client-ca), whatever --auth-file says.
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

// How each listener authenticates its clients.
struct ListenerAuth {
  bool http_keys = false;   // --auth-file
  bool beats_mtls = false;  // --tls-client-ca
};

// Why the listeners may not open as configured (a bad_config reason), or
// nullopt when they may. `beats` is nullopt when the Beats listener is off.
std::optional<std::string> OpenListenerProblem(const HostPort& http,
                                               const std::optional<HostPort>& beats,
                                               ListenerAuth auth, bool insecure_allow_open);

// The non-loopback listeners that are open without authentication (for the
// warning logged under --insecure-allow-open).
std::vector<std::string> UnauthenticatedExposures(const HostPort& http,
                                                  const std::optional<HostPort>& beats,
                                                  ListenerAuth auth);

}  // namespace dashcam::server
