// Tests for api/event_format.h's text form: the one line per event of
// format=text on search, export and tail.
#include "api/event_format.h"

#include <gtest/gtest.h>

namespace dashcam::api {
namespace {

std::string Line(std::string source, std::string level = "INFO") {
  storage::StoredEvent ev;
  ev.ts_ms = 1795947795123;  // 2026-11-29T10:23:15.123Z
  ev.level = std::move(level);
  ev.source = std::move(source);
  std::string out;
  EventFormatter f(EventFormat::kText, {});
  f.Append(ev, out);
  return out;
}

TEST(EventTextTest, TimestampLevelHostMessage) {
  EXPECT_EQ(Line(R"({"message":"CUDA OOM","host":{"name":"gpu-07"}})", "ERROR"),
            "2026-11-29T10:23:15.123Z ERROR gpu-07 CUDA OOM\n");
  EXPECT_EQ(Line(R"({"msg":"x","host":{"hostname":"h2"}})"),
            "2026-11-29T10:23:15.123Z INFO h2 x\n");
  EXPECT_EQ(Line(R"({"message":"x","host":"h3"})"), "2026-11-29T10:23:15.123Z INFO h3 x\n");
  EXPECT_EQ(Line(R"({"message":"x","host":{"name":"a","hostname":"b"}})"),
            "2026-11-29T10:23:15.123Z INFO a x\n");
  EXPECT_EQ(Line(R"({"message":"x"})", ""), "2026-11-29T10:23:15.123Z - - x\n");
}

TEST(EventTextTest, OneLineWhateverTheMessageHolds) {
  EXPECT_EQ(Line(R"({"message":"a\nb\r\nc\\d\te\u0001\u001b[31m"})"),
            "2026-11-29T10:23:15.123Z INFO - a\\nb\\r\\nc\\\\d\\te\\x01\\x1b[31m\n");
  // A C1 control character (U+009B, a terminal's CSI) is escaped too.
  EXPECT_EQ(Line(R"({"message":"a\u009b2J"})"), "2026-11-29T10:23:15.123Z INFO - a\\u009b2J\n");
  // No message: the document itself.
  EXPECT_EQ(Line(R"({"step":1})"), "2026-11-29T10:23:15.123Z INFO - {\"step\":1}\n");
}

}  // namespace
}  // namespace dashcam::api
