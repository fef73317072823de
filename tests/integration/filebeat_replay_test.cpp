// Replays a request exactly as Filebeat's output.elasticsearch sends it
// (PROTOCOLS.md 1.2: headers, query string and gzip body byte for byte) over
// a raw socket, and checks the answer where the protocol fixes it: the status
// line, Content-Type and X-Elastic-Product, and the items by position.
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <boost/json.hpp>

#include "tests/common/beats_client.h"  // a plain blocking TCP client
#include "tests/common/http_client.h"
#include "tests/common/test_server.h"

namespace dashcam::testing::filebeat_replay_test {
namespace {

namespace json = boost::json;

struct RawResponse {
  std::string status_line;
  std::string headers;  // lowercase names, "name: value\r\n" each
  std::string body;
};

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

RawResponse ReadResponse(BeatsClient& conn) {
  std::string head;
  while (head.find("\r\n\r\n") == std::string::npos) {
    std::string b = conn.Read(1, seconds(10));
    if (b.empty()) break;
    head += b;
  }
  RawResponse r;
  const auto eol = head.find("\r\n");
  r.status_line = head.substr(0, eol);
  r.headers = Lower(head.substr(eol + 2));
  const auto at = r.headers.find("content-length: ");
  const std::size_t length = at == std::string::npos ? 0 : std::stoul(r.headers.substr(at + 16));
  r.body = conn.Read(length, seconds(10));
  return r;
}

TEST(FilebeatReplayTest, AByteExactFilebeatBulkGetsTheAnswerFilebeatExpects) {
  TempDir dir;
  TestServer server(dir.path() + "/data");
  ASSERT_TRUE(server.Start()) << server.ReadLog();

  const std::string ndjson =
      "{\"create\":{\"_index\":\"filebeat-8.17.0\"}}\n"
      "{\"@timestamp\":\"2025-06-03T08:15:42.123Z\",\"message\":\"RuntimeError: CUDA out of "
      "memory. "
      "Tried to allocate 2.10 GiB\",\"log\":{\"offset\":81234,\"file\":{\"path\":\"/home/zhangsan/"
      "runs/r-42/train.log\"}},\"input\":{\"type\":\"filestream\"},\"ecs\":{\"version\":\"8.0.0\"},"
      "\"host\":{\"name\":\"gpu-node-07\"},\"agent\":{\"id\":\"4d1c0b9e-6f0e-4c55-9a0b-"
      "2b0e0e6d7c11\","
      "\"name\":\"gpu-node-07\",\"type\":\"filebeat\",\"version\":\"8.17.0\",\"ephemeral_id\":"
      "\"0f0c3c1e-1a7b-4a7e-8d0e-6b1c8e7d2a33\"},\"user\":\"zhangsan\"}\n"
      "{\"create\":{\"_index\":\"filebeat-8.17.0\"}}\n"
      "{\"@timestamp\":\"2025-06-03T08:15:42.124Z\",\"message\":\"not json "
      "{\",\"user\":\"lisi\"}\n";
  const std::string body = Gzip(ndjson, 1);
  const std::string request =
      "POST /_bulk?filter_path=errors,items.*.error,items.*.status HTTP/1.1\r\n"
      "Host: 127.0.0.1:" +
      std::to_string(server.port()) +
      "\r\n"
      "User-Agent: Elastic-filebeat/8.17.0 (linux; amd64; 6e5ff3a; 2025-01-15 20:55:26 +0000 "
      "UTC)\r\n"
      "Content-Length: " +
      std::to_string(body.size()) +
      "\r\n"
      "Accept: application/json\r\n"
      "Content-Encoding: gzip\r\n"
      "Content-Type: application/json; charset=UTF-8\r\n"
      "X-Elastic-Product-Origin: beats\r\n"
      "Accept-Encoding: gzip\r\n"
      "\r\n" +
      body;

  BeatsClient conn(server.port());
  ASSERT_TRUE(conn.connected());
  ASSERT_TRUE(conn.Send(request));
  const RawResponse r = ReadResponse(conn);
  EXPECT_EQ(r.status_line, "HTTP/1.1 200 OK");  // exactly 200: any other 2xx counts as failed
  EXPECT_NE(r.headers.find("content-type: application/json\r\n"), std::string::npos) << r.headers;
  EXPECT_NE(r.headers.find("x-elastic-product: elasticsearch\r\n"), std::string::npos) << r.headers;
  const json::value v = json::parse(r.body);
  const auto& items = v.at("items").as_array();
  ASSERT_EQ(items.size(), 2u);  // one item per action, by position
  EXPECT_EQ(items[0].at("create").at("status").as_int64(), 201);
  EXPECT_EQ(items[1].at("create").at("status").as_int64(), 201);  // message text is just text
  EXPECT_FALSE(v.at("errors").as_bool());

  // log.offset is not in the index (storage/attrs_codec.h), yet a search on
  // it finds the event by reading the stored rows.
  HttpClient http("127.0.0.1", server.port());
  const auto total = [&](const std::string& q) -> std::int64_t {
    auto res = http.Get("/api/v1/search?track_total_hits=true&q=" + UrlEncode(q));
    EXPECT_EQ(res.status, 200) << q << ": " << res.body;
    return res.status == 200 ? json::parse(res.body).at("total").as_int64() : -1;
  };
  EXPECT_EQ(total("log.offset:81234"), 1);
  EXPECT_EQ(total("log.offset:>=81234 AND host.name:gpu-node-07"), 1);
  EXPECT_EQ(total("log.offset:81235"), 0);
  EXPECT_EQ(total("log.offset:<81234"), 0);
  EXPECT_EQ(total("_exists_:log.offset"), 1);

  // The same connection stays open for the next batch (keep-alive).
  ASSERT_TRUE(conn.Send(request));
  EXPECT_EQ(ReadResponse(conn).status_line, "HTTP/1.1 200 OK");
  EXPECT_EQ(server.Stop(), 0);
}

// Other clients may stream a bulk body with chunked transfer encoding.
TEST(FilebeatReplayTest, AChunkedBulkBodyIsAccepted) {
  TempDir dir;
  TestServer server(dir.path() + "/data");
  ASSERT_TRUE(server.Start()) << server.ReadLog();
  const std::string part1 = "{\"index\":{\"_index\":\"c\"}}\n{\"message\":\"chunk";
  const std::string part2 = "ed body\"}\n";
  auto hex = [](std::size_t n) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "%zx", n);
    return std::string(buf);
  };
  const std::string request =
      "POST /_bulk HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-ndjson\r\n"
      "Transfer-Encoding: chunked\r\n\r\n" +
      hex(part1.size()) + "\r\n" + part1 + "\r\n" + hex(part2.size()) + "\r\n" + part2 +
      "\r\n0\r\n\r\n";
  BeatsClient conn(server.port());
  ASSERT_TRUE(conn.Send(request));
  const RawResponse r = ReadResponse(conn);
  EXPECT_EQ(r.status_line, "HTTP/1.1 200 OK") << r.body;
  EXPECT_FALSE(json::parse(r.body).at("errors").as_bool()) << r.body;
  HttpClient http("127.0.0.1", server.port());
  auto found = http.Get("/api/v1/search?q=" + UrlEncode("\"chunked body\""));
  EXPECT_EQ(json::parse(found.body).at("total").as_int64(), 1) << found.body;
  EXPECT_EQ(server.Stop(), 0);
}

