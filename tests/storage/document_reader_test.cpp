// Tests for storage/document_reader.h's KeepOnlyFields: a reader told to
// keep a few fields sees exactly those of the whole view, and the same
// message, level and timestamp.
#include "storage/document_reader.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/common/training_log_generator.h"

namespace dashcam::storage {
namespace {

// `all`'s fields named one of `kept` or under one (`host` keeps `host.name`).
std::vector<Field> Under(const std::vector<Field>& all, const std::vector<std::string>& kept) {
  std::vector<Field> out;
  for (const Field& f : all) {
    for (const std::string& k : kept) {
      if (f.name == k ||
          (f.name.starts_with(k) && f.name.size() > k.size() && f.name[k.size()] == '.')) {
        out.push_back(f);
        break;
      }
    }
  }
  return out;
}

void ExpectSameView(const DocumentView& want, const DocumentView& got, const std::string& doc) {
  ASSERT_EQ(want.fields.size(), got.fields.size()) << doc;
  for (std::size_t i = 0; i < want.fields.size(); ++i) {
    EXPECT_EQ(want.fields[i].name, got.fields[i].name) << doc;
    EXPECT_EQ(want.fields[i].text, got.fields[i].text) << doc;
    EXPECT_EQ(want.fields[i].type, got.fields[i].type) << doc;
  }
  EXPECT_EQ(want.message, got.message) << doc;
  EXPECT_EQ(want.level, got.level) << doc;
  EXPECT_EQ(want.timestamp, got.timestamp) << doc;
}

TEST(DocumentReaderTest, KeepOnlyFieldsReadsTheSameAsTheWholeView) {
  const std::vector<std::string> kept = {"host", "gpu_mem_mb", "a.b", "loss"};
  std::vector<std::string> docs = {
      R"({"@timestamp":"2026-11-29T00:00:00.5Z","msg":"m","level":"warn","host":{"name":"h",
          "ip":["1.2.3.4",{"v6":"::1"}]},"hostname":"no","a":[{"b":1,"c":2},{"b":{"d":true}}],
          "a.b":"dotted","skip":{"deep":[1,[2,{"gpu_mem_mb":9}]]},"gpu_mem_mb":-0.0})",
      R"({"log":{"level":"ERROR","file":{"path":"/p"}},"log.level":"x","message":["a","b"]})",
      R"({"@timestamp":1795947795123,"message":7,"msg":"m2","host.name":"dotted-host"})",
  };
  dashcam::testing::GeneratorOptions opts;
  opts.seed = 11;
  dashcam::testing::TrainingLogGenerator gen(opts);
  for (int i = 0; i < 500; ++i) docs.push_back(gen.Next().json);

  DocumentReader whole, few;
  few.KeepOnlyFields(kept);
  for (const std::string& doc : docs) {
    DocumentView all, some;
    ASSERT_TRUE(whole.ReadUnpadded(doc, all).ok()) << doc;
    ASSERT_TRUE(few.ReadUnpadded(doc, some).ok()) << doc;
    DocumentView want = all;
    want.fields = Under(all.fields, kept);
    ExpectSameView(want, some, doc);
  }
}

TEST(DocumentReaderTest, KeepOnlyFieldsCanBeUndone) {
  const std::string doc = R"({"message":"m","x":1,"y":{"z":"s"}})";
  DocumentReader reader;
  DocumentView view;
  reader.KeepOnlyFields(std::vector<std::string>{});
  ASSERT_TRUE(reader.ReadUnpadded(doc, view).ok());
  EXPECT_TRUE(view.fields.empty());
  EXPECT_EQ(view.message, "m");
  reader.KeepOnlyFields(std::nullopt);
  ASSERT_TRUE(reader.ReadUnpadded(doc, view).ok());
  EXPECT_EQ(view.fields.size(), 2u);
  EXPECT_FALSE(reader.ReadUnpadded("{bad", view).ok());
}

}  // namespace
}  // namespace dashcam::storage
