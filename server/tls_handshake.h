// What a listener needs to speak TLS: its context, the handshake's deadline,
// and a TlsHandshakeReport that counts handshakes in /metrics
// (dashcam_tls_handshakes_total{listener,result="ok|failed"}) and logs
// failures. Failures are logged at most once a second per listener, with
// how many went unlogged meanwhile: a port scanner fails thousands.
//
// Thread-safety: Done may be called from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include <boost/asio/ip/address.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/system/error_code.hpp>

#include "storage/log.h"
#include "storage/metrics.h"

namespace dashcam::server {

class TlsHandshakeReport {
 public:
  // `listener` labels the metric and the log lines ("http", "beats").
  TlsHandshakeReport(std::string listener, Metrics& metrics, const Log& log);

  // One handshake ended with `ec`. `subject`: the verified client
  // certificate's, if any (logged at debug level). `reason` replaces ec's
  // in the log when given.
  void Done(const boost::system::error_code& ec, const boost::asio::ip::address& peer,
            const std::string& subject = {}, std::string_view reason = {});

 private:
  using Clock = std::chrono::steady_clock;

  // Constant after construction.
  const std::string listener_;
  const Log& log_;
  Counter& ok_;
  Counter& failed_;

  std::mutex mu_;
  Clock::time_point last_logged_{};  // guarded by mu_
  std::uint64_t unlogged_ = 0;       // guarded by mu_
};

struct TlsSetup {
  std::shared_ptr<boost::asio::ssl::context> context;
  std::chrono::seconds handshake_timeout{10};
  TlsHandshakeReport* report = nullptr;  // may be null (not counted)
};

}  // namespace dashcam::server
