// Tests for ingest/document_parser.h: dashcam's event model, one JSON
// document -> one storage::Record.
#include "ingest/document_parser.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace dashcam::ingest {
namespace {

using storage::Field;
using storage::Record;

constexpr TimeMs kArrival = 1'700'000'000'000;
constexpr TimeMs kBase = 1'795'947'795'000;  // 2026-11-29T10:23:15Z

Result<Record> Parse(std::string_view json, DocumentLimits limits = {}) {
  DocumentParser parser(limits);
  const std::string padded = PadForParsing(json);
  return parser.Parse(std::string_view(padded.data(), json.size()), padded.size(), kArrival);
}

Record MustParse(std::string_view json) {
  auto r = Parse(json);
  EXPECT_TRUE(r.ok()) << json << ": " << r.status().ToString();
  return r.ok() ? std::move(*r) : Record{};
}

// "name=type:text" for each field, in order; type is s, n or b.
std::vector<std::string> Fields(const Record& r) {
  std::vector<std::string> out;
  for (const Field& f : r.fields) {
    const char t = f.type == Field::Type::kString   ? 's'
                   : f.type == Field::Type::kNumber ? 'n'
                                                    : 'b';
    out.push_back(f.name + "=" + t + ":" + f.text);
  }
  return out;
}

void ExpectInvalid(std::string_view json, std::string_view mentions, DocumentLimits limits = {}) {
  auto r = Parse(json, limits);
  ASSERT_FALSE(r.ok()) << json;
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << json;
  EXPECT_NE(r.status().message().find(mentions), std::string::npos)
      << json << ": " << r.status().message();
}

TEST(DocumentParserTest, TimestampForms) {
  struct Case {
    const char* json;
    TimeMs want;
  };
  const Case cases[] = {
      {R"({"@timestamp":"2026-11-29T10:23:15.123Z"})", kBase + 123},
      {R"({"@timestamp":"2026-11-29T18:23:15.123456+08:00"})", kBase + 123},
      {R"({"@timestamp":"2026-11-29 10:23:15"})", kBase},
      {R"({"@timestamp":1795947795123})", kBase + 123},
      {R"({"@timestamp":0})", 0},
      {R"({"@timestamp":"2199-12-31T23:59:59.999Z"})", kMaxEventTime - 1},
      {R"({"message":"no time"})", kArrival},
      {R"({"@timestamp":null})", kArrival},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.json);
    EXPECT_EQ(MustParse(c.json).ts_ms, c.want);
  }
}

TEST(DocumentParserTest, BadTimestampsAreRejected) {
  for (const char* json : {
           R"({"@timestamp":"yesterday"})",
           R"({"@timestamp":"2026-02-30T00:00:00Z"})",
           R"({"@timestamp":""})",
           R"({"@timestamp":"1969-12-31T23:59:59.999Z"})",
           R"({"@timestamp":"2200-01-01T00:00:00Z"})",
           R"({"@timestamp":-1})",
           R"({"@timestamp":7258118400000})",
           R"({"@timestamp":-0.5})",
           R"({"@timestamp":1e300})",
           R"({"@timestamp":-1e300})",
       }) {
    ExpectInvalid(json, "@timestamp");
  }
}

TEST(DocumentParserTest, MessagePrecedence) {
  struct Case {
    const char* json;
    const char* message;
  };
  const Case cases[] = {
      {R"({"message":"a","msg":"b","log":"c"})", "a"},
      {R"({"log":"c","msg":"b"})", "b"},
      {R"({"log":"c"})", "c"},
      {R"({"log":{"file":{"path":"/var/log/x"}}})", ""},
      {R"({"other":"x"})", ""},
      {R"({"message":"tab\tand \u663e\u5b58"})", "tab\tand 显存"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.json);
    EXPECT_EQ(MustParse(c.json).message, c.message);
  }
}

TEST(DocumentParserTest, MessageIsNotAFieldButMsgAndLogAre) {
  const Record r = MustParse(R"({"message":"m","msg":"b","log":"c","@timestamp":0})");
  EXPECT_EQ(r.message, "m");
  EXPECT_EQ(Fields(r), (std::vector<std::string>{"msg=s:b", "log=s:c"}));
}

