#include "api/scoped_context.h"

#include <utility>

namespace dashcam::api {

ScopedApiContext::ScopedApiContext(const ApiContext& base, query::Node filter)
    : store_(base.store, std::move(filter)),
      // Every field of ApiContext, with the store swapped: a field added to
      // ApiContext belongs here too.
      ctx_{store_,   base.workers,        base.log,   base.query_timeout, base.es_version,
           base.now, base.context_scopes, base.tails, &store_.filter(),   base.training} {}

namespace {

// A stream that owns what the stream it wraps refers to. `keep_` is declared
// first so that it is destroyed last.
class KeepAliveStream final : public BodyStream {
 public:
  KeepAliveStream(std::unique_ptr<BodyStream> inner, std::shared_ptr<void> keep)
      : keep_(std::move(keep)), inner_(std::move(inner)) {}

  boost::asio::awaitable<Result<std::string>> Next() override { return inner_->Next(); }
  void Cancel() override { inner_->Cancel(); }
  void Drain() override { inner_->Drain(); }

 private:
  const std::shared_ptr<void> keep_;
  const std::unique_ptr<BodyStream> inner_;
};

}  // namespace

HttpAnswer KeepAliveWith(HttpAnswer answer, std::shared_ptr<void> keep) {
  if (auto* stream = std::get_if<StreamingResponse>(&answer)) {
    stream->body = std::make_unique<KeepAliveStream>(std::move(stream->body), std::move(keep));
  }
  return answer;
}

}  // namespace dashcam::api
