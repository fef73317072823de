// Tests for api/json_pretty.h.
#include "api/json_pretty.h"

#include <gtest/gtest.h>
#include <boost/json.hpp>

namespace dashcam::api {
namespace {

TEST(JsonPrettyTest, IndentsTwoSpacesPerLevel) {
  EXPECT_EQ(
      IndentJson(R"({"a":1,"b":[true,null],"c":{},"d":[]})"),
      "{\n  \"a\": 1,\n  \"b\": [\n    true,\n    null\n  ],\n  \"c\": {},\n  \"d\": []\n}\n");
  EXPECT_EQ(IndentJson("[]"), "[]\n");
  EXPECT_EQ(IndentJson(" { } "), "{}\n");
}

TEST(JsonPrettyTest, StringsAndNumbersPassThroughUnchanged) {
  const std::string doc =
      R"({"k:{[":"v,]}\" \\","n":1.50e+3,"u":"\u00e9 \"q\" {x}","deep":{"a":[{"b":"c"}]}})";
  const std::string pretty = IndentJson(doc);
  EXPECT_NE(pretty.find(R"("k:{[": "v,]}\" \\")"), std::string::npos) << pretty;
  EXPECT_NE(pretty.find("1.50e+3"), std::string::npos);
  EXPECT_EQ(boost::json::parse(pretty), boost::json::parse(doc));
}

TEST(JsonPrettyTest, MalformedInputDoesNotCrashAndStaysBounded) {
  for (const char* bad : {"{\"a", "]]]", "\"\\", "{\"a\":\"b\\\"", ":,,:"}) IndentJson(bad);
  const std::string deep(100000, '[');
  const std::string out = IndentJson(deep);
  EXPECT_LE(out.size(), deep.size() * 70);
}

TEST(JsonPrettyTest, WantsPrettyReadsTheQueryString) {
  EXPECT_TRUE(WantsPretty("/x?pretty"));
  EXPECT_TRUE(WantsPretty("/x?a=1&pretty=true"));
  EXPECT_TRUE(WantsPretty("/x?pretty=1"));
  EXPECT_FALSE(WantsPretty("/x?pretty=false"));
  EXPECT_FALSE(WantsPretty("/x"));
  EXPECT_FALSE(WantsPretty("/x?prettyish=1"));
  EXPECT_FALSE(WantsPretty("/x?q=pretty"));
}

}  // namespace
}  // namespace dashcam::api
