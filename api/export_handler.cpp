#include "api/export_handler.h"

#include <algorithm>
#include <atomic>
#include <string>

#include <boost/beast/http/field.hpp>

#include "api/event_format.h"
#include "api/query_params.h"
#include "api/stream_params.h"
#include "storage/async.h"
#include "storage/partition.h"

namespace dashcam::api {
namespace {

// A page is at most 2000 events or 1 MiB of documents, and a piece (one
// chunk on the wire) about 256 KiB of output: memory per export is bounded
// by those whatever the size of the result. Each page costs the ClickHouse
// store three round trips and a read of whole granules of documents, so
// pages are not smaller: 500 events a page exported 9 100 events/s from it
// and 2000 20 000 (300 000 bench events; SQLite's rate did not change);
// 256 KiB took 150 s to export 40 MB of 16 KiB events, 1 MiB 44 s.
constexpr std::size_t kPageEvents = 2000;
constexpr std::size_t kMinPageEvents = 16;
constexpr std::size_t kPageBytes = 1u << 20;
constexpr std::size_t kPieceBytes = 256u << 10;

const char* ContentType(EventFormat f) {
  switch (f) {
    case EventFormat::kCsv:
      return "text/csv; charset=utf-8; header=present";
    case EventFormat::kText:
      return "text/plain; charset=utf-8";
    default:
      return "application/x-ndjson";
  }
}

// The body of one export: pages of a key-range scan, formatted into pieces.
// Produce() runs on the worker pool, one call at a time.
class ExportStream final : public BodyStream {
 public:
  ExportStream(ApiContext& ctx, query::Node query, const StreamParams& p)
      : ctx_(ctx),
        query_(std::move(query)),
        formatter_(p.format, p.columns),
        preamble_(formatter_.Preamble()),
        start_(storage::Clock::now()) {
    req_.query = &query_;
    req_.lo = storage::FirstKeyAt(p.from);
    req_.hi = storage::FirstKeyAt(p.to) - 1;
    req_.ascending = p.ascending;
    req_.limit = kPageEvents;
    req_.max_bytes = kPageBytes;
    req_.cancelled = &cancelled_;
  }

  ~ExportStream() override {
    const char* outcome = finished() ? "complete" : cancelled_ ? "cancelled" : "failed";
    const auto ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(storage::Clock::now() - start_);
    ctx_.log.Info(
        "export_ended",
        {{"outcome", outcome}, {"events", events_}, {"ms", static_cast<std::int64_t>(ms.count())}});
  }

  // The next piece: the preamble first, then formatted events; "" once
  // every match has been produced.
  Result<std::string> Produce() {
    std::string out = std::exchange(preamble_, {});
    while (out.size() < kPieceBytes) {
      if (next_ == page_.size()) {
        if (done_) break;
        if (auto s = FetchPage(); !s.ok()) return s;
        if (page_.empty()) break;
      }
      formatter_.Append(page_[next_++], out);
      ++events_;
    }
    return out;
  }

  void SetFirst(std::string piece) { first_ = std::move(piece); }

  boost::asio::awaitable<Result<std::string>> Next() override {
    if (!first_.empty()) co_return std::exchange(first_, {});
    if (finished()) co_return std::string();
    co_return co_await storage::RunBlocking(ctx_.workers, [this] { return Produce(); });
  }
  void Cancel() override { cancelled_ = true; }
  void Drain() override {}  // an export is a request in flight: it finishes

 private:
  bool finished() const { return done_ && next_ == page_.size() && first_.empty(); }

  Status FetchPage() {
    req_.deadline = storage::Clock::now() + ctx_.query_timeout;
    auto page = ctx_.store.Scan(req_);
    if (!page.ok()) return page.status();
    page_ = std::move(page->events);
    next_ = 0;
    done_ = !page->more;
    if (!page_.empty()) {
      const storage::EventKey last = page_.back().key;
      (req_.ascending ? req_.lo : req_.hi) = req_.ascending ? last + 1 : last - 1;
    }
    // Large events fill the byte budget long before the event limit, and a
    // store may read the limit's worth of rows to find the cut (ClickHouse
    // read 500 documents of 16 KiB, twice, for each page of 16): ask for
    // about what the last page held.
    req_.limit = std::clamp<std::size_t>(2 * page_.size(), kMinPageEvents, kPageEvents);
    return Status::Ok();
  }

  ApiContext& ctx_;
  const query::Node query_;  // req_.query points here
  EventFormatter formatter_;
  storage::ScanRequest req_;
  std::atomic<bool> cancelled_{false};
  std::string preamble_;  // csv's header row, until produced
  std::string first_;     // produced before the answer was committed to
  std::vector<storage::StoredEvent> page_;
  std::size_t next_ = 0;  // of page_, the next event to format
  bool done_ = false;     // no page after page_
  std::uint64_t events_ = 0;
  const storage::Clock::time_point start_;
};

}  // namespace

boost::asio::awaitable<HttpAnswer> HandleExport(HttpRequest req, ApiContext& ctx) {
  const TimeMs now = ctx.now();
  auto params = ParseStreamParams(req.target(), now, StreamEndpoint::kExport);
  if (auto* reason = std::get_if<std::string>(&params)) co_return BadParamResponse(req, *reason);
  const StreamParams& p = std::get<StreamParams>(params);
  auto parsed = ParseRequestQuery(p.q, now);
  if (auto* err = std::get_if<QueryError>(&parsed)) co_return QueryErrorResponse(req, *err);

  auto stream = std::make_unique<ExportStream>(ctx, std::move(std::get<query::Node>(parsed)), p);
  // The first page is read before answering, so that a query the store
  // rejects or that times out still gets a status code.
  ExportStream& s = *stream;
  auto first = co_await storage::RunBlocking(ctx.workers, [&s] { return s.Produce(); });
  if (!first.ok()) co_return StorageErrorResponse(req, first.status());
  stream->SetFirst(std::move(*first));

  StreamingResponse res;
  res.header = {http::status::ok, req.version()};
  res.header.set(http::field::content_type, ContentType(p.format));
  res.header.set(http::field::cache_control, "no-store");
  res.header.set("X-Content-Type-Options", "nosniff");
  if (p.format == EventFormat::kCsv) {
    res.header.set(http::field::content_disposition, "attachment; filename=\"dashcam-export.csv\"");
  }
  res.body = std::move(stream);
  co_return std::move(res);
}

}  // namespace dashcam::api
