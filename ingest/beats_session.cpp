#include "ingest/beats_session.h"

#include <algorithm>
#include <exception>
#include <numeric>
#include <string_view>
#include <utility>

#include <fmt/format.h>
#include <boost/asio/buffer.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include "ingest/ingest_metrics.h"
#include "storage/async.h"

namespace dashcam::ingest {

namespace asio = boost::asio;
using asio::ip::tcp;

namespace {

constexpr std::size_t kReadBytes = 64 * 1024;
constexpr auto kFirstBackoff = std::chrono::milliseconds(50);
constexpr auto kMaxBackoff = std::chrono::milliseconds(1000);
constexpr int kMaxStoreFailures = 5;  // failed commits (not refusals) before giving up

// (offset, size) of each event in a window's blob, by seq - 1.
using EventSpans = std::vector<std::pair<std::size_t, std::size_t>>;

auto Awaitable(boost::system::error_code& ec) {
  return asio::redirect_error(asio::use_awaitable, ec);
}

bool IsExpectedClose(const boost::system::error_code& ec) {
  return ec == asio::error::eof || ec == asio::error::connection_reset ||
         ec == asio::error::operation_aborted || ec == asio::error::bad_descriptor ||
         ec == asio::error::broken_pipe || ec == asio::error::not_connected;
}

// The index a Beats event would get from Logstash's default Elasticsearch
// output, `%{[@metadata][beat]}-%{[@metadata][version]}` ("filebeat-8.17.0"),
// so `_index:filebeat-*` finds events from both of Filebeat's outputs.
std::string IndexFromMetadata(const storage::Record& rec) {
  std::string_view beat, version;
  for (const storage::Field& f : rec.fields) {
    if (f.name == "@metadata.beat") beat = f.text;
    if (f.name == "@metadata.version") version = f.text;
  }
  if (beat.empty()) return "";
  return version.empty() ? std::string(beat) : fmt::format("{}-{}", beat, version);
}

// Filebeat's way to give an event an id (set by its add_id or fingerprint
// processors; its Elasticsearch output sends it as `_id`): `@metadata._id`,
// written with
// `@metadata.op_type` ("index" replaces; anything else creates). With an id,
// a window resent after a lost ACK replaces nothing and stores nothing twice.
void TakeIdFromMetadata(storage::Record& rec) {
  for (const storage::Field& f : rec.fields) {
    if (f.type != storage::Field::Type::kString) continue;
    if (f.name == "@metadata._id") rec.doc_id = f.text;
    if (f.name == "@metadata.op_type" && f.text == "index") rec.op = storage::WriteOp::kIndex;
  }
}

// Parses the events `which` (0-based) of a window. Runs on a worker thread.
// `blob` ends with simdjson padding.
Result<std::vector<storage::Record>> ParseEvents(std::string_view blob, const EventSpans& events,
                                                 const std::vector<std::uint32_t>& which,
                                                 ParserPool& parsers, TimeMs arrival) {
  auto parser = parsers.Acquire();
  std::vector<storage::Record> out;
  out.reserve(which.size());
  for (const std::uint32_t i : which) {
    const auto [offset, size] = events[i];
    auto rec = parser->Parse(blob.substr(offset, size), blob.size() - offset, arrival);
    if (!rec.ok()) {
      return Status::InvalidArgument(
          fmt::format("event seq {}: {}", i + 1, rec.status().message()));
    }
    rec->index = IndexFromMetadata(*rec);
    TakeIdFromMetadata(*rec);
    out.push_back(std::move(*rec));
  }
  return out;
}

}  // namespace

void BeatsMetrics::RecordProtocolError(std::string_view reason) {
  ++protocol_errors;
  std::lock_guard lock(mu_);
  last_error_.assign(reason);
}

std::string BeatsMetrics::last_protocol_error() const {
  std::lock_guard lock(mu_);
  return last_error_;
}

// A window being received, then waiting for its commit. Immutable once
// complete (commit coroutines read it on worker threads).
struct BeatsSession::Window {
  std::uint32_t count = 0;
  char version = '2';  // of its W frame; its ACKs use the same
  std::string blob;    // the events' JSON back to back, then simdjson padding
  EventSpans events;
  bool committed = false;  // on the strand only
};

BeatsSession::BeatsSession(std::unique_ptr<ByteStream> stream, BeatsContext& ctx)
    : ctx_(ctx),
      stream_(std::move(stream)),
      peer_(stream_->peer()),
      tick_(stream_->executor()),
      wake_(stream_->executor()),
      decoder_(BeatsFrameLimits{ctx.options.max_window, ctx.options.max_event_bytes,
                                ctx.options.max_window_bytes}) {}

BeatsSession::~BeatsSession() = default;

asio::awaitable<void> BeatsSession::Run() {
  ++ctx_.metrics.connections;
  ++ctx_.metrics.active_connections;
  last_progress_ = last_signal_ = Clock::now();
  ctx_.log.Debug("beats_connected", {{"peer", peer_}});
  asio::co_spawn(
      executor(), [self = shared_from_this()] { return self->Tick(); }, asio::detached);
  try {
    co_await ReadLoop();
  } catch (const std::exception& e) {
    ctx_.log.Error("beats_session_failed", {{"peer", peer_}, {"error", e.what()}});
    Close();
  }
  if (!closed_) Drain();  // the client closed its side: finish what is complete
  while (!closed_ || commits_in_flight_ > 0 || writing_) co_await WaitForWake();
  --ctx_.metrics.active_connections;
  ctx_.log.Debug("beats_closed", {{"peer", peer_}});
}

void BeatsSession::Drain() {
  if (closed_ || draining_) return;
  draining_ = true;
  if (pending_.empty()) CloseAfterFlush();
  wake_.cancel();  // a reader paused for read-ahead stops
}

asio::awaitable<void> BeatsSession::WaitForWake() {
  boost::system::error_code ec;
  wake_.expires_at(Clock::time_point::max());
  co_await wake_.async_wait(Awaitable(ec));
}

bool BeatsSession::ReadAheadFull() const {
  return pending_.size() >= ctx_.options.max_read_ahead ||
         pending_bytes_ >= ctx_.options.max_window_bytes;
}

// Reads until the connection closes, a protocol error, EOF or a drain.
asio::awaitable<void> BeatsSession::ReadLoop() {
  std::vector<char> buffer(kReadBytes);
  std::vector<BeatsFrame> frames;
  while (!closed_ && !draining_) {
    if (ReadAheadFull()) {
      co_await WaitForWake();
      continue;
    }
    boost::system::error_code ec;
    const std::size_t n = co_await stream_->ReadSome(asio::buffer(buffer), ec);
    if (closed_ || draining_) co_return;
    if (ec) {
      if (!IsExpectedClose(ec)) {
        ctx_.log.Debug("beats_read_failed", {{"peer", peer_}, {"error", ec.message()}});
      }
      co_return;
    }
    frames.clear();
    const std::string_view bytes(buffer.data(), n);
    // Inflating a compressed frame is real work: keep it off the I/O thread.
    const Status decoded = co_await storage::RunBlocking(
        ctx_.workers, [this, bytes, &frames] { return decoder_.Feed(bytes, frames); });
    if (closed_) co_return;
    for (BeatsFrame& frame : frames) {
      if (Status s = OnFrame(frame); !s.ok()) {
        ProtocolError(s.message());
        co_return;
      }
    }
    if (!decoded.ok()) {
      ProtocolError(decoded.message());
      co_return;
    }
  }
}

Status BeatsSession::OnFrame(BeatsFrame& frame) {
  last_progress_ = Clock::now();
  if (frame.type == BeatsFrame::Type::kWindow) {
    if (current_) {
      return Status::InvalidArgument(
          fmt::format("window frame after {} of the previous window's {} events",
                      current_->events.size(), current_->count));
    }
    current_ = std::make_shared<Window>();
    current_->count = frame.count;
    current_->version = frame.version;
    return Status::Ok();
  }
  if (!current_) {
    return Status::InvalidArgument(fmt::format("event seq {} outside a window", frame.seq));
  }
  Window& w = *current_;
  const std::size_t expected = w.events.size() + 1;
  if (frame.seq != expected) {
    return Status::InvalidArgument(
        fmt::format("event seq {} where seq {} was expected", frame.seq, expected));
  }
  if (w.blob.size() + frame.json.size() > ctx_.options.max_window_bytes) {
    return Status::InvalidArgument(fmt::format("window of {} events is over the limit of {} bytes",
                                               w.count, ctx_.options.max_window_bytes));
  }
  w.events.emplace_back(w.blob.size(), frame.json.size());
  w.blob += frame.json;
  if (w.events.size() == w.count) {
    w.blob.append(simdjson::SIMDJSON_PADDING, ' ');
    QueueWindow(std::move(current_));
  }
  return Status::Ok();
}

void BeatsSession::QueueWindow(std::shared_ptr<Window> w) {
  if (pending_.empty()) last_signal_ = Clock::now();  // keepalives count from here
  pending_bytes_ += w->blob.size();
  pending_.push_back(w);
  ++commits_in_flight_;
  asio::co_spawn(
      executor(), [self = shared_from_this(), w] { return self->CommitWindow(w); }, asio::detached);
}

asio::awaitable<void> BeatsSession::CommitWindow(std::shared_ptr<Window> w) {
  StoreOutcome outcome;
  try {
    outcome = co_await StoreWindow(*w);
  } catch (const std::exception& e) {
    outcome = {Stored::kFailed, Status::Internal(e.what())};
  }
  --commits_in_flight_;
  if (!closed_) {
    if (outcome.stored == Stored::kYes) {
      w->committed = true;
      AckCommitted();
    } else if (outcome.stored == Stored::kBadEvent) {
      ProtocolError(outcome.status.message());
    } else {
      ctx_.log.Error("beats_store_failed", {{"peer", peer_}, {"error", outcome.status.ToString()}});
      Close();
    }
  }
  wake_.cancel();
}

// Parses a window on the worker pool and appends it; retries refusals and
// failed records after a backoff. Nothing is appended unless every event of
// the window parses.
asio::awaitable<BeatsSession::StoreOutcome> BeatsSession::StoreWindow(const Window& w) {
  std::vector<std::uint32_t> todo(w.count);
  std::iota(todo.begin(), todo.end(), 0u);
  std::chrono::milliseconds backoff = kFirstBackoff;
  int failures = 0;
  asio::steady_timer pause(executor());
  for (;;) {
    auto records = co_await storage::RunBlocking(ctx_.workers, [this, &w, &todo] {
      return ParseEvents(w.blob, w.events, todo, ctx_.parsers, ctx_.now());
    });
    if (!records.ok()) co_return StoreOutcome{Stored::kBadEvent, records.status()};
    if (closed_) co_return StoreOutcome{Stored::kFailed, Status::Unavailable("connection closed")};
    const storage::AppendResult r = co_await storage::AsyncAppend(ctx_.store, std::move(*records));
    // A full disk is waited out like an overloaded queue, for as long as it
    // lasts: the ACK is delayed (keepalives go on) and the window retried.
    const bool no_space = r.status.code() == StatusCode::kNoSpace;
    if (r.outcomes.empty()) {
      if (r.status.code() != StatusCode::kOverloaded && !no_space)
        co_return StoreOutcome{Stored::kFailed, r.status};
      ctx_.log.Debug("beats_store_overloaded", {{"peer", peer_}});
    } else {
      std::vector<std::uint32_t> failed;
      for (std::size_t i = 0; i < r.outcomes.size(); ++i) {
        if (r.outcomes[i] == storage::RecordOutcome::kFailed) failed.push_back(todo[i]);
      }
      if (failed.empty()) co_return StoreOutcome{};
      if (!no_space &&
          (++failures > kMaxStoreFailures || r.status.code() == StatusCode::kUnavailable)) {
        co_return StoreOutcome{Stored::kFailed, r.status};
      }
      todo = std::move(failed);  // the others are stored: retry only these
    }
    boost::system::error_code ec;
    pause.expires_after(backoff);
    co_await pause.async_wait(Awaitable(ec));
    backoff = std::min(backoff * 2, kMaxBackoff);
    if (closed_) co_return StoreOutcome{Stored::kFailed, Status::Unavailable("connection closed")};
  }
}

void BeatsSession::AckCommitted() {
  while (!pending_.empty() && pending_.front()->committed) {
    const Window& w = *pending_.front();
    // Counted before the ACK goes out: a client that has it sees the counts.
    ++ctx_.metrics.windows;
    ctx_.metrics.events += w.count;
    if (ctx_.registry) CountIngested(*ctx_.registry, "beats", w.count, w.blob.size());
    QueueAck(w.count, w.version);
    pending_bytes_ -= w.blob.size();
    pending_.pop_front();
  }
  if (pending_.empty()) {
    last_progress_ = Clock::now();  // the idle clock restarts
    if (draining_) CloseAfterFlush();
  }
  wake_.cancel();  // a reader paused for read-ahead resumes
}

void BeatsSession::QueueAck(std::uint32_t seq, char version) {
  const auto frame = EncodeBeatsAck(seq, version);
  outbox_.append(frame.data(), frame.size());
  if (writing_) return;
  writing_ = true;  // one write in flight: Flush takes whatever queues meanwhile
  asio::co_spawn(
      executor(), [self = shared_from_this()] { return self->Flush(); }, asio::detached);
}

asio::awaitable<void> BeatsSession::Flush() {
  std::string out;
  while (!outbox_.empty() && !closed_) {
    out.swap(outbox_);
    outbox_.clear();
    write_started_ = Clock::now();
    boost::system::error_code ec;
    co_await stream_->Write(asio::buffer(out), ec);
    if (ec) {
      if (!closed_ && !IsExpectedClose(ec)) {
        ctx_.log.Debug("beats_write_failed", {{"peer", peer_}, {"error", ec.message()}});
      }
      Close();
      break;
    }
    last_signal_ = Clock::now();
  }
  writing_ = false;
  if (close_after_flush_) Close();
  wake_.cancel();
}

// Keepalives while a window waits; the write deadline; the idle deadline.
asio::awaitable<void> BeatsSession::Tick() {
  const auto& o = ctx_.options;
  const Clock::duration period =
      std::max<Clock::duration>(o.keepalive / 4, std::chrono::milliseconds(10));
  while (!closed_) {
    boost::system::error_code ec;
    tick_.expires_after(period);
    co_await tick_.async_wait(Awaitable(ec));
    if (closed_) break;
    const auto now = Clock::now();
    if (writing_) {
      if (now - write_started_ >= o.idle_timeout) {
        ctx_.log.Info("beats_write_timeout", {{"peer", peer_}});
        Close();
      }
    } else if (!pending_.empty()) {
      if (now - last_signal_ >= o.keepalive) QueueAck(0, pending_.front()->version);
    } else if (!draining_ && now - last_progress_ >= o.idle_timeout) {
      ctx_.log.Info("beats_idle_timeout",
                    {{"peer", peer_}, {"idle_timeout_s", std::int64_t{o.idle_timeout.count()}}});
      Close();
    }
  }
}

void BeatsSession::ProtocolError(std::string_view reason) {
  if (closed_) return;
  ctx_.metrics.RecordProtocolError(reason);
  ctx_.log.Warn("beats_protocol_error", {{"peer", peer_}, {"reason", reason}});
  Close();
}

void BeatsSession::CloseAfterFlush() {
  close_after_flush_ = true;
  if (!writing_) Close();
}

void BeatsSession::Close() {
  if (closed_) return;
  closed_ = true;
  stream_->Close();
  tick_.cancel();
  wake_.cancel();
  current_.reset();
  pending_.clear();  // commits in flight hold their own window
  pending_bytes_ = 0;
  outbox_.clear();
}

}  // namespace dashcam::ingest
