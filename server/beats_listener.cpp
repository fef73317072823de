#include "server/beats_listener.h"

#include <algorithm>
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

BeatsListener::BeatsListener(asio::io_context& ioc, ingest::BeatsContext& ctx, const Log& log)
    : ioc_(ioc), ctx_(ctx), log_(log), acceptor_(asio::make_strand(ioc)) {}

Status BeatsListener::Bind(const HostPort& where) {
  boost::system::error_code ec;
  const auto addr =
      asio::ip::make_address(where.host == "localhost" ? "127.0.0.1" : where.host, ec);
  if (ec) {
    return Status::InvalidArgument(
        fmt::format("bad Beats listen address '{}': {}", where.host, ec.message()));
  }
  const tcp::endpoint ep(addr, where.port);
  acceptor_.open(ep.protocol(), ec);
  if (!ec) acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor_.bind(ep, ec);
  if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return Status::IoError(
        fmt::format("cannot listen for Beats on {}:{}: {}", where.host, where.port, ec.message()));
  }
  return Status::Ok();
}

tcp::endpoint BeatsListener::local_endpoint() const {
  boost::system::error_code ec;
  return acceptor_.local_endpoint(ec);
}

void BeatsListener::Start() {
  asio::co_spawn(acceptor_.get_executor(), AcceptLoop(), asio::detached);
}

void BeatsListener::Stop() {
  asio::post(acceptor_.get_executor(), [this] {
    boost::system::error_code ec;
    acceptor_.close(ec);
  });
}

void BeatsListener::Drain() {
  draining_ = true;
  Stop();
  std::vector<std::shared_ptr<ingest::BeatsSession>> live;
  {
    std::lock_guard lock(mu_);
    for (auto& w : sessions_) {
      if (auto s = w.lock()) live.push_back(std::move(s));
    }
  }
  for (auto& s : live) asio::post(s->executor(), [s] { s->Drain(); });
}

std::size_t BeatsListener::active_sessions() const {
  std::lock_guard lock(mu_);
  return active_;
}

asio::awaitable<void> BeatsListener::AcceptLoop() {
  for (;;) {
    boost::system::error_code ec;
    tcp::socket socket = co_await acceptor_.async_accept(
        asio::make_strand(ioc_), asio::redirect_error(asio::use_awaitable, ec));
    if (ec == asio::error::operation_aborted || !acceptor_.is_open()) co_return;
    if (ec) {
      log_.Error("accept_failed", {{"listener", "beats"}, {"error", ec.message()}});
      asio::steady_timer pause(acceptor_.get_executor(), std::chrono::milliseconds(100));
      co_await pause.async_wait(asio::redirect_error(asio::use_awaitable, ec));
      continue;
    }
    if (draining_) continue;  // accepted just as the drain began: closed unserved
    socket.set_option(tcp::no_delay(true), ec);
    Serve(std::move(socket));
  }
}

void BeatsListener::Serve(tcp::socket socket) {
  auto session = std::make_shared<ingest::BeatsSession>(std::move(socket), ctx_);
  {
    std::lock_guard lock(mu_);
    sessions_.push_back(session);
    ++active_;
  }
  // The session may have been missed by a Drain() that ran just now.
  if (draining_) asio::post(session->executor(), [session] { session->Drain(); });
  asio::co_spawn(
      session->executor(),
      [this, session]() -> asio::awaitable<void> {
        co_await session->Run();
        Remove(session.get());
      },
      asio::detached);
}

void BeatsListener::Remove(const ingest::BeatsSession* s) {
  std::lock_guard lock(mu_);
  sessions_.erase(std::remove_if(sessions_.begin(), sessions_.end(),
                                 [s](const std::weak_ptr<ingest::BeatsSession>& w) {
                                   auto p = w.lock();
                                   return !p || p.get() == s;
                                 }),
                  sessions_.end());
  --active_;
}

}  // namespace dashcam::server
