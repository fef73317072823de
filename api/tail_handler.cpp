#include "api/tail_handler.h"

#include <boost/asio/this_coro.hpp>
#include <boost/beast/http/field.hpp>

#include "api/query_params.h"
#include "api/stream_params.h"
#include "api/tail_hub.h"
#include "storage/async.h"

namespace dashcam::api {
namespace {

constexpr std::chrono::seconds kTailWriteTimeout{10};

// The body of one tail: the subscription's pieces, until it ends.
class TailStream final : public BodyStream {
 public:
  TailStream(std::shared_ptr<TailSubscription> sub, std::chrono::milliseconds heartbeat,
             std::string opening)
      : sub_(std::move(sub)), heartbeat_(heartbeat), opening_(std::move(opening)) {}

  boost::asio::awaitable<Result<std::string>> Next() override {
    if (!opening_.empty()) co_return std::exchange(opening_, {});
    co_return co_await sub_->Next(heartbeat_);
  }
  void Cancel() override { sub_->Cancel(); }
  void Drain() override { sub_->End(TailSubscription::EndReason::kShutdown); }

 private:
  const std::shared_ptr<TailSubscription> sub_;
  const std::chrono::milliseconds heartbeat_;
  std::string opening_;
};

// The SSE comment that opens the stream, naming the query (one line).
std::string Opening(const StreamParams& p) {
  if (p.format != EventFormat::kSse) return {};
  std::string q = p.q.substr(0, 200);
  for (char& c : q) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return ": tail q=" + q + "\nretry: 5000\n\n";
}

}  // namespace

boost::asio::awaitable<HttpAnswer> HandleTail(HttpRequest req, ApiContext& ctx) {
  if (ctx.tails == nullptr) {
    co_return MakeErrorResponse(req, http::status::not_found, "not_found",
                                "live tail is not enabled on this server");
  }
  const TimeMs now = ctx.now();
  auto params = ParseStreamParams(req.target(), now, StreamEndpoint::kTail);
  if (auto* reason = std::get_if<std::string>(&params)) co_return BadParamResponse(req, *reason);
  const StreamParams& p = std::get<StreamParams>(params);
  auto parsed = ParseRequestQuery(p.q, now);
  if (auto* err = std::get_if<QueryError>(&parsed)) co_return QueryErrorResponse(req, *err);

  TailSubscription::Filter filter;
  filter.q = p.q;
  filter.query = std::move(std::get<query::Node>(parsed));
  if (ctx.row_filter != nullptr) {
    // The hub scans the whole store, not the filtered view: the row filter
    // goes into the subscription's own query.
    query::Node restricted{query::NodeKind::kAnd, 0, {}, {}, {}};
    restricted.children.push_back(*ctx.row_filter);
    restricted.children.push_back(std::move(filter.query));
    filter.query = std::move(restricted);
  }
  filter.share_key = (ctx.row_filter != nullptr ? "filtered\x1f" : "open\x1f") + p.q + "\x1f" +
                     query::DebugString(filter.query);
  filter.from = p.from;
  filter.to = p.to;
  filter.format = p.format;
  // A query the store cannot run is refused now rather than at the first
  // commit: a zero-row scan compiles it.
  storage::ScanRequest check;
  check.query = &filter.query;
  check.limit = 0;
  auto checked = co_await storage::RunBlocking(ctx.workers, [&] { return ctx.store.Scan(check); });
  if (!checked.ok()) co_return StorageErrorResponse(req, checked.status());

  auto strand = co_await boost::asio::this_coro::executor;
  auto sub = ctx.tails->Subscribe(std::move(filter), strand);
  if (!sub.ok()) {
    co_return MakeErrorResponse(req, http::status::too_many_requests, "too_many_tails",
                                sub.status().message());
  }
  StreamingResponse res;
  res.header = {http::status::ok, req.version()};
  res.header.set(http::field::content_type, p.format == EventFormat::kSse
                                                ? "text/event-stream; charset=utf-8"
                                                : "text/plain; charset=utf-8");
  res.header.set(http::field::cache_control, "no-cache");
  res.header.set("X-Accel-Buffering", "no");  // ask proxies not to hold events back
  res.body = std::make_unique<TailStream>(std::move(*sub), p.heartbeat, Opening(p));
  res.write_timeout = kTailWriteTimeout;
  co_return std::move(res);
}

}  // namespace dashcam::api
