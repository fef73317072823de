// Tests for ingest/gzip.h: inflating gzip/zlib request bodies with a bound
// on the output.
#include "ingest/gzip.h"

#include <zlib.h>

#include <string>

#include <gtest/gtest.h>

#include "tests/common/http_client.h"

namespace dashcam::ingest {
namespace {

using dashcam::testing::Gzip;
using dashcam::testing::Zlib;

constexpr std::size_t kMiB = 1u << 20;

// Log-like text that compresses well but not trivially.
std::string SampleText(std::size_t bytes) {
  std::string s;
  for (int i = 0; s.size() < bytes; ++i) {
    s += "{\"message\":\"step " + std::to_string(i) + " loss " + std::to_string(i * 7 % 1000) +
         "\"}\n";
  }
  s.resize(bytes);
  return s;
}

void ExpectError(const Result<std::string>& r, StatusCode code, std::string_view mentions = "") {
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), code) << r.status().ToString();
  EXPECT_NE(r.status().message().find(mentions), std::string::npos) << r.status().message();
}

TEST(GzipTest, GzipRoundTrip) {
  for (std::size_t size : {std::size_t{0}, std::size_t{1}, std::size_t{4096}, 3 * kMiB}) {
    SCOPED_TRACE(size);
    const std::string data = SampleText(size);
    auto r = Inflate(Gzip(data), 8 * kMiB);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(*r, data);
  }
}

TEST(GzipTest, BinaryDataRoundTrip) {
  std::string data;
  for (int i = 0; i < 100'000; ++i) data.push_back(static_cast<char>((i * 2654435761u) >> 13));
  for (const std::string& compressed : {Gzip(data, 9), Zlib(data)}) {
    auto r = Inflate(compressed, kMiB);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(*r, data);
  }
}

TEST(GzipTest, ZlibRoundTrip) {
  const std::string data = SampleText(200'000);
  auto r = Inflate(Zlib(data), kMiB);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, data);
}

TEST(GzipTest, ConcatenatedMembers) {
  const std::string a = SampleText(10'000), b = "second member\n", c = SampleText(50'000);
  auto r = Inflate(Gzip(a) + Gzip(b) + Gzip(c), kMiB);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, a + b + c);
}

TEST(GzipTest, CorruptData) {
  const std::string good = Gzip(SampleText(100'000));
  std::string flipped = good;
  for (std::size_t i = 20; i < 40; ++i) flipped[i] = static_cast<char>(~flipped[i]);
  std::string bad_crc = good;
  bad_crc[bad_crc.size() - 6] ^= 0x55;  // inside the CRC-32 of the trailer
  const std::string cases[] = {
      "this is not compressed at all",
      std::string("\x1f\x8b\x09\x00", 4) + std::string(20, '\0'),  // unknown method
      flipped,
      bad_crc,
      good + "trailing garbage",
  };
  for (const std::string& input : cases) {
    SCOPED_TRACE(input.size());
    ExpectError(Inflate(input, 10 * kMiB), StatusCode::kInvalidArgument, "compressed body");
  }
}

TEST(GzipTest, TruncatedData) {
  const std::string good = Gzip(SampleText(100'000));
  for (std::size_t keep :
       {std::size_t{0}, std::size_t{5}, good.size() / 2, good.size() - 4, good.size() - 1}) {
    SCOPED_TRACE(keep);
    ExpectError(Inflate(good.substr(0, keep), 10 * kMiB), StatusCode::kInvalidArgument);
  }
  const std::string zlib = Zlib(SampleText(100'000));
  ExpectError(Inflate(zlib.substr(0, zlib.size() - 2), 10 * kMiB), StatusCode::kInvalidArgument,
              "truncated");
  ExpectError(Inflate(good.substr(0, good.size() / 2), 10 * kMiB), StatusCode::kInvalidArgument,
              "truncated");
}

TEST(GzipTest, OutputLimit) {
  const std::string data = SampleText(100'000);
  const std::string compressed = Gzip(data);
  auto exact = Inflate(compressed, data.size());
  ASSERT_TRUE(exact.ok()) << exact.status().ToString();
  EXPECT_EQ(*exact, data);
  ExpectError(Inflate(compressed, data.size() - 1), StatusCode::kTooLarge);
  ExpectError(Inflate(compressed, 0), StatusCode::kTooLarge);
  // The limit counts every member together.
  const std::string half = data.substr(0, 60'000);
  ExpectError(Inflate(Gzip(half) + Gzip(half), 100'000), StatusCode::kTooLarge);
}

TEST(GzipTest, ZipBombIsStoppedAtTheLimit) {
  const std::string zeros(10 * kMiB, '\0');
  for (const std::string& bomb : {Gzip(zeros, 9), Zlib(zeros)}) {
    ASSERT_LT(bomb.size(), 64u * 1024);  // small on the wire
    ExpectError(Inflate(bomb, kMiB), StatusCode::kTooLarge, "larger than 1048576 bytes");
  }
}

}  // namespace
}  // namespace dashcam::ingest
