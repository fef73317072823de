// Integration tests of GET /api/v1/export against the real binary: formats,
// orders, columns, CSV quoting, filtering, errors, the transfer itself
// (chunked, keep-alive, HTTP/1.0), memory that stays flat whatever the size
// of the export, and a client that hangs up mid-export.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <boost/json.hpp>

#include "tests/common/http_client.h"
#include "tests/common/stream_client.h"
#include "tests/common/test_server.h"
#include "tests/common/training_log_generator.h"

namespace dashcam::testing::export_test {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;

std::vector<std::string> Lines(const std::string& body) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start < body.size()) {
    std::size_t end = body.find('\n', start);
    if (end == std::string::npos) end = body.size();
    out.push_back(body.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

// An RFC 4180 reader, written from the RFC: rows of cells; CRLF ends a row
// outside quotes; inside quotes anything goes and "" is a quote.
std::vector<std::vector<std::string>> ParseCsv(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> row;
  std::string cell;
  bool quoted = false, in_quotes = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_quotes) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        cell.push_back('"');
        ++i;
      } else if (c == '"') {
        in_quotes = false;
      } else {
        cell.push_back(c);
      }
    } else if (c == '"' && cell.empty() && !quoted) {
      in_quotes = quoted = true;
    } else if (c == ',') {
      row.push_back(std::move(cell));
      cell.clear();
      quoted = false;
    } else if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') {
      row.push_back(std::move(cell));
      rows.push_back(std::move(row));
      row.clear();
      cell.clear();
      quoted = false;
      ++i;
    } else {
      EXPECT_NE(c, '"') << "a bare quote inside an unquoted cell at byte " << i;
      EXPECT_NE(c, '\n') << "a bare LF outside quotes at byte " << i;
      cell.push_back(c);
    }
  }
  EXPECT_FALSE(in_quotes) << "unterminated quoted cell";
  EXPECT_TRUE(cell.empty() && row.empty()) << "the last row has no CRLF";
  return rows;
}

// Events whose text exercises CSV quoting and the text format.
const char* const kTrickyMessage = "he said \"hi, there\"\nnext line\r\nthird,\tend";

std::vector<std::string> TrickyEvents() {
  std::vector<std::string> out;
  json::object a;
  a["@timestamp"] = "2026-11-29T00:30:00.000Z";
  a["message"] = kTrickyMessage;
  a["level"] = "WARN";
  a["host"] = json::object{{"name", "node,with,commas"}};
  a["gpu_id"] = json::array{0, 1};
  a["tricky"] = true;
  out.push_back(json::serialize(a));
  json::object b;
  b["@timestamp"] = "2026-11-29T00:30:00.001Z";
  b["msg"] = "显存不足 \x1b[31mred\x1b[0m";  // message from `msg`; an escape sequence
  b["tricky"] = true;
  out.push_back(json::serialize(b));
  return out;
}

class ExportTest : public ::testing::Test {
 protected:
  void StartServer(std::vector<std::string> extra = {}) {
    server_ = std::make_unique<TestServer>(dir_.path() + "/data", std::move(extra));
    ASSERT_TRUE(server_->Start()) << server_->ReadLog();
  }
  void SetUp() override { StartServer(); }
  void TearDown() override {
    if (server_->pid() > 0) {
      EXPECT_EQ(server_->Stop(), 0) << server_->ReadLog();
    }
  }
  HttpClient Client() { return HttpClient("127.0.0.1", server_->port()); }

  void Ingest(const std::vector<std::string>& docs) {
    auto client = Client();
    for (std::size_t i = 0; i < docs.size(); i += 1000) {
      std::string body;
      for (std::size_t j = i; j < std::min(docs.size(), i + 1000); ++j) body += docs[j] + "\n";
      auto res = client.Post("/api/v1/ingest", body);
      ASSERT_EQ(res.status, 200) << res.body;
      ASSERT_EQ(json::parse(res.body).at("rejected").as_int64(), 0) << res.body;
    }
  }
  // 3000 generated training-log events plus the tricky ones.
  void IngestFixture() {
    GeneratorOptions opts;
    opts.seed = 7;
    opts.expected_events = 3000;
    TrainingLogGenerator gen(opts);
    std::vector<std::string> docs;
    for (int i = 0; i < 3000; ++i) docs.push_back(gen.Next().json);
    for (auto& d : TrickyEvents()) docs.push_back(d);
    Ingest(docs);
  }

