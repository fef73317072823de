// Tests for storage/field_stats.h: counts per field and value (arrays once
// per document), types, ordering, and the memory budget.
#include "storage/field_stats.h"

#include <string>

#include <gtest/gtest.h>

namespace dashcam::storage {
namespace {

Field S(std::string name, std::string v) {
  return Field{std::move(name), Field::Type::kString, std::move(v), 0};
}
Field N(std::string name, std::string v) {
  return Field{std::move(name), Field::Type::kNumber, v, std::stod(v)};
}

DocumentView Doc(std::vector<Field> fields, std::optional<std::string> message = {}) {
  DocumentView d;
  d.fields = std::move(fields);
  d.message = std::move(message);
  return d;
}

const FieldSummary* Find(const FieldsSummary& s, const std::string& name) {
  for (const auto& f : s.fields) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

TEST(FieldStatsCollectorTest, CountsFieldsAndValues) {
  FieldStatsCollector c;
  c.Add(Doc({S("host", "a"), N("gpu", "1"), S("tags", "x"), S("tags", "x"), S("tags", "y")}, "m1"),
        "idx");
  c.Add(Doc({S("host", "a"), S("gpu", "1")}, "m1"), "idx");
  c.Add(Doc({S("host", "b")}), "");
  FieldsSummary s = c.Finish(1, true);
  EXPECT_EQ(s.events_read, 3u);
  EXPECT_TRUE(s.complete);
  ASSERT_EQ(s.fields.size(), 5u);
  EXPECT_EQ(s.fields[0].name, "host");    // 3 events
  EXPECT_EQ(s.fields[1].name, "_index");  // 2, ties by name
  EXPECT_EQ(s.fields[2].name, "gpu");
  EXPECT_EQ(s.fields[3].name, "message");
  EXPECT_EQ(s.fields[4].name, "tags");
  const FieldSummary* host = Find(s, "host");
  EXPECT_EQ(host->distinct, 2u);
  ASSERT_EQ(host->top.size(), 1u);
  EXPECT_EQ(host->top[0].text, "a");
  EXPECT_EQ(host->top[0].events, 2u);
  const FieldSummary* gpu = Find(s, "gpu");
  EXPECT_TRUE(gpu->has_number && gpu->has_string && !gpu->has_bool);
  EXPECT_EQ(gpu->top[0].events, 2u);  // 1 and "1" are the same text
  const FieldSummary* tags = Find(s, "tags");
  EXPECT_EQ(tags->events, 1u);
  EXPECT_EQ(tags->top[0].text, "x");
  EXPECT_EQ(tags->top[0].events, 1u);
}

TEST(FieldStatsCollectorTest, BudgetBoundsWhatIsTracked) {
  FieldStatsCollector c(FieldStatsCollector::Budget{2, 3, 1000});
  c.Add(Doc({S("a", "1"), S("a", "2"), S("b", "1")}), "");
  c.Add(Doc({S("a", "3"), S("a", "1"), S("c", "1")}), "");  // a:3 over the values budget
  FieldsSummary s = c.Finish(10, false);
  EXPECT_FALSE(s.complete);
  EXPECT_TRUE(s.fields_truncated);  // c never tracked
  ASSERT_EQ(s.fields.size(), 2u);
  const FieldSummary* a = Find(s, "a");
  EXPECT_EQ(a->events, 2u);
  EXPECT_EQ(a->distinct, 2u);
  EXPECT_FALSE(a->distinct_exact);
  EXPECT_EQ(a->top[0].text, "1");
  EXPECT_EQ(a->top[0].events, 2u);
  EXPECT_TRUE(Find(s, "b")->distinct_exact);

  FieldStatsCollector bytes(FieldStatsCollector::Budget{10, 100, 5});
  bytes.Add(Doc({S("a", "1234"), S("a", "56")}), "");
  EXPECT_EQ(bytes.Finish(10, true).fields[0].distinct, 1u);
}

}  // namespace
}  // namespace dashcam::storage
