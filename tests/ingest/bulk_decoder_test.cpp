// Tests for ingest/bulk_decoder.h: an Elasticsearch `_bulk` body -> records
// plus one item per action.
#include "ingest/bulk_decoder.h"

#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

namespace dashcam::ingest {
namespace {

constexpr TimeMs kBulkArrival = 1'700'000'000'000;

Result<DecodedBulk> Decode(std::string_view body, BulkLimits limits = {}) {
  DocumentParser parser;
  const std::string padded = PadForParsing(body);
  return DecodeBulk(padded, body.size(), "default-idx", kBulkArrival, limits, parser);
}

DecodedBulk MustDecode(std::string_view body, BulkLimits limits = {}) {
  auto r = Decode(body, limits);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? std::move(*r) : DecodedBulk{};
}

constexpr std::size_t kNoRecord = static_cast<std::size_t>(-1);

TEST(BulkDecoderTest, CreateAndIndexWithMetadata) {
  const DecodedBulk d = MustDecode(
      R"({"create":{"_index":"logs-a","_id":"1"}})"
      "\n"
      R"({"message":"one","@timestamp":"2026-11-29T10:00:00Z"})"
      "\n"
      R"({"index":{"_id":"2","routing":"r","pipeline":"p","dynamic_templates":{"a":"b"}}})"
      "\n"
      R"({"message":"two"})"
      "\n");
  ASSERT_EQ(d.items.size(), 2u);
  ASSERT_EQ(d.records.size(), 2u);
  EXPECT_EQ(d.items[0].op, "create");
  EXPECT_EQ(d.items[0].index, "logs-a");
  EXPECT_EQ(d.items[0].id, "1");
  EXPECT_EQ(d.items[0].status, 0);
  EXPECT_EQ(d.items[0].record, 0u);
  EXPECT_EQ(d.items[1].op, "index");
  EXPECT_EQ(d.items[1].index, "default-idx");  // from the URL
  EXPECT_EQ(d.items[1].id, "2");
  EXPECT_EQ(d.items[1].record, 1u);

  EXPECT_EQ(d.records[0].index, "logs-a");
  EXPECT_EQ(d.records[0].doc_id, "1");
  EXPECT_EQ(d.records[0].op, storage::WriteOp::kCreate);
  EXPECT_EQ(d.records[0].message, "one");
  EXPECT_EQ(d.records[0].ts_ms, ParseRfc3339("2026-11-29T10:00:00Z"));
  EXPECT_EQ(d.records[1].index, "default-idx");
  EXPECT_EQ(d.records[1].doc_id, "2");
  EXPECT_EQ(d.records[1].op, storage::WriteOp::kIndex);
  EXPECT_EQ(d.records[1].ts_ms, kBulkArrival);
}

TEST(BulkDecoderTest, BadSourceFailsOnlyItsItem) {
  const DecodedBulk d = MustDecode(
      "{\"create\":{}}\n{\"message\":\"a\"}\n"
      "{\"create\":{}}\n{\"message\": oops}\n"
      "{\"create\":{}}\n[\"not an object\"]\n"
      "{\"create\":{}}\n{\"@timestamp\":\"nope\"}\n"
      "{\"create\":{}}\n{\"message\":\"b\"}\n");
  ASSERT_EQ(d.items.size(), 5u);
  ASSERT_EQ(d.records.size(), 2u);
  EXPECT_EQ(d.items[0].record, 0u);
  EXPECT_EQ(d.items[4].record, 1u);
  EXPECT_EQ(d.records[1].message, "b");
  for (std::size_t i : {1u, 2u, 3u}) {
    SCOPED_TRACE(i);
    EXPECT_EQ(d.items[i].status, 400);
    EXPECT_EQ(d.items[i].error_type, "document_parsing_exception");
    EXPECT_EQ(d.items[i].record, kNoRecord);
  }
  EXPECT_NE(d.items[1].error_reason.find("line 4"), std::string::npos) << d.items[1].error_reason;
  EXPECT_NE(d.items[3].error_reason.find("@timestamp"), std::string::npos);
}

TEST(BulkDecoderTest, OversizedSourceLine) {
  BulkLimits limits;
  limits.max_event_bytes = 20;
  const std::string fits = R"({"message":"123456"})";  // exactly 20 bytes
  ASSERT_EQ(fits.size(), 20u);
  const DecodedBulk d = MustDecode(
      "{\"create\":{}}\n" + fits + "\n{\"create\":{}}\n" + R"({"message":"1234567"})" + "\n",
      limits);
  ASSERT_EQ(d.items.size(), 2u);
  EXPECT_EQ(d.items[0].status, 0);
  EXPECT_EQ(d.items[1].status, 400);
  EXPECT_EQ(d.items[1].error_type, "document_too_large_exception");
  EXPECT_EQ(d.records.size(), 1u);
}

TEST(BulkDecoderTest, DeleteAndUpdateFailPerItem) {
  const DecodedBulk d = MustDecode(
      "{\"delete\":{\"_index\":\"x\",\"_id\":\"1\"}}\n"
      "{\"create\":{}}\n{\"message\":\"after delete\"}\n"
      "{\"update\":{\"_id\":\"2\"}}\n{\"doc\":{\"message\":\"ignored\"}}\n"
      "{\"create\":{}}\n{\"message\":\"after update\"}\n");
  ASSERT_EQ(d.items.size(), 4u);
  EXPECT_EQ(d.items[0].op, "delete");
  EXPECT_EQ(d.items[0].status, 400);
  EXPECT_EQ(d.items[0].index, "x");
  EXPECT_EQ(d.items[0].id, "1");
  EXPECT_EQ(d.items[2].op, "update");
  EXPECT_EQ(d.items[2].status, 400);
  for (std::size_t i : {0u, 2u}) {
    EXPECT_EQ(d.items[i].error_type, "illegal_argument_exception");
    EXPECT_EQ(d.items[i].record, kNoRecord);
  }
  ASSERT_EQ(d.records.size(), 2u);
  EXPECT_EQ(d.records[0].message, "after delete");  // delete consumed no source
  EXPECT_EQ(d.records[1].message, "after update");  // update consumed its source
}

TEST(BulkDecoderTest, MalformedActionFailsTheWholeRequest) {
  struct Case {
    std::string body;
    std::string line;  // "[n]" expected in the message
  };
  const std::string ok = "{\"create\":{}}\n{\"message\":\"a\"}\n";
  const Case cases[] = {
      {ok + "not json\n{\"message\":\"b\"}\n", "[3]"},
      {ok + "\n\n{\"create\":{}\n", "[5]"},
      {ok + "[]\n", "[3]"},
      {"{}\n{\"message\":\"a\"}\n", "[1]"},
      {"{\"upsert\":{}}\n{}\n", "[1]"},
      {"{\"create\":{},\"index\":{}}\n{}\n", "[1]"},
      {"{\"create\":1}\n{}\n", "[1]"},
      {"{\"index\":{\"_id\":5}}\n{}\n", "[1]"},
      {"{\"index\":{\"_index\":[\"a\"]}}\n{}\n", "[1]"},
      {"{\"create\":{}}{\"message\":\"a\"}\n{\"message\":\"b\"}\n", "[1]"},
      {"{\"create\":{}} junk\n{}\n", "[1]"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.body);
    auto r = Decode(c.body);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("malformed action/metadata line " + c.line),
              std::string::npos)
        << r.status().message();
  }
}

// Decoded in parts: every `records` records go out as they are decoded, in
// order, and item.record still counts from the body's first record.
TEST(BulkDecoderTest, PartsGoOutAsTheyAreDecoded) {
  std::string body;
  for (int i = 0; i < 10; ++i) {
    body += i == 4 ? R"({"delete":{"_id":"d"}})"
                     "\n"
                   : fmt::format(R"({{"create":{{"_id":"e{}"}}}})"
                                 "\n",
                                 i);
    if (i == 4) continue;
    body += i == 6 ? std::string("{bad\n")
                   : fmt::format(R"({{"message":"m{}"}})"
                                 "\n",
                                 i);
  }
  std::vector<std::vector<std::string>> parts;
  const BulkParts sink{3, [&](std::vector<storage::Record> records) {
                         parts.emplace_back();
                         for (const auto& r : records) parts.back().push_back(r.doc_id);
                       }};
  DocumentParser parser;
  const std::string padded = PadForParsing(body);
  auto d = DecodeBulk(padded, body.size(), "idx", kBulkArrival, {}, parser, &sink);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  // e4 is a delete and e6 a bad source: 8 records, 3 + 3 handed out, 2 left.
  EXPECT_EQ(parts, (std::vector<std::vector<std::string>>{{"e0", "e1", "e2"}, {"e3", "e5", "e7"}}));
  ASSERT_EQ(d->records.size(), 2u);
  EXPECT_EQ(d->records[0].doc_id, "e8");
  ASSERT_EQ(d->items.size(), 10u);
  EXPECT_EQ(d->items[5].record, 4u);  // e5: the fifth record
  EXPECT_EQ(d->items[6].record, kNoRecord);
  EXPECT_EQ(d->items[6].status, 400);
  EXPECT_EQ(d->items[9].record, 7u);
}

// A malformed action line anywhere refuses the body before any part goes out:
// nothing of a refused request may be stored.
TEST(BulkDecoderTest, NoPartGoesOutOfABodyWithAMalformedActionLine) {
  std::string body;
  for (int i = 0; i < 10; ++i)
    body += R"({"create":{}})"
            "\n"
            R"({"message":"m"})"
            "\n";
  body += "{nope\n";
  int parts = 0;
  const BulkParts sink{2, [&](std::vector<storage::Record>) { ++parts; }};
  DocumentParser parser;
  const std::string padded = PadForParsing(body);
  auto d = DecodeBulk(padded, body.size(), "idx", kBulkArrival, {}, parser, &sink);
  EXPECT_EQ(d.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(parts, 0);
}

TEST(BulkDecoderTest, ActionWithoutSourceAtTheEnd) {
  const DecodedBulk d = MustDecode("{\"create\":{}}\n{\"message\":\"a\"}\n{\"index\":{}}\n\n");
  ASSERT_EQ(d.items.size(), 2u);
  EXPECT_EQ(d.items[0].status, 0);
  EXPECT_EQ(d.items[1].status, 400);
  EXPECT_EQ(d.items[1].error_type, "action_request_validation_exception");
  EXPECT_EQ(d.records.size(), 1u);
}

TEST(BulkDecoderTest, BlankLinesAndCrlf) {
  const DecodedBulk d = MustDecode(
      "\r\n{\"create\":{\"_id\":\"a\"}}\r\n\r\n  \t\r\n{\"message\":\"x\"}\r\n"
      "{\"index\":{}}\r\n{\"message\":\"y\"}");  // no final newline
  ASSERT_EQ(d.items.size(), 2u);
  ASSERT_EQ(d.records.size(), 2u);
  EXPECT_EQ(d.items[0].id, "a");
  EXPECT_EQ(d.records[0].source, "{\"message\":\"x\"}");
  EXPECT_EQ(d.records[1].message, "y");
}

TEST(BulkDecoderTest, EmptyBody) {
  for (std::string_view body : {"", "\n", "\r\n \n"}) {
    const DecodedBulk d = MustDecode(body);
    EXPECT_TRUE(d.items.empty());
    EXPECT_TRUE(d.records.empty());
  }
}

TEST(BulkDecoderTest, FilebeatShapedBody) {
  const std::string body =
      R"({"create":{"_index":"filebeat-8.11.0"}})"
      "\n"
      R"({"@timestamp":"2026-11-29T10:23:15.123Z","log":{"offset":1024,"file":{"path":"/var/log/train/rank0.log"}},"message":"CUDA out of memory on cuda:0","input":{"type":"filestream"},"host":{"name":"gpu-01","ip":["10.0.0.1","fe80::1"]},"agent":{"type":"filebeat","version":"8.11.0"},"ecs":{"version":"8.0.0"},"fields":{"gpu_id":0,"job":"llama"}})"
      "\n"
      R"({"create":{"_index":"filebeat-8.11.0"}})"
      "\n"
      R"({"@timestamp":"2026-11-29T10:23:16.000Z","log":{"level":"warn","offset":2048},"message":"loss spike","host":{"name":"gpu-01"}})"
      "\n";
  const DecodedBulk d = MustDecode(body);
  ASSERT_EQ(d.items.size(), 2u);
  ASSERT_EQ(d.records.size(), 2u);
  const storage::Record& r = d.records[0];
  EXPECT_EQ(d.items[0].index, "filebeat-8.11.0");
  EXPECT_EQ(d.items[0].id, "");
  EXPECT_EQ(r.index, "filebeat-8.11.0");
  EXPECT_EQ(r.doc_id, "");
  EXPECT_EQ(r.ts_ms, ParseRfc3339("2026-11-29T10:23:15.123Z"));
  EXPECT_EQ(r.message, "CUDA out of memory on cuda:0");
  std::vector<std::string> names;
  for (const storage::Field& f : r.fields) names.push_back(f.name + "=" + f.text);
  EXPECT_EQ(names, (std::vector<std::string>{
                       "log.offset=1024", "log.file.path=/var/log/train/rank0.log",
                       "input.type=filestream", "host.name=gpu-01", "host.ip=10.0.0.1",
                       "host.ip=fe80::1", "agent.type=filebeat", "agent.version=8.11.0",
                       "ecs.version=8.0.0", "fields.gpu_id=0", "fields.job=llama"}));
  EXPECT_EQ(d.records[1].level, "warn");
  EXPECT_EQ(d.records[1].ts_ms, r.ts_ms + 877);
}

}  // namespace
}  // namespace dashcam::ingest