TEST(DocumentParserTest, LevelPrecedence) {
  EXPECT_EQ(MustParse(R"({"level":"info","log":{"level":"ERROR"}})").level, "ERROR");
  EXPECT_EQ(MustParse(R"({"log.level":"warn","level":"info"})").level, "warn");
  EXPECT_EQ(MustParse(R"({"level":"debug"})").level, "debug");
  const Record numeric = MustParse(R"({"level":3})");
  EXPECT_EQ(numeric.level, "");
  EXPECT_EQ(Fields(numeric), (std::vector<std::string>{"level=n:3"}));
  EXPECT_EQ(Fields(MustParse(R"({"log":{"level":"ERROR"}})")),
            (std::vector<std::string>{"log.level=s:ERROR"}));
}

TEST(DocumentParserTest, FlattensObjectsAndArrays) {
  const Record r = MustParse(R"({
    "host": {"name": "gpu-01", "ip": ["10.0.0.1", "10.0.0.2"]},
    "tags": ["a", "b"],
    "procs": [{"pid": 1}, {"pid": 2, "cmd": "python"}],
    "matrix": [[1, 2], [3]],
    "ok": true, "bad": false,
    "nothing": null, "empty": {}, "none": [],
    "k\u00e9y": "v\u00e9"
  })");
  EXPECT_EQ(Fields(r),
            (std::vector<std::string>{
                "host.name=s:gpu-01", "host.ip=s:10.0.0.1", "host.ip=s:10.0.0.2", "tags=s:a",
                "tags=s:b", "procs.pid=n:1", "procs.pid=n:2", "procs.cmd=s:python", "matrix=n:1",
                "matrix=n:2", "matrix=n:3", "ok=b:true", "bad=b:false", "kéy=s:vé"}));
}

TEST(DocumentParserTest, NumbersAreCanonicalAndTyped) {
  const Record r = MustParse(R"({"i":12,"neg":-3,"f":0.50,"whole":7.0,"e":1e3,"z":-0.0,
                                 "small":0.043,"huge":1e20,"exact":9007199254740993})");
  EXPECT_EQ(Fields(r), (std::vector<std::string>{"i=n:12", "neg=n:-3", "f=n:0.5", "whole=n:7",
                                                 "e=n:1000", "z=n:0", "small=n:0.043",
                                                 "huge=n:1e+20", "exact=n:9007199254740993"}));
  ASSERT_EQ(r.fields.size(), 9u);
  EXPECT_EQ(r.fields[0].number, 12.0);
  EXPECT_EQ(r.fields[1].number, -3.0);
  EXPECT_EQ(r.fields[2].number, 0.5);
  EXPECT_EQ(r.fields[7].number, 1e20);
}

TEST(DocumentParserTest, SourceIsTheTrimmedText) {
  const std::string doc = R"({"a" : "x\u0041",  "b":[1, 2]})";
  EXPECT_EQ(MustParse(" \t" + doc + " \r\n").source, doc);
  EXPECT_EQ(Fields(MustParse(doc))[0], "a=s:xA");
}

TEST(DocumentParserTest, RecordsOutliveTheNextParse) {
  DocumentParser parser;
  const std::string first = PadForParsing(R"({"message":"first","host":{"name":"h1"}})");
  const std::string second = PadForParsing(R"({"message":"second","host":{"name":"h2"}})");
  auto a =
      parser.Parse(std::string_view(first).substr(0, first.find('}') + 2), first.size(), kArrival);
  auto b = parser.Parse(std::string_view(second).substr(0, second.find('}') + 2), second.size(),
                        kArrival);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->message, "first");
  EXPECT_EQ(Fields(*a), (std::vector<std::string>{"host.name=s:h1"}));
  EXPECT_EQ(b->message, "second");
}

TEST(DocumentParserTest, RejectsNonObjects) {
  for (const char* json : {"[1,2]", "\"text\"", "42", "null", "true"}) {
    ExpectInvalid(json, "must be a JSON object");
  }
}

