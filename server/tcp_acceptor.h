// TcpAcceptor: a listening TCP socket and its accept loop, shared by the HTTP
// and Beats listeners. Each accepted connection gets its own strand and is
// handed to the listener's callback. An accept error (such as running out of
// file descriptors) is logged and retried after a pause; the loop ends only
// when Stop() closes the socket.
//
// Thread-safety: Stop() may be called from any thread; the rest from the
// thread that owns the acceptor, before Start().
#pragma once

#include <functional>
#include <string>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "server/config.h"
#include "storage/log.h"
#include "storage/status.h"

namespace dashcam::server {

class TcpAcceptor {
 public:
  using OnAccept = std::function<void(boost::asio::ip::tcp::socket)>;

  // `name` labels log lines and errors ("http", "beats").
  TcpAcceptor(boost::asio::io_context& ioc, std::string name, const Log& log);

  Status Bind(const HostPort& where);
  boost::asio::ip::tcp::endpoint local_endpoint() const;
  // Starts accepting; `on_accept` runs on the acceptor's strand.
  void Start(OnAccept on_accept);
  void Stop();

 private:
  boost::asio::awaitable<void> AcceptLoop(OnAccept on_accept);

  boost::asio::io_context& ioc_;
  const std::string name_;
  const Log& log_;
  boost::asio::ip::tcp::acceptor acceptor_;  // on its own strand
};

}  // namespace dashcam::server
