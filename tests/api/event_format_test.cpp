// Tests for api/event_format.h: the text form (the one line per event of
// format=text on search, export and tail), and that every format reads a
// document's message and fields as DocumentReader does.
#include "api/event_format.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "storage/document_reader.h"

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

// A csv cell by RFC 4180, as the csv format promises.
std::string CsvCell(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

// The csv row DocumentReader's view of `source` gives for `columns`: the
// message by its rule, each field's values joined with ", ".
std::string ReaderRow(const std::string& source, const std::vector<std::string>& columns) {
  storage::DocumentReader reader;
  storage::DocumentView view;
  if (!reader.ReadUnpadded(source, view).ok()) view = storage::DocumentView{};
  std::string row;
  for (const std::string& c : columns) {
    if (&c != &columns.front()) row += ',';
    std::string cell;
    if (c == "message") {
      cell = view.message.value_or("");
    } else {
      for (const storage::Field& f : view.fields) {
        if (f.name != c) continue;
        if (!cell.empty()) cell += ", ";
        cell += f.text;
      }
    }
    row += CsvCell(cell);
  }
  return row + "\r\n";
}

// The formats read only the fields they show, skipping the rest of the
// document; what they read must still be what DocumentReader reads.
TEST(EventColumnsTest, MessageAndFieldsAsDocumentReaderReadsThem) {
  const std::vector<std::string> columns = {"message", "msg", "log",  "host",         "host.name",
                                            "n",       "a.b", "flag", "log.file.path"};
  const std::vector<std::string> documents = {
      R"({"message":"m","msg":"x","log":"y"})",
      R"({"msg":"x","log":"y"})",
      R"({"log":"y"})",
      R"({"message":5,"msg":"x"})",        // a number is no message
      R"({"message":["a","b"]})",          // the last string
      R"({"msg":[1,"p","q"],"log":"l"})",  // the first string
      R"({"log":{"file":{"path":"/var/a,b.log"}},"msg":3})",
      R"({"host":"h","host.name":["n1","n2"],"n":[1,2.50,null,-0.0],"flag":false,
          "a":[{"b":true},{"b":"s,t"},{"c":1}],"a.b":"\"q\""})",
      R"({"skip":{"deep":[{"message":"no"},[1,{"x":"y"}]]},"message":"after"})",
      R"({"host":{"name":"gpu-07","ip":"10.0.0.7"},"message":"line\nbreak"})",
      R"({bad)",
      R"([1,2])",
  };
  EventFormatter csv(EventFormat::kCsv, columns);
  for (const std::string& source : documents) {
    storage::StoredEvent ev;
    ev.ts_ms = 1795947795123;
    ev.source = source;
    std::string out;
    csv.Append(ev, out);
    EXPECT_EQ(out, ReaderRow(source, columns)) << source;
  }
}

}  // namespace
}  // namespace dashcam::api
