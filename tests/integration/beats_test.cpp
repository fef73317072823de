// Integration tests of the Beats protocol listener (Filebeat's
// output.logstash; PROTOCOLS.md section 2): the real binary, a client written
// here from the spec over plain blocking sockets, and searches over HTTP.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zlib.h>

#include <chrono>
#include <ctime>
#include <future>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <boost/json.hpp>

#include "tests/common/beats_client.h"
#include "tests/common/http_client.h"
#include "tests/common/now.h"
#include "tests/common/test_server.h"

namespace dashcam::testing::beats_test {
namespace {

namespace json = boost::json;

// A Filebeat event, as output.logstash sends it.
std::string Event(std::string_view token, int i) {
  return json::serialize(
      json::object{{"@timestamp", NowRfc3339()},
                   {"message", std::string(token) + " event " + std::to_string(i)},
                   {"@metadata", {{"beat", "filebeat"}, {"type", "_doc"}, {"version", "8.17.0"}}},
                   {"host", {{"name", "gpu-node-1"}}},
                   {"log", {{"offset", i}}}});
}

// A window of events [first, first + n) as Filebeat sends it: W, then one C.
std::string Window(std::string_view token, int first, int n, bool compressed = true) {
  std::string events;
  for (int i = 0; i < n; ++i) events += JsonFrame(i + 1, Event(token, first + i));
  return WindowFrame(n) + (compressed ? CompressedFrame(events) : events);
}

// --- The fixture --------------------------------------------------------------

class BeatsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    extra_args_.insert(extra_args_.end(), {"--beats-listen", "127.0.0.1:0"});
    server_ = std::make_unique<TestServer>(dir_.path() + "/data", extra_args_);
    ASSERT_TRUE(server_->Start()) << server_->ReadLog();
    ASSERT_NE(server_->beats_port(), 0) << server_->ReadLog();
  }
  void TearDown() override {
    if (server_->pid() > 0) {
      EXPECT_EQ(server_->Stop(), 0) << server_->ReadLog();
    }
  }
  std::unique_ptr<BeatsClient> Connect() {
    auto c = std::make_unique<BeatsClient>(server_->beats_port());
    EXPECT_TRUE(c->connected());
    return c;
  }
  std::int64_t Count(const std::string& q) {
    HttpClient http("127.0.0.1", server_->port());
    auto res = http.Get("/api/v1/search?track_total_hits=true&q=" + UrlEncode(q));
    EXPECT_EQ(res.status, 200) << res.body;
    return json::parse(res.body).at("total").as_int64();
  }
  // The messages of every hit of `q`.
  std::multiset<std::string> Messages(const std::string& q) {
    HttpClient http("127.0.0.1", server_->port());
    std::multiset<std::string> out;
    std::string cursor;
    for (int pages = 0; pages < 100; ++pages) {
      auto res = http.Get("/api/v1/search?limit=1000&q=" + UrlEncode(q) + "&cursor=" + cursor);
      EXPECT_EQ(res.status, 200) << res.body;
      const json::value v = json::parse(res.body);
      for (const auto& hit : v.at("hits").as_array()) {
        out.insert(std::string(hit.at("_source").at("message").as_string()));
      }
      if (v.at("next_cursor").is_null()) break;
      cursor = std::string(v.at("next_cursor").as_string());
    }
    return out;
  }

  TempDir dir_;
  std::vector<std::string> extra_args_;
  std::unique_ptr<TestServer> server_;
};

TEST_F(BeatsTest, ProtocolExampleGetsExactlyTheAckBytes) {
  auto c = Connect();
  const std::string client(
      "\x32\x57\x00\x00\x00\x01"
      "\x32\x4a\x00\x00\x00\x01\x00\x00\x00\x10\x7b\x22\x6d\x65\x73\x73\x61\x67\x65\x22\x3a\x22"
      "\x68\x69\x22\x7d",
      32);
  ASSERT_TRUE(c->Send(client));
  EXPECT_EQ(c->Read(6, seconds(10)), std::string("\x32\x41\x00\x00\x00\x01", 6));
  EXPECT_EQ(c->Read(1, milliseconds(300)), "");  // nothing more
  EXPECT_EQ(Count("hi"), 1);
}

