// Integration tests of GET /api/v1/tail against the real binary: events
// committed after a tail connects reach it (only those that match, late ones
// too, within a second or two), in SSE and text; a client that stops reading
// is ended with bounded server memory while others carry on; 100 tails at
// once; SIGTERM ends tails cleanly; bad requests get 400/429.
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
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

namespace dashcam::testing::tail_test {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// The `data:` payloads of the SSE events named by default (no `event:`).
std::vector<json::value> SseEvents(const std::string& body) {
  std::vector<json::value> out;
  std::size_t start = 0;
  for (std::size_t end; (end = body.find("\n\n", start)) != std::string::npos; start = end + 2) {
    const std::string block = body.substr(start, end - start);
    if (block.find("data: ") == std::string::npos || block.find("event: ") != std::string::npos) {
      continue;
    }
    const std::size_t id = block.find("id: ");
    const std::size_t data = block.find("data: ");
    EXPECT_EQ(id, 0u) << block;
    json::value v = json::parse(block.substr(data + 6));
    // The SSE id is the event's key (what Last-Event-ID resumes from): 16
    // hex digits. An event sent without an _id has the key as its _id on
    // SQLite; the ClickHouse backend gives it a content hash (README).
    const std::string key = block.substr(4, data - 5);
    EXPECT_EQ(key.size(), 16u) << block;
    EXPECT_EQ(key.find_first_not_of("0123456789abcdef"), std::string::npos) << block;
    if (!ExternalTestStorage()) {
      EXPECT_EQ(key, std::string(v.at("_id").as_string()));
    }
    out.push_back(std::move(v));
  }
  return out;
}

std::size_t CountOf(const std::string& body, std::string_view what) {
  std::size_t n = 0;
  for (std::size_t at = 0; (at = body.find(what, at)) != std::string::npos; at += what.size()) ++n;
  return n;
}

// Events whose blank-line terminator has arrived: a read may end inside an
// event, after its id line but before its data.
std::size_t CompleteEvents(const std::string& body) {
  const std::size_t end = body.rfind("\n\n");
  return end == std::string::npos ? 0 : CountOf(body.substr(0, end + 1), "\nid: ");
}

std::string Message(const json::value& hit) {
  return std::string(hit.at("_source").at("message").as_string());
}

std::string Doc(std::int64_t ts_ms, const std::string& message, const std::string& level = "INFO") {
  json::object o;
  o["@timestamp"] = ts_ms;
  o["message"] = message;
  o["level"] = level;
  o["host"] = json::object{{"name", "gpu-node-03"}};
  return json::serialize(o);
}

std::int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

class TailTest : public ::testing::Test {
 protected:
  void StartServer(std::vector<std::string> extra = {}) {
    server_ = std::make_unique<TestServer>(dir_.path() + "/data", std::move(extra));
    ASSERT_TRUE(server_->Start()) << server_->ReadLog();
  }
  void TearDown() override {
    if (server_ && server_->pid() > 0) {
      EXPECT_EQ(server_->Stop(), 0) << server_->ReadLog();
    }
  }
  void Ingest(HttpClient& client, const std::vector<std::string>& docs) {
    std::string body;
    for (const auto& d : docs) body += d + "\n";
    auto res = client.Post("/api/v1/ingest", body);
    ASSERT_EQ(res.status, 200) << res.body;
    ASSERT_EQ(json::parse(res.body).at("accepted").as_int64(),
              static_cast<std::int64_t>(docs.size()));
  }
  // A tail whose answer has started (headers and, for SSE, the opening).
  std::unique_ptr<StreamClient> OpenTail(const std::string& params, int rcvbuf = 0) {
    auto c = std::make_unique<StreamClient>(server_->port(), StreamClientOptions{rcvbuf, 1});
    EXPECT_TRUE(c->SendGet("/api/v1/tail?" + params));
    EXPECT_TRUE(c->ReadHeader(10s));
    EXPECT_EQ(c->status(), 200) << c->body();
    if (params.find("format=text") == std::string::npos) {
      EXPECT_TRUE(c->ReadUntil([](const std::string& b) { return b.find("\n\n") != b.npos; }, 5s));
    }
    return c;
  }
  std::uint64_t Metric(const std::string& name) {
    HttpClient client("127.0.0.1", server_->port());
    const std::string text = client.Get("/metrics").body;
    const std::size_t at = text.find("\n" + name + " ");
    return at == std::string::npos ? 0 : std::stoull(text.substr(at + name.size() + 2));
  }

