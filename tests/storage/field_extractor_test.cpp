// Tests for storage/field_extractor.h, against DocumentReader as the
// reference: both must see the same values for a field.
#include "storage/field_extractor.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "storage/document_reader.h"
#include "tests/common/training_log_generator.h"

namespace dashcam::storage {
namespace {

std::vector<std::string> Texts(const FieldExtractor& x, std::size_t i) {
  std::vector<std::string> out;
  for (const auto& v : x.values(i)) out.emplace_back(v.text);
  return out;
}

std::vector<std::string> ReaderTexts(const DocumentView& doc, const std::string& name) {
  std::vector<std::string> out;
  for (const Field& f : doc.fields) {
    if (f.name == name) out.push_back(f.text);
  }
  return out;
}

TEST(FieldExtractorTest, NestedDottedArraysAndTypes) {
  FieldExtractor x({"host.name", "a.b", "n", "flag", "message", "@timestamp", "missing"});
  ASSERT_TRUE(x.Extract(R"({"@timestamp":"2026-11-29T00:00:00Z","message":"hi",
      "host":{"name":"h1","ip":"1.2.3.4"},"host.name":"h2",
      "a":[{"b":1},{"b":[2.50,null]},{"c":3}],"n":-7,"flag":true,"skip":{"deep":[1,2,{"x":1}]}})")
                  .ok());
  EXPECT_EQ(Texts(x, 0), (std::vector<std::string>{"h1", "h2"}));
  EXPECT_EQ(Texts(x, 1), (std::vector<std::string>{"1", "2.5"}));
  EXPECT_DOUBLE_EQ(x.values(1)[1].number, 2.5);
  EXPECT_EQ(x.values(2).at(0).type, Field::Type::kNumber);
  EXPECT_EQ(Texts(x, 2), (std::vector<std::string>{"-7"}));
  EXPECT_EQ(x.values(3).at(0).type, Field::Type::kBool);
  EXPECT_EQ(Texts(x, 4), (std::vector<std::string>{"hi"}));
  EXPECT_TRUE(x.values(5).empty());  // never a field
  EXPECT_TRUE(x.values(6).empty());
  EXPECT_FALSE(x.Extract("{nope").ok());
  EXPECT_FALSE(x.Extract("[1]").ok());
}

TEST(FieldExtractorTest, AgreesWithDocumentReaderOnTrainingLogs) {
  dashcam::testing::GeneratorOptions opts;
  opts.seed = 7;
  dashcam::testing::TrainingLogGenerator gen(opts);
  const std::vector<std::string> names = {"host.name", "log.file.path", "gpu_id",
                                          "loss",      "user",          "log.level"};
  FieldExtractor x(names);
  DocumentReader reader;
  DocumentView view;
  for (int i = 0; i < 2000; ++i) {
    const std::string json = gen.Next().json;
    ASSERT_TRUE(reader.ReadUnpadded(json, view).ok());
    ASSERT_TRUE(x.Extract(json).ok()) << json;
    for (std::size_t n = 0; n < names.size(); ++n) {
      EXPECT_EQ(Texts(x, n), ReaderTexts(view, names[n])) << names[n] << " in " << json;
    }
  }
}

// MessageOf is the one copy of DocumentReader's message rule that readers
// of a few fields use (export's formats, patterns): same answer, including
// the corners a first-match reader gets wrong.
TEST(FieldExtractorTest, MessageOfIsDocumentReadersMessage) {
  std::vector<std::string> documents = {
      R"({"message":"m","msg":"x","log":"y"})",
      R"({"msg":"x","log":"y"})",
      R"({"log":"y"})",
      R"({"message":"first","n":1,"message":"second"})",  // a repeated key: the last
      R"({"message":5,"msg":"x"})",                       // a number is no message
      R"({"message":["a","b"]})",                         // an array: its last string
      R"({"message":{"text":"t"},"log":"l"})",            // an object is no message
      R"({"msg":[1,"p","q"],"log":"l"})",                 // msg: the first string
      R"({"skip":{"message":"no"},"log":{"file":"f"}})",  // nested: none
      R"({"a":1})",
  };
  dashcam::testing::GeneratorOptions opts;
  opts.seed = 11;
  dashcam::testing::TrainingLogGenerator gen(opts);
  for (int i = 0; i < 500; ++i) documents.push_back(gen.Next().json);

  FieldExtractor x(
      std::vector<std::string>(kMessageSourceNames.begin(), kMessageSourceNames.end()));
  DocumentReader reader;
  DocumentView view;
  for (const std::string& json : documents) {
    ASSERT_TRUE(reader.ReadUnpadded(json, view).ok()) << json;
    ASSERT_TRUE(x.Extract(json).ok()) << json;
    const auto message = MessageOf(x, 0);
    EXPECT_EQ(message.has_value(), view.message.has_value()) << json;
    if (message && view.message) {
      EXPECT_EQ(*message, *view.message) << json;
    }
  }
}

}  // namespace
}  // namespace dashcam::storage
