#include "server/tls_handshake.h"

#include <openssl/err.h>

#include <fmt/format.h>
#include <boost/asio/ssl/error.hpp>

namespace dashcam::server {

namespace {

constexpr const char* kName = "dashcam_tls_handshakes_total";
constexpr const char* kHelp = "TLS handshakes on each listener, by result.";

}  // namespace

TlsHandshakeReport::TlsHandshakeReport(std::string listener, Metrics& metrics, const Log& log)
    : listener_(std::move(listener)),
      log_(log),
      ok_(metrics.GetCounter(kName, kHelp,
                             fmt::format("listener=\"{}\",result=\"ok\"", listener_))),
      failed_(metrics.GetCounter(kName, kHelp,
                                 fmt::format("listener=\"{}\",result=\"failed\"", listener_))) {}

void TlsHandshakeReport::Done(const boost::system::error_code& ec,
                              const boost::asio::ip::address& peer, const std::string& subject,
                              std::string_view reason_override) {
  if (!ec) {
    ok_.Add();
    if (!subject.empty()) {
      log_.Debug("tls_client",
                 {{"listener", listener_}, {"peer", peer.to_string()}, {"subject", subject}});
    }
    return;
  }
  failed_.Add();
  std::uint64_t unlogged = 0;
  {
    std::lock_guard lock(mu_);
    const auto now = Clock::now();
    if (now - last_logged_ < std::chrono::seconds(1)) {
      ++unlogged_;
      return;
    }
    last_logged_ = now;
    unlogged = unlogged_;
    unlogged_ = 0;
  }
  // OpenSSL's reason ("certificate verify failed", "unsupported protocol")
  // is what an operator needs to fix a client's configuration.
  std::string reason = ec.message();
  if (!reason_override.empty()) {
    reason = reason_override;
  } else if (ec.category() == boost::asio::error::get_ssl_category()) {
    if (const char* r = ERR_reason_error_string(static_cast<unsigned long>(ec.value()))) {
      reason = r;
    }
  }
  log_.Warn("tls_handshake_failed", {{"listener", listener_},
                                     {"peer", peer.to_string()},
                                     {"reason", reason},
                                     {"not_logged_since_last", unlogged}});
}

}  // namespace dashcam::server
