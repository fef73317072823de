// Tests for ingest/beats_frame_decoder.h: every frame type of the Beats
// protocol (PROTOCOLS.md section 2), fed whole and split at every byte
// boundary, and every malformed input as a clear InvalidArgument.
#include "ingest/beats_frame_decoder.h"

#include <zlib.h>

#include <random>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <boost/json.hpp>

#include "tests/common/http_client.h"

namespace dashcam::ingest {
namespace {

using dashcam::testing::Zlib;
using Type = BeatsFrame::Type;

std::string U32(std::uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8),
          static_cast<char>(v)};
}
std::string WindowFrame(std::uint32_t count, char version = '2') {
  return std::string{version, 'W'} + U32(count);
}
std::string JsonFrame(std::uint32_t seq, std::string_view json, char version = '2') {
  return std::string{version, 'J'} + U32(seq) + U32(static_cast<std::uint32_t>(json.size())) +
         std::string(json);
}
std::string CompressedFrame(std::string_view frames, char version = '2') {
  const std::string z = Zlib(frames, 3);
  return std::string{version, 'C'} + U32(static_cast<std::uint32_t>(z.size())) + z;
}
std::string DataFrame(std::uint32_t seq, const std::vector<std::pair<std::string, std::string>>& kv,
                      char version = '1') {
  std::string out =
      std::string{version, 'D'} + U32(seq) + U32(static_cast<std::uint32_t>(kv.size()));
  for (const auto& [k, v] : kv) {
    out += U32(static_cast<std::uint32_t>(k.size())) + k;
    out += U32(static_cast<std::uint32_t>(v.size())) + v;
  }
  return out;
}

struct Decoded {
  Status status;
  std::vector<BeatsFrame> frames;
};

// Feeds `bytes` in pieces cut at `cuts` (ascending offsets).
Decoded DecodeFrames(std::string_view bytes, std::vector<std::size_t> cuts = {},
                     BeatsFrameLimits limits = {}) {
  BeatsFrameDecoder decoder(limits);
  Decoded d;
  std::size_t from = 0;
  cuts.push_back(bytes.size());
  for (std::size_t to : cuts) {
    d.status = decoder.Feed(bytes.substr(from, to - from), d.frames);
    if (!d.status.ok()) break;
    from = to;
  }
  if (d.status.ok()) {
    EXPECT_EQ(decoder.buffered_bytes(), 0u) << "incomplete frame left";
  }
  return d;
}

Decoded DecodeByteByByte(std::string_view bytes, BeatsFrameLimits limits = {}) {
  std::vector<std::size_t> cuts;
  for (std::size_t i = 1; i < bytes.size(); ++i) cuts.push_back(i);
  return DecodeFrames(bytes, cuts, limits);
}

BeatsFrame W(std::uint32_t count, char version = '2') {
  return {Type::kWindow, version, count, 0, {}};
}
BeatsFrame J(std::uint32_t seq, std::string json) {
  return {Type::kJson, '2', 0, seq, std::move(json)};
}

TEST(BeatsFrameDecoder, ProtocolExampleBytes) {
  const std::string bytes(
      "\x32\x57\x00\x00\x00\x01"
      "\x32\x4a\x00\x00\x00\x01\x00\x00\x00\x10"
      R"({"message":"hi"})",
      32);
  const Decoded d = DecodeFrames(bytes);
  ASSERT_TRUE(d.status.ok()) << d.status.ToString();
  EXPECT_EQ(d.frames, (std::vector<BeatsFrame>{W(1), J(1, R"({"message":"hi"})")}));
}

TEST(BeatsFrameDecoder, EncodesAcks) {
  const auto ack = EncodeBeatsAck(1);
  EXPECT_EQ(std::string(ack.data(), ack.size()), std::string("\x32\x41\x00\x00\x00\x01", 6));
  const auto v1 = EncodeBeatsAck(0x01020304, '1');
  EXPECT_EQ(std::string(v1.data(), v1.size()), std::string("1A\x01\x02\x03\x04", 6));
}