  HttpResult Export(const std::string& params) {
    auto client = Client();
    return client.Get("/api/v1/export?" + params);
  }
  // The ids of every hit of `q`, newest first, paging through search.
  std::vector<std::string> SearchIds(const std::string& q, const std::string& extra = "") {
    auto client = Client();
    std::vector<std::string> ids;
    std::string cursor;
    for (;;) {
      auto res =
          client.Get("/api/v1/search?limit=1000&q=" + UrlEncode(q) + extra + "&cursor=" + cursor);
      EXPECT_EQ(res.status, 200) << res.body;
      if (res.status != 200) break;
      const json::value v = json::parse(res.body);
      for (const auto& h : v.at("hits").as_array()) ids.emplace_back(h.at("_id").as_string());
      if (v.at("next_cursor").is_null()) break;
      cursor = std::string(v.at("next_cursor").as_string());
    }
    return ids;
  }
  static std::vector<std::string> NdjsonIds(const std::string& body) {
    std::vector<std::string> ids;
    for (const std::string& line : Lines(body)) {
      ids.emplace_back(json::parse(line).at("_id").as_string());
    }
    return ids;
  }

  TempDir dir_;
  std::unique_ptr<TestServer> server_;
};

TEST_F(ExportTest, NdjsonHasEveryMatchOnceNewestFirstOrOldestFirst) {
  IngestFixture();
  auto desc = Export("");
  ASSERT_EQ(desc.status, 200) << desc.body;
  EXPECT_EQ(desc.headers["content-type"], "application/x-ndjson");
  EXPECT_EQ(desc.headers["transfer-encoding"], "chunked");
  const auto ids = NdjsonIds(desc.body);
  ASSERT_EQ(ids.size(), 3002u);
  EXPECT_EQ(std::set<std::string>(ids.begin(), ids.end()).size(), ids.size());
  EXPECT_EQ(ids, SearchIds(""));  // the same events in the same order as search pages
  std::string previous = "9999";
  for (const std::string& line : Lines(desc.body)) {
    const json::value hit = json::parse(line);
    const std::string ts(hit.at("@timestamp").as_string());
    EXPECT_LE(ts, previous);
    previous = ts;
    EXPECT_TRUE(hit.at("_source").is_object());
  }

  auto asc = Export("order=asc");
  ASSERT_EQ(asc.status, 200);
  auto asc_ids = NdjsonIds(asc.body);
  std::reverse(asc_ids.begin(), asc_ids.end());
  EXPECT_EQ(asc_ids, ids);

  // q, from and to select exactly what search selects.
  for (const std::string q : {"log.level:ERROR", "\"CUDA out of memory\"",
                              "user:zhangsan AND cuda*", "tricky:true", "NOT log.level:INFO"}) {
    SCOPED_TRACE(q);
    auto res = Export("q=" + UrlEncode(q));
    ASSERT_EQ(res.status, 200) << res.body;
    const auto want = SearchIds(q);
    EXPECT_FALSE(want.empty());
    EXPECT_LT(want.size(), ids.size());
    EXPECT_EQ(res.body.empty() ? std::vector<std::string>{} : NdjsonIds(res.body), want);
  }
  const std::string range = "&from=2026-11-29T00:20:00Z&to=2026-11-29T00:40:00Z";
  auto ranged = Export("q=*" + range);
  ASSERT_EQ(ranged.status, 200);
  EXPECT_EQ(NdjsonIds(ranged.body), SearchIds("*", range));
  EXPECT_EQ(Export("q=no_such_token_anywhere").body, "");

  // Columns give flat objects with JSON types.
  auto cols = Export("q=tricky:true&fields=" + UrlEncode("@timestamp,host.name,gpu_id,nope"));
  ASSERT_EQ(cols.status, 200);
  const auto lines = Lines(cols.body);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(json::parse(lines[1]), json::parse(R"({"@timestamp":"2026-11-29T00:30:00.000Z",
      "host.name":"node,with,commas","gpu_id":[0,1],"nope":null})"));
}

TEST_F(ExportTest, CsvHasAHeaderAndQuotesCommasQuotesAndLineBreaks) {
  IngestFixture();
  auto res = Export("format=csv");
  ASSERT_EQ(res.status, 200) << res.body;
  EXPECT_EQ(res.headers["content-type"].rfind("text/csv", 0), 0u);
  const auto rows = ParseCsv(res.body);
  ASSERT_EQ(rows.size(), 3003u);
  EXPECT_EQ(rows[0], (std::vector<std::string>{"@timestamp", "level", "host.name", "message"}));
  bool found = false;
  for (const auto& row : rows) {
    ASSERT_EQ(row.size(), 4u);
    if (row[0] == "2026-11-29T00:30:00.000Z") {
      found = true;
      EXPECT_EQ(row, (std::vector<std::string>{"2026-11-29T00:30:00.000Z", "WARN",
                                               "node,with,commas", kTrickyMessage}));
    }
  }
  EXPECT_TRUE(found);

  auto cols = Export("format=csv&order=asc&q=tricky:true&fields=" +
                     UrlEncode(" _id , message,gpu_id,_source,level "));
  ASSERT_EQ(cols.status, 200) << cols.body;
  const auto crow = ParseCsv(cols.body);
  ASSERT_EQ(crow.size(), 3u);
  EXPECT_EQ(crow[0], (std::vector<std::string>{"_id", "message", "gpu_id", "_source", "level"}));
  EXPECT_EQ(crow[1][1], kTrickyMessage);
  EXPECT_EQ(crow[1][2], "0, 1");
  EXPECT_EQ(json::parse(crow[1][3]).at("host").at("name").as_string(), "node,with,commas");
  EXPECT_EQ(crow[2][1], "显存不足 \x1b[31mred\x1b[0m");
  EXPECT_EQ(crow[2][4], "");  // no level
  const auto ids = SearchIds("tricky:true");
  EXPECT_EQ(crow[1][0], ids[1]);
  EXPECT_EQ(crow[2][0], ids[0]);
}

