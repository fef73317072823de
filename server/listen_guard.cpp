#include "server/listen_guard.h"

#include <fmt/format.h>
#include <boost/asio/ip/address.hpp>

namespace dashcam::server {

bool IsLoopbackHost(std::string_view host) {
  if (host == "localhost") return true;
  boost::system::error_code ec;
  const auto addr = boost::asio::ip::make_address(std::string(host), ec);
  if (ec) return false;
  if (addr.is_v6() && addr.to_v6().is_v4_mapped()) {
    return boost::asio::ip::make_address_v4(boost::asio::ip::v4_mapped, addr.to_v6()).is_loopback();
  }
  return addr.is_loopback();
}

std::vector<std::string> UnauthenticatedExposures(const HostPort& http,
                                                  const std::optional<HostPort>& beats,
                                                  ListenerAuth auth) {
  std::vector<std::string> out;
  if (!auth.http_keys && !IsLoopbackHost(http.host)) out.push_back("--listen " + http.host);
  if (beats && !auth.beats_mtls && !IsLoopbackHost(beats->host)) {
    out.push_back("--beats-listen " + beats->host);
  }
  return out;
}

std::optional<std::string> OpenListenerProblem(const HostPort& http,
                                               const std::optional<HostPort>& beats,
                                               ListenerAuth auth, bool insecure_allow_open) {
  if (insecure_allow_open) return std::nullopt;
  if (!auth.http_keys && !IsLoopbackHost(http.host)) {
    return fmt::format(
        "refusing to listen on {} without --auth-file: anyone who can reach it could read and "
        "write every log (configure API keys with --auth-file, listen on loopback, or pass "
        "--insecure-allow-open)",
        http.host);
  }
  if (beats && !auth.beats_mtls && !IsLoopbackHost(beats->host)) {
    return fmt::format(
        "refusing to open the Beats listener on {}: the Beats protocol cannot authenticate "
        "clients without mutual TLS (give --tls-cert, --tls-key and --tls-client-ca, bind it "
        "to loopback, disable it with --beats-listen '', or pass --insecure-allow-open)",
        beats->host);
  }
  return std::nullopt;
}

}  // namespace dashcam::server
