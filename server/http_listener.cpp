#include "server/http_listener.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>

namespace dashcam::server {

namespace asio = boost::asio;
using asio::ip::tcp;

HttpListener::HttpListener(asio::io_context& ioc, Router& router, const HttpLimits& limits,
                           SessionRegistry& registry, const TlsSetup* tls, const Log& log)
    : acceptor_(ioc, "http", log),
      router_(router),
      limits_(limits),
      registry_(registry),
      tls_(tls),
      log_(log) {}

void HttpListener::Start() {
  acceptor_.Start([this](tcp::socket socket) { Serve(std::move(socket)); });
}

namespace {

template <class Session>
void Launch(std::shared_ptr<Session> session, SessionRegistry& registry) {
  registry.Add(session);
  asio::co_spawn(
      session->executor(), [session]() { return session->Run(); }, asio::detached);
}

}  // namespace

void HttpListener::Serve(tcp::socket socket) {
  if (tls_ != nullptr) {
    Launch(std::make_shared<TlsHttpSession>(std::move(socket), tls_, router_, limits_, registry_,
                                            log_),
           registry_);
  } else {
    Launch(std::make_shared<PlainHttpSession>(std::move(socket), nullptr, router_, limits_,
                                              registry_, log_),
           registry_);
  }
}

}  // namespace dashcam::server
