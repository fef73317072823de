// BeatsListener: accepts Beats protocol connections (Filebeat's
// output.logstash, default port 5044; TcpAcceptor) and starts a BeatsSession
// for each, on its own strand. With a TlsSetup every connection must first
// complete a TLS handshake (and, when the context requires one, present a
// client certificate); a failed handshake closes it before any byte of the
// protocol is read. Accepting stops only with Stop() or Drain().
//
// Drain() is the SIGTERM path: stop accepting, close the sessions that have
// no complete window waiting, and let the others commit and ACK what they
// have, then close. active_sessions() reaches 0 when every session is done;
// the server waits for that before closing the store.
//
// Thread-safety: Stop, Drain and active_sessions may be called from any
// thread. The listener must outlive the sessions' coroutines it started, or
// the io_context must be stopped before it is destroyed.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "ingest/beats_session.h"
#include "server/config.h"
#include "server/tcp_acceptor.h"
#include "server/tls_handshake.h"
#include "storage/status.h"

namespace dashcam::server {

class BeatsListener {
 public:
  // `tls`: null for plain TCP; else it must outlive the listener.
  BeatsListener(boost::asio::io_context& ioc, ingest::BeatsContext& ctx, const TlsSetup* tls,
                const Log& log);

  Status Bind(const HostPort& where) { return acceptor_.Bind(where); }
  boost::asio::ip::tcp::endpoint local_endpoint() const { return acceptor_.local_endpoint(); }
  void Start();
  // Stops accepting.
  void Stop() { acceptor_.Stop(); }
  // Stops accepting and drains every session (see above).
  void Drain();
  // Sessions whose Run has not completed.
  std::size_t active_sessions() const;

 private:
  boost::asio::awaitable<void> HandshakeThenServe(boost::asio::ip::tcp::socket socket);
  void Serve(std::unique_ptr<ingest::ByteStream> stream);
  void Remove(const ingest::BeatsSession* s);

  // Constant after construction.
  ingest::BeatsContext& ctx_;
  const TlsSetup* const tls_;

  TcpAcceptor acceptor_;
  std::atomic<bool> draining_{false};
  mutable std::mutex mu_;
  std::vector<std::weak_ptr<ingest::BeatsSession>> sessions_;  // guarded by mu_
  std::size_t active_ = 0;                                     // guarded by mu_
};

}  // namespace dashcam::server
