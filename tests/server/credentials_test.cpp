// Unit tests of server/credentials.h: every accepted Authorization form and
// the malformed ones.
#include "server/credentials.h"

#include <gtest/gtest.h>

#include "server/key_hash.h"

namespace dashcam::server {
namespace {

TEST(CredentialsTest, AcceptedForms) {
  const std::string token = Base64Encode("filebeat-01:s3cr:et");
  for (const std::string& header :
       {"ApiKey " + token, "APIKEY " + token, "Basic " + token, "basic  " + token,
        std::string("Bearer filebeat-01:s3cr:et"), "Bearer " + token, "  ApiKey " + token + " "}) {
    auto parsed = ParseAuthorization(header);
    ASSERT_TRUE(std::holds_alternative<Credentials>(parsed)) << header;
    const auto& c = std::get<Credentials>(parsed);
    EXPECT_EQ(c.id, "filebeat-01") << header;
    EXPECT_EQ(c.key, "s3cr:et") << header;  // the key is everything after the first ':'
  }
}

TEST(CredentialsTest, MissingAndMalformed) {
  auto missing = ParseAuthorization("");
  ASSERT_TRUE(std::holds_alternative<CredentialsProblem>(missing));
  EXPECT_EQ(std::get<CredentialsProblem>(missing).error, CredentialsError::kMissing);
  for (const std::string& header :
       {std::string("ApiKey"), std::string("Digest abc"), std::string("ApiKey not*base64"),
        "ApiKey " + Base64Encode("no-colon"), "Basic " + Base64Encode(":key"),
        "Basic " + Base64Encode("id:"), std::string("Bearer :key"), std::string("Bearer id:"),
        std::string("Bearer opaque-token")}) {
    auto parsed = ParseAuthorization(header);
    ASSERT_TRUE(std::holds_alternative<CredentialsProblem>(parsed)) << header;
    const auto& p = std::get<CredentialsProblem>(parsed);
    EXPECT_EQ(p.error, CredentialsError::kMalformed) << header;
    EXPECT_FALSE(p.reason.empty());
  }
}

}  // namespace
}  // namespace dashcam::server