  TempDir dir_;
  std::unique_ptr<TestServer> server_;
};

TEST_F(TailTest, DeliversOnlyEventsCommittedAfterConnectingThatMatch) {
  StartServer();
  HttpClient client("127.0.0.1", server_->port());
  const std::int64_t t0 = NowMs();
  Ingest(client, {Doc(t0 - 10, "needle before"), Doc(t0 - 9, "hay before")});

  auto sse = OpenTail("q=" + UrlEncode("needle AND NOT skip"));
  EXPECT_EQ(sse->headers().at("content-type"), "text/event-stream; charset=utf-8");
  EXPECT_EQ(sse->body(), ": tail q=needle AND NOT skip\nretry: 5000\n\n");
  auto text = OpenTail("format=text&q=needle");
  EXPECT_EQ(text->headers().at("content-type"), "text/plain; charset=utf-8");

  std::vector<std::string> docs, want;
  for (int i = 0; i < 60; ++i) {
    const std::string msg = (i % 3 == 0   ? "hay "
                             : i % 3 == 1 ? "needle "
                                          : "needle skip ") +
                            std::to_string(i);
    docs.push_back(Doc(t0 + i, msg, i % 2 ? "WARN" : "INFO"));
    if (i % 3 == 1) want.push_back(msg);
  }
  // A late event (an hour old) is new to the tail too.
  docs.push_back(Doc(t0 - 3'600'000, "needle late"));
  Ingest(client, docs);
  const auto acked = Clock::now();
  auto enough = [&](const std::string& b) { return SseEvents(b).size() >= want.size() + 1; };
  ASSERT_TRUE(sse->ReadUntil(enough, 10s)) << sse->body();
  const auto latency = Clock::now() - acked;
  // The promise is "within a second" of the commit (measured by the bench,
  // printed below); this bound only catches delivery that waits for
  // something else, such as the 15 s heartbeat, and leaves room for a
  // loaded machine under ASan.
  EXPECT_LT(latency, 8s);
  std::cerr << "[ info ] tail latency after the ingest answer: "
            << std::chrono::duration_cast<std::chrono::milliseconds>(latency).count() << " ms\n";

  // One commit: by event time (the late one first).
  std::vector<std::string> got;
  for (const auto& hit : SseEvents(sse->body())) got.push_back(Message(hit));
  want.insert(want.begin(), "needle late");
  EXPECT_EQ(got, want);

  ASSERT_TRUE(text->ReadUntil([&](const std::string& b) { return CountOf(b, "\n") >= 41; }, 10s));
  EXPECT_EQ(CountOf(text->body(), "\n"), 41u);
  EXPECT_EQ(CountOf(text->body(), " gpu-node-03 needle "), 41u);
  EXPECT_EQ(text->body().find("before"), std::string::npos);
  EXPECT_EQ(text->body().find("hay"), std::string::npos);

  // Nothing more arrives for events that do not match.
  Ingest(client, {Doc(t0 + 100, "hay again"), Doc(t0 + 101, "needle skip again")});
  sse->ReadUntil([](const std::string&) { return false; }, 600ms);
  EXPECT_EQ(SseEvents(sse->body()).size(), want.size());
}

TEST_F(TailTest, HeartbeatsKeepAnIdleTailAliveAndHangUpsAreNoticed) {
  StartServer();
  auto sse = OpenTail("heartbeat=1");
  ASSERT_TRUE(
      sse->ReadUntil([](const std::string& b) { return b.find(": heartbeat\n\n") != b.npos; }, 5s));
  EXPECT_EQ(Metric("dashcam_tail_subscribers"), 1u);
  sse->Close();
  const auto deadline = Clock::now() + 5s;
  while (Metric("dashcam_tail_subscribers") != 0 && Clock::now() < deadline) {
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_EQ(Metric("dashcam_tail_subscribers"), 0u);
}

TEST_F(TailTest, ASlowClientIsEndedWithBoundedMemoryWhileOthersKeepUp) {
  StartServer({"--tail-queue-bytes", "262144"});
  HttpClient client("127.0.0.1", server_->port());
  auto slow = OpenTail("", 4096);  // connects, then never reads
  auto fast = OpenTail("");
  const std::int64_t t0 = NowMs();
  int sent = 0;
  std::uint64_t max_queued = 0, max_memory = 0;
  for (int batch = 0;
       batch < 60 && Metric("dashcam_tail_dropped_total{reason=\"slow_client\"}") == 0; ++batch) {
    std::vector<std::string> docs;
    for (int i = 0; i < 500; ++i, ++sent)
      docs.push_back(Doc(t0 + sent, "event " + std::to_string(sent)));
    Ingest(client, docs);
    fast->ReadUntil([](const std::string&) { return false; }, 100ms);
    max_queued = std::max(max_queued, Metric("dashcam_tail_queued_bytes"));
    max_memory = std::max(max_memory, Metric("dashcam_tail_memory_bytes"));
  }
  ASSERT_EQ(Metric("dashcam_tail_dropped_total{reason=\"slow_client\"}"), 1u)
      << "sent " << sent << " events";
  EXPECT_LE(max_queued, 2u * 262144);  // two clients, each bounded
  // Both tails share pieces: memory is about the longer queue.
  EXPECT_LE(max_memory, 262144u + 131072u);
  // The counter is added before the log line is written: wait for the line.
  const auto logged = [&] {
    return server_->ReadLog().find("\"event\":\"tail_dropped\"") != std::string::npos;
  };
  for (const auto until = Clock::now() + 5s; !logged() && Clock::now() < until;) {
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_TRUE(logged());

  // The fast client got every event and is still connected.
  const auto all = [&](const std::string& b) { return CompleteEvents(b) >= std::size_t(sent); };
  EXPECT_TRUE(fast->ReadUntil(all, 10s)) << CountOf(fast->body(), "\nid: ") << " of " << sent;
  EXPECT_FALSE(fast->complete());
  std::set<std::string> ids;
  for (const auto& hit : SseEvents(fast->body())) ids.emplace(hit.at("_id").as_string());
  EXPECT_EQ(ids.size(), static_cast<std::size_t>(sent));

  // The slow client, once it reads, finds some events, then the end.
  ASSERT_TRUE(slow->ReadToEnd(20s));
  EXPECT_TRUE(slow->complete());
  const std::string end = "event: end\ndata: {\"reason\":\"slow_client\"}\n\n";
  ASSERT_GE(slow->body().size(), end.size());
  EXPECT_EQ(slow->body().substr(slow->body().size() - end.size()), end);
  EXPECT_LT(SseEvents(slow->body()).size(), static_cast<std::size_t>(sent));
  const auto deadline = Clock::now() + 5s;
  while (Metric("dashcam_tail_subscribers") != 1 && Clock::now() < deadline) {
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_EQ(Metric("dashcam_tail_subscribers"), 1u);  // the fast one
}

// A client that stops reading while its queue is still short of the bound
// (so it is not a slow_client) is cut off once a write has waited 10 s, and
// the server says so in its log.
TEST_F(TailTest, AClientThatStopsReadingIsCutOffAfterTheWriteTimeout) {
  StartServer({"--tail-queue-bytes", std::to_string(32u << 20)});
  HttpClient client("127.0.0.1", server_->port());
  const auto opened = Clock::now();  // no write to the tail can start before
  auto stuck = OpenTail("", 4096);   // connects, then never reads
  const std::int64_t t0 = NowMs();
  // ~8 MB of events: more than the sockets hold (Linux lets the server's
  // send buffer grow to tcp_wmem's 4 MB), less than the queue.
  for (int batch = 0, sent = 0; batch < 16; ++batch) {
    std::vector<std::string> docs;
    for (int i = 0; i < 500; ++i, ++sent) {
      docs.push_back(Doc(t0 + sent, "event " + std::to_string(sent) + " " + std::string(900, 'x')));
    }
    Ingest(client, docs);
  }
  const auto logged = [&] {
    return server_->ReadLog().find("\"event\":\"stream_write_timeout\"") != std::string::npos;
  };
  // A write blocks once the sockets are full, during the ingest or after.
  while (!logged() && Clock::now() - opened < 60s) std::this_thread::sleep_for(100ms);
  ASSERT_TRUE(logged());
  EXPECT_GE(Clock::now() - opened, 10s);  // not before the timeout
  EXPECT_NE(server_->ReadLog().find("\"path\":\"/api/v1/tail\""), std::string::npos);
  // The connection is closed, without the final chunk, and the tail is gone.
  ASSERT_TRUE(stuck->ReadToEnd(20s));
  EXPECT_FALSE(stuck->complete());
  EXPECT_TRUE(stuck->closed());
  const auto deadline = Clock::now() + 5s;
  while (Metric("dashcam_tail_subscribers") != 0 && Clock::now() < deadline) {
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_EQ(Metric("dashcam_tail_subscribers"), 0u);
  EXPECT_EQ(Metric("dashcam_tail_dropped_total{reason=\"slow_client\"}"), 0u);
}

TEST_F(TailTest, HundredTailsEachGetTheirMatchesWhileIngesting) {
  StartServer();
  HttpClient client("127.0.0.1", server_->port());
  constexpr int kTails = 100;
  const char* const queries[] = {"log.level:ERROR", "user:alice", "cuda*", "*"};
  std::vector<std::unique_ptr<StreamClient>> tails;
  for (int i = 0; i < kTails; ++i) {
    tails.push_back(OpenTail("q=" + UrlEncode(queries[i % 4])));
    ASSERT_EQ(tails.back()->status(), 200);
  }
  EXPECT_EQ(Metric("dashcam_tail_subscribers"), static_cast<std::uint64_t>(kTails));

  GeneratorOptions opts;
  opts.seed = 3;
  opts.expected_events = 3000;
  opts.start_ms = NowMs();
  TrainingLogGenerator gen(opts);
  std::size_t want[4] = {0, 0, 0, 3000};  // [2]: from search, below
  for (int batch = 0; batch < 6; ++batch) {
    std::vector<std::string> docs;
    for (int i = 0; i < 500; ++i) {
      const GeneratedEvent ev = gen.Next();
      want[0] += ev.level == "ERROR";
      want[1] += ev.user == "alice";
      docs.push_back(ev.json);
    }
    Ingest(client, docs);
    for (auto& t : tails) {
      while (t->ReadSome(0ms)) {
      }
    }
  }
  // The prefix query's reference is search over the same events.
  auto count = client.Get("/api/v1/search?limit=0&track_total_hits=true&q=cuda*&from=" +
                          std::to_string(opts.start_ms));
  ASSERT_EQ(count.status, 200);
  want[2] = json::parse(count.body).at("total").as_int64();
  EXPECT_GT(want[2], 0u);
  // Every tail is read as it goes, as its own client would: one left unread
  // with a full socket for the tail write timeout (10 s) would be cut off.
  const auto done = [&](int i) { return CompleteEvents(tails[i]->body()) >= want[i % 4]; };
  for (const auto until = Clock::now() + 60s; Clock::now() < until;) {
    bool all = true;
    for (int i = 0; i < kTails; ++i) {
      if (!done(i)) {
        all = false;
        tails[i]->ReadSome(0ms);
      }
    }
    if (all) break;
    std::this_thread::sleep_for(5ms);
  }
  for (int i = 0; i < kTails; ++i) {
    SCOPED_TRACE(queries[i % 4]);
    StreamClient& t = *tails[i];
    const std::size_t expected = want[i % 4];
    ASSERT_TRUE(done(i)) << CountOf(t.body(), "\nid: ") << " of " << expected;
    const auto events = SseEvents(t.body());
    EXPECT_EQ(events.size(), expected);
    std::set<std::string> ids;
    for (const auto& hit : events) {
      ids.emplace(hit.at("_id").as_string());
      if (i % 4 == 0) {
        EXPECT_EQ(hit.at("_source").at("log").at("level").as_string(), "ERROR");
      } else if (i % 4 == 1) {
        EXPECT_EQ(hit.at("_source").at("user").as_string(), "alice");
      }
    }
    EXPECT_EQ(ids.size(), expected);
  }
  EXPECT_EQ(Metric("dashcam_tail_dropped_total{reason=\"slow_client\"}"), 0u);
}

TEST_F(TailTest, SigtermEndsEveryTailCleanly) {
  StartServer();
  auto sse = OpenTail("q=cuda");
  auto text = OpenTail("format=text");
  const auto start = Clock::now();
  server_->Signal(SIGTERM);
  ASSERT_TRUE(sse->ReadToEnd(10s));
  EXPECT_TRUE(sse->complete());
  EXPECT_NE(sse->body().find("event: end\ndata: {\"reason\":\"shutdown\"}\n\n"), std::string::npos);
  ASSERT_TRUE(text->ReadToEnd(10s));
  EXPECT_TRUE(text->complete());
  EXPECT_EQ(text->body(), "-- tail ended: shutdown --\n");
  std::optional<ExitStatus> exit;
  while (!(exit = server_->Poll()) && Clock::now() - start < 10s) {
    std::this_thread::sleep_for(10ms);
  }
  ASSERT_TRUE(exit.has_value()) << "still running 10 s after SIGTERM";
  EXPECT_TRUE(exit->ok()) << exit->ToString() << server_->ReadLog();
  EXPECT_LT(Clock::now() - start, 5s);
}

TEST_F(TailTest, BadRequestsAndTooManyTailsAreRefused) {
  StartServer({"--max-tails", "2"});
  HttpClient client("127.0.0.1", server_->port());
  for (const std::string params :
       {"format=csv", "order=asc", "fields=message", "heartbeat=0", "heartbeat=x", "to=never"}) {
    auto res = client.Get("/api/v1/tail?" + params);
    EXPECT_EQ(res.status, 400) << params << ": " << res.body;
    EXPECT_EQ(json::parse(res.body).at("error").at("type").as_string(), "illegal_argument");
  }
  auto bad_q = client.Get("/api/v1/tail?q=" + UrlEncode("a AND"));
  EXPECT_EQ(bad_q.status, 400);
  EXPECT_EQ(json::parse(bad_q.body).at("error").at("type").as_string(), "query_parse_error");

  auto a = OpenTail("");
  auto b = OpenTail("");
  auto refused = client.Get("/api/v1/tail");
  EXPECT_EQ(refused.status, 429) << refused.body;
  EXPECT_EQ(json::parse(refused.body).at("error").at("type").as_string(), "too_many_tails");
  a->Close();
  const auto deadline = Clock::now() + 5s;
  while (Metric("dashcam_tail_subscribers") != 1 && Clock::now() < deadline) {
    std::this_thread::sleep_for(20ms);
  }
  auto c = OpenTail("");
  EXPECT_EQ(c->status(), 200);
}

}  // namespace
}  // namespace dashcam::testing::tail_test
