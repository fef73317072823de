#include "server/http_listener.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>

namespace dashcam::server {

namespace asio = boost::asio;
using asio::ip::tcp;

HttpListener::HttpListener(asio::io_context& ioc, Router& router, const HttpLimits& limits,
                           SessionRegistry& registry, const Log& log)
    : acceptor_(ioc, "http", log),
      router_(router),
      limits_(limits),
      registry_(registry),
      log_(log) {}

void HttpListener::Start() {
  acceptor_.Start([this](tcp::socket socket) { Serve(std::move(socket)); });
}

void HttpListener::Serve(tcp::socket socket) {
  auto session =
      std::make_shared<HttpSession>(std::move(socket), router_, limits_, registry_, log_);
  registry_.Add(session);
  asio::co_spawn(
      session->executor(), [session]() { return session->Run(); }, asio::detached);
}

}  // namespace dashcam::server
