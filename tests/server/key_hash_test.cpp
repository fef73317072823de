// Unit tests of server/key_hash.h: PBKDF2 against RFC 7914's test vector,
// salting, verification, base64 both ways, generated keys.
#include "server/key_hash.h"

#include <set>

#include <gtest/gtest.h>

namespace dashcam::server {
namespace {

std::string Hex(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += kDigits[c >> 4];
    out += kDigits[c & 15];
  }
  return out;
}

TEST(KeyHashTest, Pbkdf2MatchesRfc7914Vector) {
  // RFC 7914 §11: PBKDF2-HMAC-SHA256(P="passwd", S="salt", c=1, dkLen=64);
  // the first 32 bytes.
  EXPECT_EQ(Hex(Pbkdf2Sha256("passwd", "salt", 1)),
            "55ac046e56e3089fec1691c22544b605f94185216dde0465e68b9d57c20dacbc");
}

TEST(KeyHashTest, HashesAreSaltedAndVerifyOnlyTheKey) {
  const KeyHash a = HashKey("correct horse", kMinIterations);
  const KeyHash b = HashKey("correct horse", kMinIterations);
  EXPECT_EQ(a.salt.size(), kSaltBytes);
  EXPECT_EQ(a.hash.size(), kHashBytes);
  EXPECT_NE(a.salt, b.salt);
  EXPECT_NE(a.hash, b.hash);
  EXPECT_TRUE(VerifyKey("correct horse", a));
  EXPECT_TRUE(VerifyKey("correct horse", b));
  EXPECT_FALSE(VerifyKey("correct horsf", a));
  EXPECT_FALSE(VerifyKey("", a));
  KeyHash fewer = a;
  fewer.iterations = kMinIterations + 1;
  EXPECT_FALSE(VerifyKey("correct horse", fewer));
}

TEST(KeyHashTest, ConstantTimeEqualsComparesLengthAndBytes) {
  EXPECT_TRUE(ConstantTimeEquals("abc", "abc"));
  EXPECT_FALSE(ConstantTimeEquals("abc", "abd"));
  EXPECT_FALSE(ConstantTimeEquals("abc", "abcd"));
  EXPECT_TRUE(ConstantTimeEquals("", ""));
}

TEST(KeyHashTest, Base64RoundTripsAndRejectsMalformed) {
  // RFC 4648 §10.
  const std::pair<const char*, const char*> vectors[] = {{"", ""},
                                                         {"f", "Zg=="},
                                                         {"fo", "Zm8="},
                                                         {"foo", "Zm9v"},
                                                         {"foob", "Zm9vYg=="},
                                                         {"fooba", "Zm9vYmE="},
                                                         {"foobar", "Zm9vYmFy"}};
  for (const auto& [plain, encoded] : vectors) {
    EXPECT_EQ(Base64Encode(plain), encoded);
    EXPECT_EQ(Base64Decode(encoded), std::optional<std::string>(plain));
  }
  std::string all;
  for (int i = 0; i < 256; ++i) all += static_cast<char>(i);
  EXPECT_EQ(Base64Decode(Base64Encode(all)), all);
  for (const char* bad : {"Zg", "Zg=", "Z===", "Zm9v!A==", "Zg==Zg==", "Z=g=", "====", "Zm 9v"}) {
    EXPECT_FALSE(Base64Decode(bad).has_value()) << bad;
  }
}

TEST(KeyHashTest, GeneratedKeysAreLongUniqueAndHeaderSafe) {
  std::set<std::string> seen;
  for (int i = 0; i < 100; ++i) {
    const std::string k = GenerateKey();
    EXPECT_EQ(k.size(), 43u);
    EXPECT_EQ(
        k.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"),
        std::string::npos)
        << k;
    seen.insert(k);
  }
  EXPECT_EQ(seen.size(), 100u);
}

}  // namespace
}  // namespace dashcam::server