TEST_F(ExportTest, TextIsOneLinePerEvent) {
  IngestFixture();
  auto res = Export("format=text&q=" + UrlEncode("log.level:ERROR OR tricky:true"));
  ASSERT_EQ(res.status, 200) << res.body;
  EXPECT_EQ(res.headers["content-type"], "text/plain; charset=utf-8");
  const auto lines = Lines(res.body);
  EXPECT_EQ(lines.size(), SearchIds("log.level:ERROR OR tricky:true").size());
  // `2026-11-29T00:30:00.000Z LEVEL host message`
  auto shaped = [](const std::string& line) {
    const std::string digits = "0123456789";
    const std::string pattern = "dddd-dd-ddTdd:dd:dd.dddZ ";
    if (line.size() < pattern.size()) return false;
    for (std::size_t i = 0; i < pattern.size(); ++i) {
      const bool ok =
          pattern[i] == 'd' ? digits.find(line[i]) != std::string::npos : line[i] == pattern[i];
      if (!ok) return false;
    }
    const std::string rest = line.substr(pattern.size());
    const bool level =
        rest.rfind("ERROR ", 0) == 0 || rest.rfind("WARN ", 0) == 0 || rest.rfind("- ", 0) == 0;
    const std::size_t host_end = rest.find(' ', rest.find(' ') + 1);
    return level && host_end != std::string::npos && host_end > rest.find(' ') + 1;
  };
  for (const auto& line : lines) {
    EXPECT_TRUE(shaped(line)) << line;
    EXPECT_EQ(line.find_first_of("\r\x1b"), std::string::npos) << line;
  }
  EXPECT_NE(std::find(lines.begin(), lines.end(),
                      "2026-11-29T00:30:00.000Z WARN node,with,commas he said \"hi, there\"\\nnext "
                      "line\\r\\nthird,\\tend"),
            lines.end());
  EXPECT_NE(std::find(lines.begin(), lines.end(),
                      "2026-11-29T00:30:00.001Z - - 显存不足 \\x1b[31mred\\x1b[0m"),
            lines.end());
}

TEST_F(ExportTest, BadParametersAndQueriesGet400WithAReason) {
  struct Case {
    std::string params, type, reason_part;
  };
  const Case cases[] = {
      {"format=xml", "illegal_argument", "[format]"},
      {"format=sse", "illegal_argument", "[format]"},
      {"order=sideways", "illegal_argument", "[order]"},
      {"format=text&fields=message", "illegal_argument", "[fields]"},
      {"fields=message,message", "illegal_argument", "twice"},
      {"fields=,,", "illegal_argument", "[fields]"},
      {"heartbeat=5", "illegal_argument", "[heartbeat]"},
      {"from=yesterday", "illegal_argument", "[from]"},
      {"from=2026-11-30T00:00:00Z&to=2026-11-29T00:00:00Z", "illegal_argument", "[from]"},
      {"q=" + UrlEncode("user:zhangsan AND (cuda"), "query_parse_error", "')'"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.params);
    auto res = Export(c.params);
    ASSERT_EQ(res.status, 400) << res.body;
    const json::value v = json::parse(res.body);
    EXPECT_EQ(std::string(v.at("error").at("type").as_string()), c.type);
    EXPECT_NE(std::string(v.at("error").at("reason").as_string()).find(c.reason_part),
              std::string::npos)
        << res.body;
    if (c.type == "query_parse_error") {
      EXPECT_EQ(v.at("error").at("position").as_int64(), 23);
    }
  }
  auto post = Client().Post("/api/v1/export", "");
  EXPECT_EQ(post.status, 404);
}