TEST(BeatsFrameDecoder, CompressedFrameYieldsItsFramesInPlace) {
  const std::string bytes =
      WindowFrame(2) + CompressedFrame(JsonFrame(1, R"({"a":1})") + JsonFrame(2, R"({"b":2})")) +
      WindowFrame(1) + JsonFrame(1, R"({"c":3})");
  const Decoded d = DecodeFrames(bytes);
  ASSERT_TRUE(d.status.ok()) << d.status.ToString();
  EXPECT_EQ(d.frames, (std::vector<BeatsFrame>{W(2), J(1, R"({"a":1})"), J(2, R"({"b":2})"), W(1),
                                               J(1, R"({"c":3})")}));
}

TEST(BeatsFrameDecoder, V1DataFrameBecomesAJsonObjectOfStrings) {
  const std::string tricky = "say \"hi\" \\ \n\t\x01 caf\xc3\xa9";
  const std::string bytes =
      WindowFrame(2, '1') +
      CompressedFrame(
          DataFrame(1, {{"line", tricky}, {"host", "a"}, {"host", "b"}}) + DataFrame(2, {}), '1');
  const Decoded d = DecodeFrames(bytes);
  ASSERT_TRUE(d.status.ok()) << d.status.ToString();
  ASSERT_EQ(d.frames.size(), 3u);
  EXPECT_EQ(d.frames[0], W(2, '1'));
  EXPECT_EQ(d.frames[1].type, Type::kData);
  EXPECT_EQ(d.frames[1].version, '1');
  EXPECT_EQ(d.frames[1].seq, 1u);
  const boost::json::value v = boost::json::parse(d.frames[1].json);
  EXPECT_EQ(v.at("line").as_string(), tricky);
  EXPECT_EQ(v.at("host").as_string(), "b");  // a repeated key keeps its last value
  EXPECT_EQ(v.as_object().size(), 2u);
  EXPECT_EQ(d.frames[2].json, "{}");
}

// One stream with every frame type; any cut anywhere must give the same frames.
std::string MixedStream() {
  return WindowFrame(3) + JsonFrame(1, R"({"message":"one"})") +
         CompressedFrame(JsonFrame(2, R"({"message":"two"})") +
                         JsonFrame(3, R"({"message":"three"})")) +
         WindowFrame(1, '1') + DataFrame(1, {{"line", "four"}, {"offset", "42"}});
}

TEST(BeatsFrameDecoder, EverySplitGivesTheSameFrames) {
  const std::string bytes = MixedStream();
  const Decoded whole = DecodeFrames(bytes);
  ASSERT_TRUE(whole.status.ok()) << whole.status.ToString();
  ASSERT_EQ(whole.frames.size(), 6u);
  for (std::size_t i = 0; i <= bytes.size(); ++i) {
    for (std::size_t j = i; j <= bytes.size(); ++j) {
      const Decoded d = DecodeFrames(bytes, {i, j});
      ASSERT_TRUE(d.status.ok()) << "cuts " << i << "," << j << ": " << d.status.ToString();
      ASSERT_EQ(d.frames, whole.frames) << "cuts " << i << "," << j;
    }
  }
  const Decoded bytewise = DecodeByteByByte(bytes);
  ASSERT_TRUE(bytewise.status.ok());
  EXPECT_EQ(bytewise.frames, whole.frames);
}

struct Malformed {
  std::string name;
  std::string bytes;
  std::string reason;  // expected in the error message
};