TEST_F(BeatsTest, PipelinedCompressedWindowsAreAllStored) {
  auto c = Connect();
  // Windows 1 and 2 before any ACK (Filebeat's pipelining: 2); window 3 once 1 is ACKed.
  ASSERT_TRUE(c->Send(Window("pipetok", 0, 500) + Window("pipetok", 500, 500)));
  auto ack1 = c->ReadFinalAck(seconds(30));
  ASSERT_TRUE(ack1);
  EXPECT_EQ(ack1->version, '2');
  EXPECT_EQ(ack1->seq, 500u);
  ASSERT_TRUE(c->Send(Window("pipetok", 1000, 300)));
  auto ack2 = c->ReadFinalAck(seconds(30));
  auto ack3 = c->ReadFinalAck(seconds(30));
  ASSERT_TRUE(ack2 && ack3);
  EXPECT_EQ(ack2->seq, 500u);
  EXPECT_EQ(ack3->seq, 300u);

  std::multiset<std::string> expected;
  for (int i = 0; i < 1300; ++i) expected.insert("pipetok event " + std::to_string(i));
  EXPECT_EQ(Messages("pipetok"), expected);
  // @metadata is kept as ordinary fields, and names the index as Logstash
  // would, so `_index:filebeat-*` finds events from either output.
  EXPECT_EQ(Count("pipetok AND host.name:\"gpu-node-1\""), 1300);
  EXPECT_EQ(Count("pipetok AND @metadata.beat:filebeat"), 1300);
  EXPECT_EQ(Count("pipetok AND _index:\"filebeat-8.17.0\""), 1300);
}

class SlowCommitBeatsTest : public BeatsTest {
 protected:
  SlowCommitBeatsTest() { extra_args_ = {"--test-commit-delay-ms", "6000"}; }
};

TEST_F(SlowCommitBeatsTest, KeepalivesArriveBeforeTheAckOfASlowCommit) {
  auto c = Connect();
  const auto sent = Clock::now();
  ASSERT_TRUE(c->Send(Window("slowtok", 0, 3, false)));
  auto first = c->ReadAck(seconds(10));
  ASSERT_TRUE(first);
  EXPECT_EQ(first->seq, 0u) << "a keepalive comes before the ACK";
  EXPECT_LT(Clock::now() - sent, milliseconds(4000)) << "keepalive after ~2 s";
  int keepalives = 1;
  auto final_ack = c->ReadFinalAck(seconds(30), &keepalives);
  ASSERT_TRUE(final_ack);
  EXPECT_EQ(final_ack->seq, 3u);
  EXPECT_GE(Clock::now() - sent, milliseconds(5500));
  EXPECT_GE(keepalives, 2);
  EXPECT_EQ(Count("slowtok"), 3);
}

TEST_F(SlowCommitBeatsTest, SigtermAcksPendingWindowsAndClosesIdleConnections) {
  auto busy = Connect();
  auto idle = Connect();
  ASSERT_TRUE(busy->Send(Window("draintok", 0, 5)));
  std::this_thread::sleep_for(milliseconds(1000));  // the window is committing
  auto stopped = std::async(std::launch::async, [&] { return server_->Stop(SIGTERM); });
  EXPECT_TRUE(idle->WaitClosed(seconds(3))) << "an idle connection closes at once";
  auto ack = busy->ReadFinalAck(seconds(30));
  ASSERT_TRUE(ack) << server_->ReadLog();
  EXPECT_EQ(ack->seq, 5u);
  EXPECT_TRUE(busy->WaitClosed(seconds(10)));
  ASSERT_EQ(stopped.get(), 0) << server_->ReadLog();

  ASSERT_TRUE(server_->Start());
  EXPECT_EQ(Count("draintok"), 5);
}

class OverloadedBeatsTest : public BeatsTest {
 protected:
  OverloadedBeatsTest() {
    extra_args_ = {"--queue-bytes", "1000", "--test-commit-delay-ms", "2500", "--debug"};
  }
};

// A store that refuses (its queue is full) delays the ACK; nothing is dropped.
TEST_F(OverloadedBeatsTest, RefusedWindowsAreRetriedUntilStored) {
  auto first = Connect();
  auto second = Connect();
  ASSERT_TRUE(first->Send(Window("busytok", 0, 5)));
  std::this_thread::sleep_for(milliseconds(500));  // the first window fills the queue
  ASSERT_TRUE(second->Send(Window("busytok", 5, 5)));
  int keepalives = 0;
  auto ack1 = first->ReadFinalAck(seconds(30));
  auto ack2 = second->ReadFinalAck(seconds(30), &keepalives);
  ASSERT_TRUE(ack1 && ack2) << server_->ReadLog();
  EXPECT_EQ(ack1->seq, 5u);
  EXPECT_EQ(ack2->seq, 5u);
  EXPECT_GE(keepalives, 1) << "the refused window is kept alive while it waits";
  EXPECT_NE(server_->ReadLog().find("\"event\":\"beats_store_overloaded\""), std::string::npos);
  EXPECT_EQ(Count("busytok"), 10);
}

TEST_F(BeatsTest, AWindowCutMidwayAndResentIsStoredOnce) {
  const std::string window = Window("cuttok", 0, 3, false);
  {
    auto c = Connect();
    ASSERT_TRUE(c->Send(window.substr(0, window.size() - 10)));  // inside event 3
    std::this_thread::sleep_for(milliseconds(200));
  }  // connection cut
  auto c = Connect();
  ASSERT_TRUE(c->Send(window));
  auto ack = c->ReadFinalAck(seconds(10));
  ASSERT_TRUE(ack);
  EXPECT_EQ(ack->seq, 3u);
  std::this_thread::sleep_for(milliseconds(200));
  EXPECT_EQ(Count("cuttok"), 3);
}