TEST(DocumentParserTest, RejectsMalformedJson) {
  for (std::string_view json : {
           std::string_view(R"({"a":1)"), std::string_view(R"({"a":"x)"),
           std::string_view(R"({"a":})"), std::string_view(R"({a:1})"),
           std::string_view(R"({"a":1,})"), std::string_view(""), std::string_view("   "),
           std::string_view("{\"a\":\"\xff\"}"),  // invalid UTF-8
       }) {
    ExpectInvalid(json, "");
  }
}

TEST(DocumentParserTest, RejectsTrailingContent) {
  for (const char* json : {R"({"a":1} {"b":2})", R"({"a":1}x)", R"({"a":1}})", R"({"a":1}[])"}) {
    ExpectInvalid(json, "invalid JSON");
  }
}

TEST(DocumentParserTest, DepthLimit) {
  DocumentLimits limits;
  limits.max_depth = 3;
  EXPECT_TRUE(Parse(R"({"a":{"b":{"c":1}}})", limits).ok());
  EXPECT_TRUE(Parse(R"({"a":[[1]]})", limits).ok());
  ExpectInvalid(R"({"a":{"b":{"c":{"d":1}}}})", "deeper than 3", limits);
  ExpectInvalid(R"({"a":[[[1]]]})", "deeper than 3", limits);
  ExpectInvalid(R"({"a":[{"b":[1]}]})", "deeper than 3", limits);

  std::string deep;  // 40 levels against the default of 32
  for (int i = 0; i < 40; ++i) deep += "{\"a\":";
  deep += "1" + std::string(40, '}');
  ExpectInvalid(deep, "deeper than 32");
}

TEST(DocumentParserTest, FieldLimit) {
  DocumentLimits limits;
  limits.max_fields = 3;
  EXPECT_TRUE(Parse(R"({"a":1,"b":"x","c":true})", limits).ok());
  // message, @timestamp and nulls are not fields.
  EXPECT_TRUE(Parse(R"({"message":"m","@timestamp":0,"n":null,"a":1,"b":2,"c":3})", limits).ok());
  ExpectInvalid(R"({"a":1,"b":2,"c":3,"d":4})", "more than 3 fields", limits);
  ExpectInvalid(R"({"a":[1,2,3,4]})", "more than 3 fields", limits);
}

// --- Insights (ingest/insight_detectors.h) ------------------------------------

Record ParseWithDetectors(std::string_view json) {
  static const InsightDetectors detectors;
  DocumentParser parser({}, nullptr, &detectors);
  const std::string padded = PadForParsing(json);
  auto r = parser.Parse(std::string_view(padded.data(), json.size()), padded.size(), kArrival);
  EXPECT_TRUE(r.ok()) << json << ": " << r.status().ToString();
  return r.ok() ? std::move(*r) : Record{};
}

TEST(DocumentParserTest, DetectedFailureAddsInsightFieldsAndSourceObject) {
  const Record r = ParseWithDetectors(
      R"({"message":"RuntimeError: CUDA error: out of memory","host":{"name":"gpu-7"}} )");
  EXPECT_EQ(Fields(r), (std::vector<std::string>{"host.name=s:gpu-7", "insight.kind=s:cuda_oom",
                                                 "insight.severity=s:error"}));
  EXPECT_EQ(r.source,
            R"({"message":"RuntimeError: CUDA error: out of memory","host":{"name":"gpu-7"},)"
            R"("insight":{"kind":"cuda_oom","severity":"error"}})");
}

TEST(DocumentParserTest, InsightFactsAreTypedAndErrorMessageIsRead) {
  const Record r = ParseWithDetectors(
      R"({"message":"step failed","error":{"message":"NVRM: Xid (PCI:0000:3b:00): 79, pid=12"}})");
  EXPECT_EQ(Fields(r),
            (std::vector<std::string>{
                "error.message=s:NVRM: Xid (PCI:0000:3b:00): 79, pid=12", "insight.kind=s:xid",
                "insight.severity=s:critical", "insight.pci=s:0000:3b:00", "insight.xid=n:79",
                "insight.pid=n:12", "insight.meaning=s:GPU has fallen off the bus"}));
  EXPECT_NE(r.source.find(R"("xid":79,"pid":12,"meaning":"GPU has fallen off the bus"})"),
            std::string::npos)
      << r.source;
}

