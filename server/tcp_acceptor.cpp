#include "server/tcp_acceptor.h"

#include <chrono>

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

TcpAcceptor::TcpAcceptor(asio::io_context& ioc, std::string name, const Log& log)
    : ioc_(ioc), name_(std::move(name)), log_(log), acceptor_(asio::make_strand(ioc)) {}

Status TcpAcceptor::Bind(const HostPort& where) {
  boost::system::error_code ec;
  const auto addr =
      asio::ip::make_address(where.host == "localhost" ? "127.0.0.1" : where.host, ec);
  if (ec) {
    return Status::InvalidArgument(
        fmt::format("bad {} listen address '{}': {}", name_, where.host, ec.message()));
  }
  const tcp::endpoint ep(addr, where.port);
  acceptor_.open(ep.protocol(), ec);
  if (!ec) acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor_.bind(ep, ec);
  if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return Status::IoError(fmt::format("cannot listen for {} on {}:{}: {}", name_, where.host,
                                       where.port, ec.message()));
  }
  return Status::Ok();
}

tcp::endpoint TcpAcceptor::local_endpoint() const {
  boost::system::error_code ec;
  return acceptor_.local_endpoint(ec);
}

void TcpAcceptor::Start(OnAccept on_accept) {
  asio::co_spawn(acceptor_.get_executor(), AcceptLoop(std::move(on_accept)), asio::detached);
}

void TcpAcceptor::Stop() {
  asio::post(acceptor_.get_executor(), [this] {
    boost::system::error_code ec;
    acceptor_.close(ec);
  });
}

asio::awaitable<void> TcpAcceptor::AcceptLoop(OnAccept on_accept) {
  for (;;) {
    boost::system::error_code ec;
    tcp::socket socket = co_await acceptor_.async_accept(
        asio::make_strand(ioc_), asio::redirect_error(asio::use_awaitable, ec));
    if (ec == asio::error::operation_aborted || !acceptor_.is_open()) co_return;
    if (ec) {
      log_.Error("accept_failed", {{"listener", name_}, {"error", ec.message()}});
      asio::steady_timer pause(acceptor_.get_executor(), std::chrono::milliseconds(100));
      co_await pause.async_wait(asio::redirect_error(asio::use_awaitable, ec));
      continue;
    }
    socket.set_option(tcp::no_delay(true), ec);
    on_accept(std::move(socket));
  }
}

}  // namespace dashcam::server
