#include "ingest/beats_frame_decoder.h"

#include <exception>
#include <utility>

#include <fmt/format.h>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>

#include "ingest/gzip.h"

namespace dashcam::ingest {
namespace {

constexpr std::size_t kWindowFrameBytes = 6;  // '2' 'W' count
constexpr std::size_t kJsonHeaderBytes = 10;  // '2' 'J' seq len
constexpr std::size_t kCompressedHeader = 6;  // '2' 'C' len
constexpr std::size_t kDataHeaderBytes = 10;  // '1' 'D' seq pairs

std::uint32_t ReadU32(std::string_view data, std::size_t at) {
  const auto b = [&](std::size_t i) {
    return static_cast<std::uint32_t>(static_cast<unsigned char>(data[at + i]));
  };
  return b(0) << 24 | b(1) << 16 | b(2) << 8 | b(3);
}

// "'X' (0x58)" for a printable byte, "0x01" otherwise.
std::string DescribeByte(char c) {
  const auto u = static_cast<unsigned char>(c);
  if (u >= 0x21 && u <= 0x7e) return fmt::format("'{}' (0x{:02x})", c, u);
  return fmt::format("0x{:02x}", u);
}

Status Invalid(std::string msg) {
  return Status::InvalidArgument(std::move(msg));
}

}  // namespace

Status BeatsFrameDecoder::Feed(std::string_view bytes, std::vector<BeatsFrame>& out) {
  if (!error_.ok()) return error_;
  try {
    Result<std::size_t> used = std::size_t{0};
    if (buffer_.empty()) {
      // Common case: whole frames straight from the caller's bytes, no copy.
      used = DecodeAvailable(bytes, out);
      if (used.ok()) buffer_.assign(bytes.substr(*used));
    } else {
      buffer_.append(bytes);
      if (buffer_.size() < need_) return Status::Ok();
      used = DecodeAvailable(buffer_, out);
      if (used.ok()) buffer_.erase(0, *used);
    }
    if (!used.ok()) {
      error_ = used.status();
    } else if (need_ > buffer_.capacity()) {
      buffer_.reserve(need_);  // bounded by the limits: checked on the header
    }
  } catch (const std::exception& e) {
    error_ = Status::Internal(fmt::format("beats decoder: {}", e.what()));
  }
  if (!error_.ok()) {
    buffer_ = std::string();
    need_ = 0;
  }
  return error_;
}

Result<std::size_t> BeatsFrameDecoder::DecodeAvailable(std::string_view data,
                                                       std::vector<BeatsFrame>& out) {
  std::size_t pos = 0;
  need_ = 0;
  while (pos < data.size()) {
    auto step = DecodeOne(data.substr(pos), 0, out);
    if (!step.ok()) return step.status();
    if (step->consumed == 0) {
      need_ = step->need;
      break;
    }
    pos += step->consumed;
  }
  return pos;
}

Result<BeatsFrameDecoder::Step> BeatsFrameDecoder::DecodeOne(std::string_view data, int depth,
                                                             std::vector<BeatsFrame>& out) const {
  if (data.empty()) return Step{0, 1};
  const char version = data[0];
  if (version != '1' && version != '2') {
    return Invalid(fmt::format("unknown protocol version byte {}", DescribeByte(version)));
  }
  if (data.size() < 2) return Step{0, 2};
  switch (data[1]) {
    case 'W': {
      if (data.size() < kWindowFrameBytes) return Step{0, kWindowFrameBytes};
      const std::uint32_t count = ReadU32(data, 2);
      if (count == 0) return Invalid("window count is 0");
      if (count > limits_.max_window) {
        return Invalid(
            fmt::format("window count {} is over the limit of {}", count, limits_.max_window));
      }
      out.push_back(BeatsFrame{BeatsFrame::Type::kWindow, version, count, 0, {}});
      return Step{kWindowFrameBytes, 0};
    }
    case 'J':
      return DecodeJson(data, out);
    case 'C':
      return DecodeCompressed(data, depth, out);
    case 'D':
      return DecodeData(data, out);
    default:
      return Invalid(fmt::format("unknown frame type {}", DescribeByte(data[1])));
  }
}

Result<BeatsFrameDecoder::Step> BeatsFrameDecoder::DecodeJson(std::string_view data,
                                                              std::vector<BeatsFrame>& out) const {
  if (data[0] == '1') return Invalid("JSON frame ('J') in protocol version 1");
  if (data.size() < kJsonHeaderBytes) return Step{0, kJsonHeaderBytes};
  const std::uint32_t seq = ReadU32(data, 2);
  const std::uint32_t len = ReadU32(data, 6);
  if (len == 0) return Invalid(fmt::format("JSON event seq {} has length 0", seq));
  if (len > limits_.max_event_bytes) {
    return Invalid(fmt::format("JSON event seq {} is {} bytes, over the limit of {}", seq, len,
                               limits_.max_event_bytes));
  }
  const std::size_t total = kJsonHeaderBytes + len;
  if (data.size() < total) return Step{0, total};
  out.push_back(BeatsFrame{BeatsFrame::Type::kJson, '2', 0, seq,
                           std::string(data.substr(kJsonHeaderBytes, len))});
  return Step{total, 0};
}

Result<BeatsFrameDecoder::Step> BeatsFrameDecoder::DecodeCompressed(
    std::string_view data, int depth, std::vector<BeatsFrame>& out) const {
  if (depth > 0) return Invalid("compressed frame inside a compressed frame");
  if (data.size() < kCompressedHeader) return Step{0, kCompressedHeader};
  const std::uint32_t len = ReadU32(data, 2);
  if (len == 0) return Invalid("compressed frame has length 0");
  if (len > limits_.max_compressed_bytes) {
    return Invalid(fmt::format("compressed frame of {} bytes is over the limit of {}", len,
                               limits_.max_compressed_bytes));
  }
  const std::size_t total = kCompressedHeader + len;
  if (data.size() < total) return Step{0, total};
  auto inflated = Inflate(data.substr(kCompressedHeader, len), limits_.max_compressed_bytes);
  if (!inflated.ok()) {
    if (inflated.status().code() == StatusCode::kTooLarge) {
      return Invalid(fmt::format("compressed frame inflates to more than {} bytes",
                                 limits_.max_compressed_bytes));
    }
    return Invalid(fmt::format("corrupt compressed frame ({})", inflated.status().message()));
  }
  if (auto s = DecodeInflated(*inflated, out); !s.ok()) return s;
  return Step{total, 0};
}

Status BeatsFrameDecoder::DecodeInflated(std::string_view data,
                                         std::vector<BeatsFrame>& out) const {
  std::size_t pos = 0;
  while (pos < data.size()) {
    auto step = DecodeOne(data.substr(pos), 1, out);
    if (!step.ok()) return step.status();
    if (step->consumed == 0) return Invalid("compressed frame ends inside a frame");
    pos += step->consumed;
  }
  return Status::Ok();
}

// v1 data frame. Scans the pairs from the start on every attempt; `need`
// makes the caller wait for the next missing piece, and the pair count is
// bounded, so a byte-at-a-time sender costs O(pairs) per pair.
Result<BeatsFrameDecoder::Step> BeatsFrameDecoder::DecodeData(std::string_view data,
                                                              std::vector<BeatsFrame>& out) const {
  if (data.size() < kDataHeaderBytes) return Step{0, kDataHeaderBytes};
  const std::uint32_t seq = ReadU32(data, 2);
  const std::uint32_t pairs = ReadU32(data, 6);
  if (pairs > limits_.max_data_pairs) {
    return Invalid(fmt::format("data frame seq {} has {} pairs, over the limit of {}", seq, pairs,
                               limits_.max_data_pairs));
  }
  std::vector<std::string_view> parts;  // key, value, key, value, ...
  parts.reserve(2 * std::size_t{pairs});
  std::size_t pos = kDataHeaderBytes, bytes = 0;
  for (std::size_t i = 0; i < 2 * std::size_t{pairs}; ++i) {
    if (data.size() < pos + 4) return Step{0, pos + 4};
    const std::uint32_t len = ReadU32(data, pos);
    pos += 4;
    bytes += len;
    if (bytes > limits_.max_event_bytes) {
      return Invalid(fmt::format("data frame seq {} is over the limit of {} bytes", seq,
                                 limits_.max_event_bytes));
    }
    if (data.size() < pos + len) return Step{0, pos + len};
    parts.push_back(data.substr(pos, len));
    pos += len;
  }
  boost::json::object object;
  for (std::size_t i = 0; i < parts.size(); i += 2) {
    object[parts[i]] = parts[i + 1];  // a repeated key keeps its last value
  }
  out.push_back(
      BeatsFrame{BeatsFrame::Type::kData, data[0], 0, seq, boost::json::serialize(object)});
  return Step{pos, 0};
}

std::array<char, 6> EncodeBeatsAck(std::uint32_t seq, char version) {
  return {version,
          'A',
          static_cast<char>(seq >> 24),
          static_cast<char>(seq >> 16),
          static_cast<char>(seq >> 8),
          static_cast<char>(seq)};
}

}  // namespace dashcam::ingest