TEST(DocumentParserTest, ClientInsightIsDroppedWithDetectorsOn) {
  Record r = ParseWithDetectors(
      R"({"insight":{"kind":"cuda_oom"},"message":"all good","insight.severity":"x","n":1.50})");
  EXPECT_EQ(Fields(r), (std::vector<std::string>{"n=n:1.5"}));
  EXPECT_EQ(r.source, R"({"message":"all good","n":1.50})");
  // Escaped names are the same name; the server's verdict replaces the client's.
  r = ParseWithDetectors(R"j({"\u0069nsight":[],"message":"Segmentation fault (core dumped)"})j");
  EXPECT_EQ(r.source, R"j({"message":"Segmentation fault (core dumped)",)j"
                      R"("insight":{"kind":"process_killed","severity":"error"}})");
  // Other names that merely contain "insight" are kept.
  r = ParseWithDetectors(R"({"insights":1,"message":"x"})");
  EXPECT_EQ(r.source, R"({"insights":1,"message":"x"})");
  // Without detectors the document is kept as sent.
  r = MustParse(R"({"insight":{"kind":"cuda_oom"},"message":"all good"})");
  EXPECT_EQ(Fields(r), (std::vector<std::string>{"insight.kind=s:cuda_oom"}));
  EXPECT_EQ(r.source, R"({"insight":{"kind":"cuda_oom"},"message":"all good"})");
}

TEST(DocumentParserTest, InsightOnAnEmptyishDocument) {
  const Record r = ParseWithDetectors(R"({"message":"Killed"})");
  EXPECT_EQ(r.source,
            R"({"message":"Killed","insight":{"kind":"process_killed","severity":"error"}})");
}

// --- Training metrics and runs (ingest/train_metrics.h, run_identity.h) ----

Record ParseTraining(std::string_view json, TrainingAnomalies* anomalies = nullptr) {
  static const InsightDetectors detectors;
  DocumentParser parser({}, nullptr, &detectors, anomalies);
  const std::string padded = PadForParsing(json);
  auto r = parser.Parse(std::string_view(padded.data(), json.size()), padded.size(), kArrival);
  EXPECT_TRUE(r.ok()) << json << ": " << r.status().ToString();
  return r.ok() ? std::move(*r) : Record{};
}

// The metrics go into the source only (storage does not index train.*);
// the run becomes indexed fields and an object.
TEST(DocumentParserTest, MetricsGoToTheSourceAndRunBecomesFields) {
  const Record r = ParseTraining(
      R"({"message":"[rank3]: step 1200/5000 loss=0.43, lr=1e-4","host":{"name":"gpu-7"},)"
      R"("log":{"file":{"path":"/runs/a.log"}}})");
  EXPECT_EQ(Fields(r), (std::vector<std::string>{"host.name=s:gpu-7", "log.file.path=s:/runs/a.log",
                                                 "run.id=s:gpu-7:/runs/a.log", "run.rank=n:3"}));
  EXPECT_EQ(r.group, "gpu-7:/runs/a.log");
  EXPECT_FALSE(r.group_end);
  EXPECT_EQ(
      r.source.substr(r.source.find(R"(,"train")")),
      R"(,"train":{"loss":0.43,"lr":1e-04,"step":1200},"run":{"id":"gpu-7:/runs/a.log","rank":3}})");
}

TEST(DocumentParserTest, ClientRunAndTrainFieldsAreKeptNotRepeated) {
  const std::string json =
      R"({"message":"Training completed. loss=0.1","run":{"id":"r-42","rank":0},)"
      R"("train":{"loss":0.25}})";
  const Record r = ParseTraining(json);
  EXPECT_EQ(Fields(r), (std::vector<std::string>{"run.id=s:r-42", "run.rank=n:0",
                                                 "train.loss=n:0.25", "run.end=s:finished"}));
  EXPECT_EQ(r.group, "r-42");
  EXPECT_TRUE(r.group_end);
  EXPECT_EQ(r.source, json);  // the client has its own `run` and `train`: the source is as sent
  // A derived id with no run.* field but a `run` the fields do not show.
  const Record n = ParseTraining(R"({"message":"x","run":null,"run_id":"r-7"})");
  EXPECT_EQ(n.group, "r-7");
  EXPECT_EQ(n.source, R"({"message":"x","run":null,"run_id":"r-7"})");
}