TEST_F(ExportTest, StreamsChunkedWithKeepAliveAndSpeaksHttp10) {
  IngestFixture();
  StreamClient c(server_->port());
  ASSERT_TRUE(c.ok());
  std::string first;
  for (int i = 0; i < 2; ++i) {  // two exports on one connection
    ASSERT_TRUE(c.SendGet("/api/v1/export?q=log.level:WARN"));
    ASSERT_TRUE(c.ReadToEnd(10s));
    EXPECT_TRUE(c.complete());
    EXPECT_FALSE(c.closed());
    EXPECT_EQ(c.headers().at("transfer-encoding"), "chunked");
    if (i == 0) first = c.body();
    EXPECT_EQ(c.body(), first);
  }
  EXPECT_GT(Lines(first).size(), 100u);

  StreamClient old(server_->port(), StreamClientOptions{0, 0});
  ASSERT_TRUE(old.SendGet("/api/v1/export?q=log.level:WARN"));
  ASSERT_TRUE(old.ReadToEnd(10s));
  EXPECT_TRUE(old.closed());
  EXPECT_EQ(old.headers().count("transfer-encoding"), 0u);
  EXPECT_EQ(old.body(), first);
}

std::uint64_t RssBytes(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoull(line.substr(6)) * 1024;
  }
  return 0;
}

// Events of ~16 KiB (one long token, cheap to index): 2500 of them make a
// 40 MB export from a server that starts with a few MB of RSS.
std::vector<std::string> BigEvents(int n) {
  std::vector<std::string> docs;
  const std::string filler(16'000, 'x');
  for (int i = 0; i < n; ++i) {
    json::object o;
    o["@timestamp"] = kDefaultGeneratorStartMs + i;
    o["message"] = "big " + std::to_string(i) + " " + filler;
    docs.push_back(json::serialize(o));
  }
  return docs;
}

TEST_F(ExportTest, LargeExportKeepsServerMemoryFlatAndStopsWhenTheClientLeaves) {
  constexpr int kEvents = 2500;
  Ingest(BigEvents(kEvents));
  // A fresh process, so that the ingest's memory does not hide the export's.
  ASSERT_EQ(server_->Stop(), 0);
#if defined(__SANITIZE_ADDRESS__)
  // AddressSanitizer holds freed memory in quarantine (256 MB by default),
  // which would read as growth: the measured server runs without it.
  const char* asan = std::getenv("ASAN_OPTIONS");
  ::setenv("ASAN_OPTIONS", (std::string(asan ? asan : "") + ":quarantine_size_mb=0").c_str(), 1);
#endif
  ASSERT_TRUE(server_->Start());
  const std::uint64_t base_hwm = *server_->PeakRssBytes();

  StreamClient c(server_->port());
  ASSERT_TRUE(c.SendGet("/api/v1/export"));
  ASSERT_TRUE(c.ReadHeader(10s));
  // A server that read ahead of its client would now hold the export.
  std::this_thread::sleep_for(500ms);
  const std::uint64_t paused_rss = RssBytes(server_->pid());
  ASSERT_TRUE(c.ReadToEnd(60s));
  ASSERT_TRUE(c.complete());
  const std::uint64_t export_bytes = c.body().size();
  EXPECT_EQ(Lines(c.body()).size(), static_cast<std::size_t>(kEvents));
  EXPECT_GT(export_bytes, 40'000'000u);
  const std::uint64_t growth = *server_->PeakRssBytes() - base_hwm;
  // The bound: SQLite's page cache of the read connection (8 MiB) plus a page
  // and a piece of export in flight, with room for the allocator (ASan's
  // too); a server holding the export would need 40 MB more.
  EXPECT_LT(growth, 30u << 20) << "export of " << export_bytes << " bytes";
  EXPECT_LT(paused_rss, base_hwm + (30u << 20));
  std::cerr << "[ info ] export " << export_bytes << " bytes, server peak RSS +" << (growth >> 20)
            << " MiB\n";

  // Hang up after the first megabyte: the export stops within moments.
  StreamClient quitter(server_->port(), StreamClientOptions{8192, 1});
  ASSERT_TRUE(quitter.SendGet("/api/v1/export?order=asc"));
  ASSERT_TRUE(quitter.ReadUntil([](const std::string& b) { return b.size() > 1'000'000; }, 10s));
  quitter.Close();
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  std::string log;
  while (std::chrono::steady_clock::now() < deadline) {
    log = server_->ReadLog();
    if (log.find("\"outcome\":\"cancelled\"") != std::string::npos) break;
    std::this_thread::sleep_for(20ms);
  }
  const std::size_t at = log.find("\"outcome\":\"cancelled\"");
  ASSERT_NE(at, std::string::npos) << log;
  const std::size_t events_at = log.find("\"events\":", at);
  EXPECT_LT(std::stoi(log.substr(events_at + 9)), kEvents);  // it did not run to the end
  EXPECT_EQ(Client().Get("/healthz").status, 200);
}

}  // namespace
}  // namespace dashcam::testing::export_test
