// Fuzz target: the Beats protocol frame decoder (untrusted bytes from any TCP
// client). The input is fed in two pieces split at a position taken from the
// first byte, so partial-frame buffering is exercised too. Checks: no crash;
// an error is sticky; nothing is buffered beyond the limits.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "ingest/beats_frame_decoder.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  dashcam::ingest::BeatsFrameLimits limits;
  limits.max_event_bytes = 4096;
  limits.max_compressed_bytes = 1 << 16;
  dashcam::ingest::BeatsFrameDecoder decoder(limits);
  const std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  const std::size_t cut = bytes.empty() ? 0 : data[0] % (bytes.size() + 1);
  std::vector<dashcam::ingest::BeatsFrame> frames;
  const auto first = decoder.Feed(bytes.substr(0, cut), frames);
  const auto second = decoder.Feed(bytes.substr(cut), frames);
  if (!first.ok() && second.ok()) std::abort();  // errors must stick
  if (decoder.buffered_bytes() > limits.max_compressed_bytes + 64) std::abort();
  return 0;
}
