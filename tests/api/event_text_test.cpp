// Tests for api/event_text.h: the one-line form of an event.
#include "api/event_text.h"

#include <gtest/gtest.h>

namespace dashcam::api {
namespace {

std::string Line(std::string source, std::string level = "INFO") {
  storage::StoredEvent ev;
  ev.ts_ms = 1795947795123;  // 2026-11-29T10:23:15.123Z
  ev.level = std::move(level);
  ev.source = std::move(source);
  std::string out;
  EventLineFormatter f;
  f.Append(ev, out);
  return out;
}

TEST(EventTextTest, TimestampLevelHostMessage) {
  EXPECT_EQ(Line(R"({"message":"CUDA OOM","host":{"name":"gpu-07"}})", "ERROR"),
            "2026-11-29T10:23:15.123Z ERROR gpu-07 CUDA OOM\n");
  EXPECT_EQ(Line(R"({"msg":"x","host":{"hostname":"h2"}})"),
            "2026-11-29T10:23:15.123Z INFO h2 x\n");
  EXPECT_EQ(Line(R"({"message":"x","host":"h3"})"), "2026-11-29T10:23:15.123Z INFO h3 x\n");
  EXPECT_EQ(Line(R"({"message":"x"})", ""), "2026-11-29T10:23:15.123Z - - x\n");
}

TEST(EventTextTest, OneLineWhateverTheMessageHolds) {
  EXPECT_EQ(Line(R"({"message":"a\nb\r\nc\\d\te\u0001"})"),
            "2026-11-29T10:23:15.123Z INFO - a\\nb\\r\\nc\\\\d\te \n");
  // No message: the document itself.
  EXPECT_EQ(Line(R"({"step":1})"), "2026-11-29T10:23:15.123Z INFO - {\"step\":1}\n");
}

}  // namespace
}  // namespace dashcam::api