std::vector<Malformed> MalformedCases() {
  const std::string zlib = Zlib(JsonFrame(1, R"({"message":"x"})"), 3);
  auto c_frame = [](std::string_view payload) {
    return std::string("2C") + U32(static_cast<std::uint32_t>(payload.size())) +
           std::string(payload);
  };
  return {
      {"unknown version", std::string("3W") + U32(1), "unknown protocol version byte '3'"},
      {"version byte zero", std::string("\0W", 2) + U32(1), "unknown protocol version byte 0x00"},
      {"unknown frame type", std::string("2X") + U32(1), "unknown frame type 'X'"},
      {"ack from the client", std::string("2A") + U32(1), "unknown frame type 'A'"},
      {"zero-length event", std::string("2J") + U32(1) + U32(0), "has length 0"},
      {"event over the limit", std::string("2J") + U32(1) + U32(101), "over the limit of 100"},
      {"window count 0", WindowFrame(0), "window count is 0"},
      {"window over the max", WindowFrame(10001), "window count 10001 is over the limit of 10000"},
      {"corrupt zlib", c_frame("this is not zlib"), "corrupt compressed frame"},
      {"truncated zlib", c_frame(zlib.substr(0, zlib.size() / 2)), "corrupt compressed frame"},
      {"zero-length compressed", std::string("2C") + U32(0), "compressed frame has length 0"},
      {"compressed over the limit", std::string("2C") + U32(5000), "over the limit of 4096"},
      {"compressed inside compressed", CompressedFrame(CompressedFrame(JsonFrame(1, "{}"))),
       "compressed frame inside a compressed frame"},
      {"compressed ends inside a frame", CompressedFrame(JsonFrame(1, "{}").substr(0, 7)),
       "compressed frame ends inside a frame"},
      {"compressed bomb", CompressedFrame(std::string(100000, ' ')), "inflates to more than 4096"},
      {"json frame in v1", JsonFrame(1, "{}", '1'), "version 1"},
      {"too many data pairs", std::string("1D") + U32(1) + U32(1001), "1001 pairs"},
      {"data over the limit", DataFrame(1, {{"k", std::string(100, 'v')}}),
       "over the limit of 100"},
  };
}

TEST(BeatsFrameDecoder, MalformedInputIsAClearErrorWholeOrByteByByte) {
  BeatsFrameLimits limits;
  limits.max_event_bytes = 100;
  limits.max_compressed_bytes = 4096;
  for (const Malformed& m : MalformedCases()) {
    SCOPED_TRACE(m.name);
    // Valid frames first: they come out, then the error.
    const std::string bytes = WindowFrame(1) + JsonFrame(1, "{}") + m.bytes;
    for (const Decoded& d : {DecodeFrames(bytes, {}, limits), DecodeByteByByte(bytes, limits)}) {
      EXPECT_EQ(d.status.code(), StatusCode::kInvalidArgument);
      EXPECT_NE(d.status.message().find(m.reason), std::string::npos) << d.status.message();
      EXPECT_EQ(d.frames, (std::vector<BeatsFrame>{W(1), J(1, "{}")}));
    }
  }
}

TEST(BeatsFrameDecoder, OversizedLengthsFailOnTheHeaderBeforeAnyPayload) {
  BeatsFrameLimits limits;
  limits.max_event_bytes = 100;
  limits.max_compressed_bytes = 4096;
  for (const std::string& header :
       {std::string("2J") + U32(1) + U32(0xffffffff), std::string("2C") + U32(0xffffffff),
        std::string("1D") + U32(1) + U32(1) + U32(0xfffffff0)}) {
    BeatsFrameDecoder decoder(limits);
    std::vector<BeatsFrame> out;
    EXPECT_EQ(decoder.Feed(header, out).code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(decoder.buffered_bytes(), 0u);
  }
}

TEST(BeatsFrameDecoder, AnErrorSticks) {
  BeatsFrameDecoder decoder;
  std::vector<BeatsFrame> out;
  const Status first = decoder.Feed("9", out);
  ASSERT_FALSE(first.ok());
  const Status again = decoder.Feed(WindowFrame(1), out);
  EXPECT_EQ(again.message(), first.message());
  EXPECT_TRUE(out.empty());
}

// Random mutations of a valid stream: any status is fine, a crash is not.
TEST(BeatsFrameDecoder, SurvivesRandomMutations) {
  const std::string valid = MixedStream();
  std::mt19937 rng(7);
  BeatsFrameLimits limits;
  limits.max_compressed_bytes = 1 << 16;
  for (int round = 0; round < 5000; ++round) {
    std::string bytes = valid;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips; ++f) bytes[rng() % bytes.size()] = static_cast<char>(rng());
    bytes.resize(rng() % (bytes.size() + 1));
    BeatsFrameDecoder decoder(limits);
    std::vector<BeatsFrame> out;
    std::size_t pos = 0;
    while (pos < bytes.size()) {
      const std::size_t n = 1 + rng() % 16;
      if (!decoder.Feed(std::string_view(bytes).substr(pos, n), out).ok()) break;
      pos += n;
    }
  }
}

}  // namespace
}  // namespace dashcam::ingest
