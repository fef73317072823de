// ScopedApiContext: the ApiContext of one request whose caller may see only
// the events matching a row filter (a read API key's `filter`). Its `store`
// is a storage::FilteredEventStore over the server's store, so every handler
// that reads through ctx.store (search, histogram, fields, context and its
// anchor lookup, export, the Elasticsearch _search/_count and their
// aggregations, tail's query check) is restricted without knowing it; its
// `row_filter` is set for the one reader that does not go through the store,
// the live tail hub (tail_handler.cpp ANDs it into the subscription's query).
//
// The router makes one per request of a filtered key and keeps it alive as
// long as the answer (a stream holds the context it was created with).
//
// Thread-safety: immutable after construction, like the ApiContext it copies.
#pragma once

#include <memory>

#include "api/body_stream.h"
#include "api/search_handler.h"
#include "storage/filtered_event_store.h"

namespace dashcam::api {

class ScopedApiContext {
 public:
  // `base` and the store it names must outlive this object.
  ScopedApiContext(const ApiContext& base, query::Node filter);
  ScopedApiContext(const ScopedApiContext&) = delete;
  ScopedApiContext& operator=(const ScopedApiContext&) = delete;

  ApiContext& ctx() { return ctx_; }

 private:
  storage::FilteredEventStore store_;
  ApiContext ctx_;  // ctx_.store is store_
};

// `answer` holding `keep` alive until its body stream (if any) is destroyed;
// a complete response is returned as is.
HttpAnswer KeepAliveWith(HttpAnswer answer, std::shared_ptr<void> keep);

}  // namespace dashcam::api
