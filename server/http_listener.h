// HttpListener: accepts TCP connections (TcpAcceptor) and starts an
// HttpSession for each, on its own strand: a TLS one when the listener has a
// TlsSetup, else a plain one.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "server/config.h"
#include "server/http_session.h"
#include "server/tcp_acceptor.h"
#include "storage/status.h"

namespace dashcam::server {

class HttpListener {
 public:
  // `tls`: null for plain HTTP; else it must outlive the listener.
  HttpListener(boost::asio::io_context& ioc, Router& router, const HttpLimits& limits,
               SessionRegistry& registry, const TlsSetup* tls, const Log& log);

  Status Bind(const HostPort& where) { return acceptor_.Bind(where); }
  boost::asio::ip::tcp::endpoint local_endpoint() const { return acceptor_.local_endpoint(); }
  void Start();
  // Stops accepting. Thread-safe.
  void Stop() { acceptor_.Stop(); }

 private:
  void Serve(boost::asio::ip::tcp::socket socket);

  TcpAcceptor acceptor_;
  Router& router_;
  const HttpLimits& limits_;
  SessionRegistry& registry_;
  const TlsSetup* const tls_;
  const Log& log_;
};

}  // namespace dashcam::server
