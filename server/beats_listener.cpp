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

#include "server/tls_byte_stream.h"

namespace dashcam::server {

namespace asio = boost::asio;
using asio::ip::tcp;

BeatsListener::BeatsListener(asio::io_context& ioc, ingest::BeatsContext& ctx, const TlsSetup* tls,
                             const Log& log)
    : ctx_(ctx), tls_(tls), acceptor_(ioc, "beats", log) {}

void BeatsListener::Start() {
  acceptor_.Start([this](tcp::socket socket) {
    if (draining_) return;  // accepted just as the drain began: closed unserved
    if (tls_ == nullptr) {
      Serve(std::make_unique<ingest::TcpByteStream>(std::move(socket)));
      return;
    }
    const auto executor = socket.get_executor();
    asio::co_spawn(executor, HandshakeThenServe(std::move(socket)), asio::detached);
  });
}

asio::awaitable<void> BeatsListener::HandshakeThenServe(tcp::socket socket) {
  auto stream = std::make_unique<TlsByteStream>(std::move(socket), *tls_);
  if (!co_await stream->Handshake()) co_return;
  // A drain that began during the handshake: nothing of the protocol was read.
  if (draining_) co_return;
  Serve(std::move(stream));
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

void BeatsListener::Serve(std::unique_ptr<ingest::ByteStream> stream) {
  auto session = std::make_shared<ingest::BeatsSession>(std::move(stream), ctx_);
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