// A chunked _search body is held to --max-search-body-bytes as it is read:
// a chunk declared past it gets 413 before its bytes are sent.
TEST(FilebeatReplayTest, AChunkedSearchBodyPastItsLimitGets413) {
  TempDir dir;
  TestServer server(dir.path() + "/data", {"--max-search-body-bytes", "1000"});
  ASSERT_TRUE(server.Start()) << server.ReadLog();
  const std::string head =
      "POST /_search HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
      "Transfer-Encoding: chunked\r\n\r\n";
  {
    BeatsClient conn(server.port());
    ASSERT_TRUE(conn.Send(head + "7d0\r\n{\"query\":"));  // a 2000-byte chunk
    const RawResponse r = ReadResponse(conn);
    EXPECT_EQ(r.status_line, "HTTP/1.1 413 Payload Too Large") << r.body;
    EXPECT_NE(r.body.find("--max-search-body-bytes"), std::string::npos) << r.body;
  }
  {
    BeatsClient conn(server.port());  // several small chunks that add up past it
    std::string body = head;
    for (int i = 0; i < 5; ++i) body += "12c\r\n" + std::string(300, ' ') + "\r\n";
    ASSERT_TRUE(conn.Send(body));
    EXPECT_EQ(ReadResponse(conn).status_line, "HTTP/1.1 413 Payload Too Large");
  }
  BeatsClient conn(server.port());
  ASSERT_TRUE(conn.Send(head + "e\r\n{\"size\":0,\"x\":\r\n3\r\n1}\n\r\n0\r\n\r\n"));
  const RawResponse r = ReadResponse(conn);
  EXPECT_EQ(r.status_line, "HTTP/1.1 400 Bad Request") << r.body;  // read whole: [x] named
  EXPECT_NE(r.body.find("[x]"), std::string::npos) << r.headers << r.body;
  EXPECT_EQ(server.Stop(), 0);
}

// With --max-body-bytes the tighter limit, a search body is held to it, and
// the 413 names it, whether the body's length is declared or chunked.
TEST(FilebeatReplayTest, ASearchBodyPastTheSmallerBodyLimitNamesThatLimit) {
  TempDir dir;
  TestServer server(dir.path() + "/data",
                    {"--max-body-bytes", "1000", "--max-search-body-bytes", "5000"});
  ASSERT_TRUE(server.Start()) << server.ReadLog();
  const std::string head =
      "POST /_search HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n";
  for (const std::string& request :
       {head + "Transfer-Encoding: chunked\r\n\r\n7d0\r\n{\"query\":",  // a 2000-byte chunk
        head + "Content-Length: 2000\r\n\r\n{\"query\":"}) {
    BeatsClient conn(server.port());
    ASSERT_TRUE(conn.Send(request));
    const RawResponse r = ReadResponse(conn);
    EXPECT_EQ(r.status_line, "HTTP/1.1 413 Payload Too Large") << r.body;
    EXPECT_NE(r.body.find("--max-body-bytes"), std::string::npos) << r.body;
    EXPECT_EQ(r.body.find("--max-search-body-bytes"), std::string::npos) << r.body;
  }
  EXPECT_EQ(server.Stop(), 0);
}

}  // namespace
}  // namespace dashcam::testing::filebeat_replay_test
