// BeatsFrameDecoder: the client-to-server half of the Beats protocol
// (Lumberjack v2, Filebeat's `output.logstash`; PROTOCOLS.md section 2) as a
// pure, incremental decoder: feed it bytes as they arrive, in pieces of any
// size, and it hands back every frame that became complete. It does no I/O
// and keeps no clock.
//
// Frames (integers unsigned 32-bit big-endian, every frame starts with a
// version byte '2', or '1' for the old v1):
//   'W' count                 window: the next `count` events form a batch
//   'J' seq len <len bytes>   one event as a JSON object (v2 only)
//   'C' len <len bytes>       a zlib stream whose inflated bytes are more
//                             frames; decoded in place, one level deep only
//   'D' seq pairs (klen key vlen value) x pairs
//                             v1 event; becomes a JSON object of strings
// Window and event order (seq 1..count) is the session's business, not the
// decoder's.
//
// Every malformed input is an InvalidArgument Status naming the problem, and
// is detected as soon as the bytes that prove it have arrived (a length over
// the limit fails on its header, before any payload is buffered). Memory is
// bounded by the limits. No exceptions escape; no input crashes it.
//
// Thread-safety: none; one decoder per connection, used by one thread at a
// time.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "storage/status.h"

namespace dashcam::ingest {

struct BeatsFrameLimits {
  // Largest window count accepted. Default: go-lumber's 10000. REQUIRES: >= 1.
  std::size_t max_window = 10000;
  // Largest `J` payload, and largest sum of a `D` frame's keys and values.
  // Default: 1 MiB.
  std::size_t max_event_bytes = 1u << 20;
  // Largest `C` payload, and largest size it may inflate to. Default: 64 MiB.
  std::size_t max_compressed_bytes = 64u << 20;
  // Most key/value pairs in one `D` frame. Default: 1000 (the document field limit).
  std::size_t max_data_pairs = 1000;
};

struct BeatsFrame {
  enum class Type : std::uint8_t {
    kWindow,  // `count` is set
    kJson,    // `seq` and `json` (the payload as sent) are set
    kData,    // `seq` and `json` (the v1 pairs as a JSON object text) are set
  };
  Type type = Type::kWindow;
  char version = '2';  // the frame's version byte: '1' or '2'
  std::uint32_t count = 0;
  std::uint32_t seq = 0;
  std::string json;

  bool operator==(const BeatsFrame&) const = default;
};

class BeatsFrameDecoder {
 public:
  explicit BeatsFrameDecoder(BeatsFrameLimits limits = {}) : limits_(limits) {}

  // Takes the next bytes of the stream and appends every frame completed by
  // them to `out`, in stream order (a compressed frame's contents in its
  // place). On error, the frames before the bad one are still appended, and
  // the decoder stays failed: every later call returns the same error.
  Status Feed(std::string_view bytes, std::vector<BeatsFrame>& out);

  // Bytes held of a frame not yet complete (0 between frames).
  std::size_t buffered_bytes() const { return buffer_.size(); }

 private:
  // A decode step: `consumed` > 0 means one frame was decoded; 0 means
  // more input is needed, at least `need` bytes in all.
  struct Step {
    std::size_t consumed = 0;
    std::size_t need = 0;
  };

  Result<Step> DecodeOne(std::string_view data, int depth, std::vector<BeatsFrame>& out) const;
  Result<Step> DecodeJson(std::string_view data, std::vector<BeatsFrame>& out) const;
  Result<Step> DecodeCompressed(std::string_view data, int depth,
                                std::vector<BeatsFrame>& out) const;
  Result<Step> DecodeData(std::string_view data, std::vector<BeatsFrame>& out) const;
  // Decodes every frame of `data`, which must hold whole frames only.
  Status DecodeInflated(std::string_view data, std::vector<BeatsFrame>& out) const;
  // Decodes the frames at the start of `data`; returns the bytes used.
  Result<std::size_t> DecodeAvailable(std::string_view data, std::vector<BeatsFrame>& out);

  const BeatsFrameLimits limits_;
  std::string buffer_;    // the start of an incomplete frame
  std::size_t need_ = 0;  // do not retry before buffer_ holds this many bytes
  Status error_;          // sticky
};

// The server's answer `version 'A' seq`: the window's events up to `seq` are
// durable (seq 0 while still busy: a keepalive).
std::array<char, 6> EncodeBeatsAck(std::uint32_t seq, char version = '2');

}  // namespace dashcam::ingest