// A value "train" or "run", or an escape anywhere (colored lines carry
// \u001b), is not the client's own member: the derived objects still reach
// the source, where range queries and the runs API read them. An escaped
// name that spells the member is one.
TEST(DocumentParserTest, NamesInValuesAndEscapesDoNotHideDerivedObjects) {
  Record r = ParseTraining(
      R"({"message":"\u001b[32mstep 100 loss=0.43\u001b[0m","split":"train","mode":"run",)"
      R"("run_id":"r-9"})");
  EXPECT_NE(r.source.find(R"("train":{"loss":0.43})"), std::string::npos) << r.source;
  EXPECT_EQ(r.group, "r-9");
  EXPECT_NE(r.source.find(R"("run":{"id":"r-9"})"), std::string::npos) << r.source;
  r = ParseTraining(R"({"message":"loss=0.5","\u0074rain":null})");
  EXPECT_EQ(r.source.find(R"("train":{)"), std::string::npos) << r.source;
}

TEST(DocumentParserTest, NoDetectorsNoMetricsNoRun) {
  const Record r = MustParse(R"({"message":"loss=0.5","run_id":"r-1"})");
  EXPECT_EQ(Fields(r), (std::vector<std::string>{"run_id=s:r-1"}));
  EXPECT_EQ(r.group, "");
}

TEST(DocumentParserTest, AnomaliesFillTheInsightWhenNoPatternDid) {
  TrainingAnomalies anomalies;
  Record r = ParseTraining(R"({"message":"step 3 loss=nan","run_id":"r-1"})", &anomalies);
  EXPECT_EQ(Fields(r),
            (std::vector<std::string>{"run_id=s:r-1", "run.id=s:r-1", "insight.kind=s:nan_loss",
                                      "insight.severity=s:error", "insight.value=s:nan"}));
  EXPECT_EQ(r.source, R"({"message":"step 3 loss=nan","run_id":"r-1","train":{"step":3},)"
                      R"("run":{"id":"r-1"},)"
                      R"("insight":{"kind":"nan_loss","severity":"error","value":"nan"}})");
  for (int i = 0; i < 25; ++i) {
    r = ParseTraining(R"({"message":"loss=1.0","run_id":"r-1"})", &anomalies);
    EXPECT_EQ(r.source.find("insight"), std::string::npos) << i;
  }
  // A pattern's kind wins over the spike, which is still taken into the history.
  r = ParseTraining(R"({"message":"loss=50 then CUDA error: out of memory","run_id":"r-1"})",
                    &anomalies);
  EXPECT_NE(r.source.find(R"("kind":"cuda_oom")"), std::string::npos) << r.source;
  r = ParseTraining(R"({"message":"loss=40","run_id":"r-1"})", &anomalies);
  EXPECT_EQ(r.source.find("insight"), std::string::npos) << r.source;  // 50 is in the window
  r = ParseTraining(R"({"message":"loss=60","run_id":"r-1"})", &anomalies);
  EXPECT_NE(r.source.find(R"("insight":{"kind":"loss_spike","severity":"warning","loss":60,)"
                          R"("median":1})"),
            std::string::npos)
      << r.source;
}

TEST(ParserPoolTest, ReusesReleasedParsers) {
  ParserPool pool;
  DocumentParser* first = nullptr;
  {
    auto a = pool.Acquire();
    auto b = pool.Acquire();
    EXPECT_NE(&*a, &*b);
    first = &*a;
    const std::string doc = PadForParsing(R"({"message":"x"})");
    EXPECT_TRUE(a->Parse(std::string_view(doc).substr(0, 15), doc.size(), kArrival).ok());
  }
  auto c = pool.Acquire();
  auto d = pool.Acquire();
  EXPECT_TRUE(&*c == first || &*d == first);
}

}  // namespace
}  // namespace dashcam::ingest
