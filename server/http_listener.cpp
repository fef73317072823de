#include "server/http_listener.h"

#include <fmt/format.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace dashcam::server {

namespace asio = boost::asio;
using asio::ip::tcp;

HttpListener::HttpListener(asio::io_context& ioc, Router& router, const HttpLimits& limits,
                           SessionRegistry& registry, const Log& log)
    : ioc_(ioc),
      acceptor_(asio::make_strand(ioc)),
      router_(router),
      limits_(limits),
      registry_(registry),
      log_(log) {}

Status HttpListener::Bind(const HostPort& where) {
  boost::system::error_code ec;
  const auto addr =
      asio::ip::make_address(where.host == "localhost" ? "127.0.0.1" : where.host, ec);
  if (ec)
    return Status::InvalidArgument(
        fmt::format("bad listen address '{}': {}", where.host, ec.message()));
  const tcp::endpoint ep(addr, where.port);
  acceptor_.open(ep.protocol(), ec);
  if (!ec) acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor_.bind(ep, ec);
  if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return Status::IoError(
        fmt::format("cannot listen on {}:{}: {}", where.host, where.port, ec.message()));
  }
  return Status::Ok();
}

tcp::endpoint HttpListener::local_endpoint() const {
  boost::system::error_code ec;
  return acceptor_.local_endpoint(ec);
}

void HttpListener::Start() {
  asio::co_spawn(acceptor_.get_executor(), AcceptLoop(), asio::detached);
}

void HttpListener::Stop() {
  asio::post(acceptor_.get_executor(), [this] {
    boost::system::error_code ec;
    acceptor_.close(ec);
  });
}

asio::awaitable<void> HttpListener::AcceptLoop() {
  for (;;) {
    boost::system::error_code ec;
    tcp::socket socket = co_await acceptor_.async_accept(
        asio::make_strand(ioc_), asio::redirect_error(asio::use_awaitable, ec));
    if (ec == asio::error::operation_aborted || !acceptor_.is_open()) co_return;
    if (ec) {
      log_.Error("accept_failed", {{"error", ec.message()}});
      asio::steady_timer pause(acceptor_.get_executor(), std::chrono::milliseconds(100));
      co_await pause.async_wait(asio::redirect_error(asio::use_awaitable, ec));
      continue;
    }
    socket.set_option(tcp::no_delay(true), ec);
    auto session =
        std::make_shared<HttpSession>(std::move(socket), router_, limits_, registry_, log_);
    registry_.Add(session);
    asio::co_spawn(
        session->executor(), [session]() { return session->Run(); }, asio::detached);
  }
}

}  // namespace dashcam::server