struct Malformed {
  std::string name;
  std::string bytes;   // sent after a good window was ACKed
  std::string reason;  // expected in its beats_protocol_error line
};

std::vector<Malformed> MalformedCases() {
  const std::string bad1 = JsonFrame(1, Event("badtok", 1));
  const std::string bad2 = JsonFrame(2, Event("badtok", 2));
  return {
      {"unknown version byte", WindowFrame(2) + bad1 + "3J" + U32(2),
       "unknown protocol version byte '3'"},
      {"unknown frame type", WindowFrame(2) + bad1 + "2X" + U32(2), "unknown frame type 'X'"},
      {"zero-length event", WindowFrame(2) + bad1 + "2J" + U32(2) + U32(0),
       "JSON event seq 2 has length 0"},
      {"event over the size limit", WindowFrame(1) + "2J" + U32(1) + U32(2u << 20),
       "JSON event seq 1 is 2097152 bytes, over the limit"},
      {"window count 0", WindowFrame(0), "window count is 0"},
      {"window over the max", WindowFrame(10001) + bad1, "window count 10001 is over the limit"},
      {"corrupt zlib", WindowFrame(1) + "2C" + U32(16) + "0123456789abcdef",
       "corrupt compressed frame"},
      {"compressed inside compressed", WindowFrame(1) + CompressedFrame(CompressedFrame(bad1)),
       "compressed frame inside a compressed frame"},
      {"invalid JSON event", WindowFrame(2) + bad1 + JsonFrame(2, R"({"message": badtok)"),
       "event seq 2: invalid JSON"},
      {"seq out of order", WindowFrame(2) + bad2 + bad1, "event seq 2 where seq 1 was expected"},
      {"event outside a window", bad1, "event seq 1 outside a window"},
      {"window inside a window", WindowFrame(2) + bad1 + WindowFrame(1) + bad1,
       "window frame after 1 of the previous window's 2 events"},
  };
}

std::size_t CountOf(const std::string& haystack, const std::string& needle) {
  std::size_t n = 0;
  for (auto at = haystack.find(needle); at != std::string::npos;
       at = haystack.find(needle, at + 1)) {
    ++n;
  }
  return n;
}

TEST_F(BeatsTest, MalformedInputClosesTheConnectionAndKeepsWhatWasAcked) {
  const auto cases = MalformedCases();
  for (std::size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(cases[i].name);
    auto c = Connect();
    ASSERT_TRUE(c->Send(WindowFrame(1) + JsonFrame(1, Event("goodtok", static_cast<int>(i)))));
    auto ack = c->ReadFinalAck(seconds(10));
    ASSERT_TRUE(ack);
    EXPECT_EQ(ack->seq, 1u);
    c->Send(cases[i].bytes);
    EXPECT_TRUE(c->WaitClosed(seconds(10)));
    const std::string log = server_->ReadLog();
    EXPECT_EQ(CountOf(log, "\"event\":\"beats_protocol_error\""), i + 1);
    EXPECT_EQ(CountOf(log, cases[i].reason), 1u) << log;
  }
  EXPECT_EQ(Count("goodtok"), static_cast<std::int64_t>(cases.size()));
  EXPECT_EQ(Count("badtok"), 0);
}

TEST_F(BeatsTest, V1DataFramesAreStoredAndAckedAsV1) {
  auto c = Connect();
  ASSERT_TRUE(c->Send(WindowFrame(1, '1') +
                      DataFrame(1, {{"message", "vonetok hello \"quoted\""}, {"host", "oldbox"}})));
  auto ack = c->ReadAck(seconds(10));
  ASSERT_TRUE(ack);
  EXPECT_EQ(ack->version, '1');
  EXPECT_EQ(ack->seq, 1u);
  // And a compressed v1 window.
  ASSERT_TRUE(c->Send(WindowFrame(2, '1') +
                      CompressedFrame(DataFrame(1, {{"message", "vonetok two"}}) +
                                          DataFrame(2, {{"message", "vonetok three"}}),
                                      '1')));
  ack = c->ReadFinalAck(seconds(10));
  ASSERT_TRUE(ack);
  EXPECT_EQ(ack->seq, 2u);
  EXPECT_EQ(Messages("vonetok"), (std::multiset<std::string>{"vonetok hello \"quoted\"",
                                                             "vonetok two", "vonetok three"}));
  EXPECT_EQ(Count("host:oldbox"), 1);
}

}  // namespace
}  // namespace dashcam::testing::beats_test
