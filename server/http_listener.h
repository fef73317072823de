// HttpListener: accepts TCP connections and starts an HttpSession for each,
// on its own strand. An accept error (such as running out of file
// descriptors) is logged and retried after a pause; the listener only stops
// when Stop() closes it.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "server/config.h"
#include "server/http_session.h"
#include "storage/status.h"

namespace dashcam::server {

class HttpListener {
 public:
  HttpListener(boost::asio::io_context& ioc, Router& router, const HttpLimits& limits,
               SessionRegistry& registry, const Log& log);

  Status Bind(const HostPort& where);
  boost::asio::ip::tcp::endpoint local_endpoint() const;
  void Start();
  // Stops accepting. Thread-safe.
  void Stop();

 private:
  boost::asio::awaitable<void> AcceptLoop();

  boost::asio::io_context& ioc_;
  boost::asio::ip::tcp::acceptor acceptor_;
  Router& router_;
  const HttpLimits& limits_;
  SessionRegistry& registry_;
  const Log& log_;
};

}  // namespace dashcam::server
