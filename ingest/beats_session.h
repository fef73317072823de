// BeatsSession: one Beats protocol connection (Filebeat's output.logstash;
// PROTOCOLS.md section 2), as coroutines on the connection's strand.
//
// What the client sees:
//   - A window's events are stored only once all `count` of them arrived
//     (seq 1..count, in order); then it is ACKed with `A count`, and only
//     after every event of it is committed (an ACK means durable). Windows
//     are ACKed in order; reading goes on meanwhile (pipelining), up to
//     `max_read_ahead` complete windows waiting.
//   - While a window waits, `A 0` is sent after every `keepalive` without a
//     write, so the client does not time out during a slow commit.
//   - When the store refuses (Overloaded), the append is retried after a
//     backoff while keepalives continue: a delayed ACK is the backpressure.
//     A full disk (NoSpace) is waited out the same way, however long.
//     Nothing is ever dropped; a store that keeps failing otherwise closes
//     the connection without the ACK, so the client resends.
//   - A protocol error (bad frame, events out of order, an event the
//     document parser rejects) logs one `beats_protocol_error` line and
//     closes the connection at once; what was ACKed stays, nothing of an
//     incomplete or broken window is stored.
//   - No complete frame for `idle_timeout` while no window waits (an idle or
//     too slow client): closed.
//   - Drain(): finishes and ACKs the windows already complete, then closes.
//     When the client closes its side, the same happens.
// ACKs carry the version byte of the window's `W` frame ('1' for v1 clients).
//
// Thread-safety: Run and Drain on the session's strand (executor()) only.
// BeatsMetrics may be read from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>

#include "ingest/beats_frame_decoder.h"
#include "ingest/byte_stream.h"
#include "ingest/document_parser.h"
#include "storage/event_store.h"
#include "storage/log.h"
#include "storage/metrics.h"

namespace dashcam::ingest {

struct BeatsOptions {
  std::size_t max_window = 10000;             // Default: go-lumber's limit. REQUIRES: >= 1
  std::size_t max_event_bytes = 1u << 20;     // one event's JSON. Default: 1 MiB
  std::chrono::seconds idle_timeout{60};      // see above. Default: 60 s
  std::chrono::milliseconds keepalive{2000};  // Default: 2 s (Filebeat waits 30 s)
  // One window's events in all, and one compressed frame before and after
  // inflating. Default: 64 MiB.
  std::size_t max_window_bytes = 64u << 20;
  // Complete windows waiting for their commit before reading pauses.
  // Default: 4 (Filebeat pipelines 2). REQUIRES: >= 1
  std::size_t max_read_ahead = 4;
};

// Counters for /metrics. Thread-safety: any thread.
struct BeatsMetrics {
  std::atomic<std::uint64_t> connections{0};         // accepted, ever
  std::atomic<std::uint64_t> active_connections{0};  // open now
  std::atomic<std::uint64_t> windows{0};             // ACKed
  std::atomic<std::uint64_t> events{0};              // ACKed
  std::atomic<std::uint64_t> protocol_errors{0};

  void RecordProtocolError(std::string_view reason);
  std::string last_protocol_error() const;

 private:
  mutable std::mutex mu_;
  std::string last_error_;  // guarded by mu_
};

// What a Beats session needs. Owned by the server; outlives every session.
struct BeatsContext {
  storage::EventStore& store;
  boost::asio::any_io_executor workers;  // frame decoding and document parsing
  ParserPool& parsers;
  const Log& log;
  BeatsOptions options;
  std::function<TimeMs()> now;  // wall clock, for events without @timestamp
  BeatsMetrics& metrics;
  // Where ACKed events are counted with the HTTP protocols' (ingest_metrics.h,
  // protocol="beats"). Default: null, not counted.
  Metrics* registry = nullptr;
};

class BeatsSession : public std::enable_shared_from_this<BeatsSession> {
 public:
  // `stream` is connected (and past any TLS handshake); its executor must be
  // a strand.
  BeatsSession(std::unique_ptr<ByteStream> stream, BeatsContext& ctx);
  ~BeatsSession();

  // Serves the connection; completes once it is closed and no commit of it
  // is in flight.
  boost::asio::awaitable<void> Run();
  // Stops taking windows: closes at once if none waits, else after they are
  // committed and ACKed. Idempotent.
  void Drain();
  boost::asio::any_io_executor executor() { return stream_->executor(); }

 private:
  struct Window;
  enum class Stored { kYes, kBadEvent, kFailed };
  struct StoreOutcome {
    Stored stored = Stored::kYes;
    Status status;
  };
  using Clock = std::chrono::steady_clock;

  boost::asio::awaitable<void> ReadLoop();
  boost::asio::awaitable<void> WaitForWake();
  Status OnFrame(BeatsFrame& frame);
  void QueueWindow(std::shared_ptr<Window> w);
  boost::asio::awaitable<void> CommitWindow(std::shared_ptr<Window> w);
  boost::asio::awaitable<StoreOutcome> StoreWindow(const Window& w);
  void AckCommitted();
  void QueueAck(std::uint32_t seq, char version);
  boost::asio::awaitable<void> Flush();
  boost::asio::awaitable<void> Tick();
  bool ReadAheadFull() const;
  void ProtocolError(std::string_view reason);
  void CloseAfterFlush();
  void Close();

  // Constant after construction.
  BeatsContext& ctx_;
  const std::unique_ptr<ByteStream> stream_;  // used on the strand only
  const std::string peer_;

  // On the strand only.
  boost::asio::steady_timer tick_;  // keepalive and idle checks
  boost::asio::steady_timer wake_;  // cancelled whenever state changes
  BeatsFrameDecoder decoder_;
  std::shared_ptr<Window> current_;              // being received
  std::deque<std::shared_ptr<Window>> pending_;  // complete, not ACKed; oldest first
  std::size_t pending_bytes_ = 0;
  std::size_t commits_in_flight_ = 0;
  std::string outbox_;  // ACK frames not yet written
  bool writing_ = false;
  bool draining_ = false;
  bool close_after_flush_ = false;
  bool closed_ = false;
  Clock::time_point last_progress_;  // a frame decoded, or the last window ACKed
  Clock::time_point last_signal_;    // a write, or a window started waiting
  Clock::time_point write_started_;
};

}  // namespace dashcam::ingest
