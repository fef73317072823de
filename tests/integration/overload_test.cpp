// Overload test (issue 6, section 4): the server is started with a small
// writer queue (--queue-bytes) and slowed commits (the hidden
// --test-commit-delay-ms), then several times more concurrent clients than it
// can absorb send at once: gzip-compressed _bulk batches and Beats windows.
// The server must push back (429 with Retry-After on HTTP, a delayed ACK on
// Beats) instead of growing: no 5xx, peak RSS under a bound. Clients retry
// (honouring Retry-After up to a short cap, and waiting for Beats ACKs), and
// in the end every event is stored exactly once: each event carries a unique
// id (the _bulk action's `_id`, Beats' `@metadata._id`) and a unique `ev`
// field that the check counts through the export endpoint.
#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <boost/json.hpp>

#include "tests/common/beats_client.h"
#include "tests/common/http_client.h"
#include "tests/common/now.h"
#include "tests/common/stored_events.h"
#include "tests/common/test_server.h"

#if defined(__SANITIZE_ADDRESS__)
#define DASHCAM_OVERLOAD_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define DASHCAM_OVERLOAD_SANITIZED 1
#endif
#endif

namespace dashcam::testing::overload_test {
namespace {

namespace json = boost::json;
using std::chrono::milliseconds;

// The writer takes at most kQueueBytes of queued events (about 4 batches of
// kBatch events as Record::ApproxBytes counts them) per commit, and every
// commit sleeps kCommitDelayMs first: 20 clients each with one batch in
// flight are about 4-5x what one commit absorbs.
constexpr int kBulkClients = 16;
constexpr int kBeatsClients = 4;
constexpr std::size_t kBatch = 100;  // events per _bulk batch and per Beats window
constexpr std::size_t kQueueBytes = 256u << 10;
constexpr int kCommitDelayMs = 50;
constexpr milliseconds kRetryCap{50};  // Retry-After is honoured up to this
#ifdef DASHCAM_OVERLOAD_SANITIZED
constexpr int kBatchesPerClient = 4;                // the server is 3-5x slower
constexpr std::uint64_t kRssBound = 1024ull << 20;  // measured: ~330 MiB (shadow, quarantine)
#else
constexpr int kBatchesPerClient = 12;
constexpr std::uint64_t kRssBound = 128ull << 20;  // measured: ~32 MiB
#endif
constexpr auto kDeadline = std::chrono::seconds(120);  // a stuck run fails, not hangs

std::string EventJson(const std::string& ev, const std::string& ts, bool beats) {
  json::object o{{"@timestamp", ts},
                 {"message", fmt::format("overload test event {} step={} loss=0.{}", ev,
                                         ev.size() * 7, ev.size() * 13)},
                 {"host", {{"name", "gpu-node-03"}}},
                 {"ev", ev}};
  if (beats) o["@metadata"] = {{"beat", "filebeat"}, {"version", "8.17.0"}, {"_id", ev}};
  return json::serialize(o);
}

// What every client counts; merged under a mutex when it finishes.
struct Tally {
  std::set<std::string> sent;   // ids sent at least once
  std::set<std::string> acked;  // ids the server acknowledged
  std::uint64_t requests = 0;   // _bulk requests or Beats windows sent
  std::uint64_t refused_429 = 0;
  std::uint64_t item_429 = 0;  // items refused with 429 inside a 200 answer
  std::uint64_t missing_retry_after = 0;
  std::uint64_t status_5xx = 0;
  std::uint64_t transport_errors = 0;
  std::uint64_t other_errors = 0;
  std::uint64_t keepalives = 0;      // Beats `A 0` while a window waited
  std::uint64_t slow_acks = 0;       // Beats windows ACKed after more than 2 commit delays
  std::int64_t max_ack_ms = 0;       // Beats: the slowest ACK
  std::vector<std::string> samples;  // a few unexpected answers, for the failure message

  void Sample(std::string s) {
    if (samples.size() < 5) samples.push_back(std::move(s));
  }
  void Merge(const Tally& t) {
    sent.insert(t.sent.begin(), t.sent.end());
    acked.insert(t.acked.begin(), t.acked.end());
    requests += t.requests;
    refused_429 += t.refused_429;
    item_429 += t.item_429;
    missing_retry_after += t.missing_retry_after;
    status_5xx += t.status_5xx;
    transport_errors += t.transport_errors;
    other_errors += t.other_errors;
    keepalives += t.keepalives;
    slow_acks += t.slow_acks;
    max_ack_ms = std::max(max_ack_ms, t.max_ack_ms);
    for (const auto& s : t.samples) Sample(s);
  }
};

// Retry-After in seconds, capped; the cap when the header is missing or bad.
milliseconds RetryDelay(const HttpResult& res, Tally& t) {
  const auto it = res.headers.find("retry-after");
  int seconds = -1;
  if (it != res.headers.end()) {
    const std::string& v = it->second;
    std::from_chars(v.data(), v.data() + v.size(), seconds);
  }
  if (seconds < 0) {
    ++t.missing_retry_after;
    return kRetryCap;
  }
  return std::min<milliseconds>(std::chrono::seconds(seconds), kRetryCap);
}

// Applies a 200 answer's items to `pending`: acknowledged ones leave it,
// 429 ones stay for the retry, anything else is an unexpected failure.
void ApplyBulkItems(const HttpResult& res, std::vector<std::string>& pending, Tally& t) {
  json::error_code ec;
  const json::value v = json::parse(res.body, ec);
  const json::array* items = nullptr;
  if (!ec && v.is_object()) {
    if (const auto* i = v.as_object().if_contains("items"); i && i->is_array()) {
      items = &i->as_array();
    }
  }
  if (items == nullptr || items->size() != pending.size()) {
    ++t.other_errors;
    t.Sample("bad _bulk answer: " + res.body.substr(0, 300));
    return;  // resend the whole batch: ids make that harmless
  }
  std::vector<std::string> retry;
  for (std::size_t i = 0; i < pending.size(); ++i) {
    const auto& r = (*items)[i].as_object().at("index").as_object();
    const auto status = r.at("status").as_int64();
    if (status == 200 || status == 201) {
      t.acked.insert(pending[i]);
    } else if (status == 429) {
      ++t.item_429;
      retry.push_back(pending[i]);
    } else {
      if (status >= 500) ++t.status_5xx;
      ++t.other_errors;
      t.Sample(fmt::format("item {}: {}", pending[i], json::serialize((*items)[i])));
    }
  }
  pending = std::move(retry);
}

void RunBulkClient(int id, std::uint16_t port, Clock::time_point deadline, Tally& t) {
  HttpClient http("127.0.0.1", port, HttpClientOptions{.retry_once = false});
  std::mt19937 rng(static_cast<unsigned>(id));
  std::uniform_int_distribution<int> jitter(0, 10);
  for (int b = 0; b < kBatchesPerClient; ++b) {
    std::vector<std::string> pending;
    for (std::size_t i = 0; i < kBatch; ++i) pending.push_back(fmt::format("h{}b{}e{}", id, b, i));
    while (!pending.empty() && Clock::now() < deadline) {
      const std::string ts = NowRfc3339();
      std::string body;
      for (const std::string& ev : pending) {
        body += R"({"index":{"_index":"overload","_id":")" + ev + "\"}}\n";
        body += EventJson(ev, ts, false) + "\n";
      }
      t.sent.insert(pending.begin(), pending.end());
      ++t.requests;
      const HttpResult res =
          http.Post("/_bulk", Gzip(body),
                    {{"Content-Type", "application/x-ndjson"}, {"Content-Encoding", "gzip"}});
      if (res.status == 429) {
        ++t.refused_429;
        std::this_thread::sleep_for(RetryDelay(res, t) + milliseconds(jitter(rng)));
      } else if (res.status == 200) {
        ApplyBulkItems(res, pending, t);
      } else {
        if (res.status == 0) ++t.transport_errors;
        if (res.status >= 500) ++t.status_5xx;
        if (res.status != 0) ++t.other_errors;
        t.Sample(fmt::format("_bulk {}: {}{}", res.status, res.error, res.body.substr(0, 300)));
        std::this_thread::sleep_for(kRetryCap);
      }
    }
  }
}

void RunBeatsClient(int id, std::uint16_t port, Clock::time_point deadline, Tally& t) {
  auto client = std::make_unique<BeatsClient>(port);
  for (int w = 0; w < kBatchesPerClient && Clock::now() < deadline;) {
    std::vector<std::string> evs;
    for (std::size_t i = 0; i < kBatch; ++i) evs.push_back(fmt::format("b{}w{}e{}", id, w, i));
    const std::string ts = NowRfc3339();
    std::string frames;
    for (std::size_t i = 0; i < evs.size(); ++i) {
      frames += JsonFrame(static_cast<std::uint32_t>(i + 1), EventJson(evs[i], ts, true));
    }
    t.sent.insert(evs.begin(), evs.end());
    ++t.requests;
    const auto start = Clock::now();
    int keepalives = 0;
    std::optional<Ack> ack;
    if (client->connected() && client->Send(WindowFrame(kBatch) + CompressedFrame(frames))) {
      ack = client->ReadFinalAck(std::chrono::duration_cast<milliseconds>(deadline - start),
                                 &keepalives);
    }
    const auto ms = std::chrono::duration_cast<milliseconds>(Clock::now() - start).count();
    t.keepalives += static_cast<std::uint64_t>(keepalives);
    if (!ack || ack->seq != kBatch) {
      // The server closed or never answered: resend the window on a new
      // connection, as Filebeat does (the ids keep it from storing twice).
      ++t.transport_errors;
      t.Sample(fmt::format("Beats window {}/{}: no ACK after {} ms", id, w, ms));
      client = std::make_unique<BeatsClient>(port);
      std::this_thread::sleep_for(kRetryCap);
      continue;
    }
    t.max_ack_ms = std::max<std::int64_t>(t.max_ack_ms, ms);
    if (ms > 2 * kCommitDelayMs) ++t.slow_acks;
    t.acked.insert(evs.begin(), evs.end());
    ++w;
  }
}

std::size_t CountLines(const std::string& log, std::string_view what) {
  std::size_t n = 0;
  for (auto at = log.find(what); at != std::string::npos; at = log.find(what, at + 1)) ++n;
  return n;
}

TEST(OverloadTest, FourTimesTooManyClientsGet429AndEverythingIsStoredOnce) {
  TempDir dir;
  // --debug: the Beats session logs each refused append (beats_store_overloaded),
  // which is how the test sees ACKs delayed by backpressure.
  TestServer server(dir.path() + "/data",
                    {"--queue-bytes", std::to_string(kQueueBytes), "--test-commit-delay-ms",
                     std::to_string(kCommitDelayMs), "--debug"});
  ASSERT_TRUE(server.Start()) << server.error() << "\n" << server.ReadLog().substr(0, 4000);
  ASSERT_NE(server.beats_port(), 0);
  const std::uint64_t rss_at_start = server.PeakRssBytes().value_or(0);

  const auto t0 = Clock::now();
  const auto deadline = t0 + kDeadline;
  std::vector<Tally> bulk(kBulkClients), beats(kBeatsClients);
  std::vector<std::thread> threads;
  for (int i = 0; i < kBulkClients; ++i) {
    threads.emplace_back(RunBulkClient, i, server.port(), deadline, std::ref(bulk[i]));
  }
  for (int i = 0; i < kBeatsClients; ++i) {
    threads.emplace_back(RunBeatsClient, i, server.beats_port(), deadline, std::ref(beats[i]));
  }
  for (auto& t : threads) t.join();
  const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  // Before the export, which is not what this test bounds.
  const std::optional<std::uint64_t> peak_rss = server.PeakRssBytes();

  Tally http_total, beats_total, all;
  for (const Tally& t : bulk) http_total.Merge(t);
  for (const Tally& t : beats) beats_total.Merge(t);
  all.Merge(http_total);
  all.Merge(beats_total);

  StoredCounts stored;
  ASSERT_TRUE(CountStored(server.port(), "ev", stored)) << stored.error;
  EXPECT_TRUE(stored.without_field.empty())
      << "an exported event without ev: " << stored.without_field.front();
  const std::map<std::string, int>& found = stored.by_value;
  const std::size_t lines = stored.events;
  ASSERT_EQ(server.Stop(), 0) << server.ReadLog().substr(0, 4000);
  const std::size_t beats_overloaded = CountLines(server.ReadLog(), "beats_store_overloaded");

  std::size_t missing = 0, duplicated = 0, phantoms = 0;
  for (const std::string& ev : all.sent) {
    const auto it = found.find(ev);
    if (it == found.end()) {
      if (++missing <= 5) ADD_FAILURE() << ev << " was sent but is not stored";
    } else if (it->second > 1) {
      if (++duplicated <= 5) ADD_FAILURE() << ev << " stored " << it->second << " times";
    }
  }
  for (const auto& [ev, n] : found) {
    if (!all.sent.contains(ev) && ++phantoms <= 5) ADD_FAILURE() << "never sent: " << ev;
  }
  const std::size_t expected =
      static_cast<std::size_t>(kBulkClients + kBeatsClients) * kBatchesPerClient * kBatch;

  std::printf(
      "overload test: %d _bulk + %d Beats clients, queue %zu KiB, commit delay %d ms, %.1f s\n"
      "  _bulk: %zu events sent in %llu requests, %llu answered 429 (%llu without Retry-After), "
      "%llu items 429, %llu 5xx, %llu other errors\n"
      "  Beats: %zu events sent in %llu windows, %zu refused appends (delayed ACKs), %llu windows "
      "ACKed after > %d ms, slowest ACK %lld ms, %llu keepalives, %llu resent\n"
      "  stored %zu events (%zu expected), %zu missing, %zu duplicated, %zu never sent\n"
      "  peak RSS %.1f MiB (at start %.1f MiB, bound %llu MiB)\n",
      kBulkClients, kBeatsClients, kQueueBytes >> 10, kCommitDelayMs, seconds,
      http_total.sent.size(), static_cast<unsigned long long>(http_total.requests),
      static_cast<unsigned long long>(http_total.refused_429),
      static_cast<unsigned long long>(http_total.missing_retry_after),
      static_cast<unsigned long long>(http_total.item_429),
      static_cast<unsigned long long>(http_total.status_5xx),
      static_cast<unsigned long long>(http_total.other_errors), beats_total.sent.size(),
      static_cast<unsigned long long>(beats_total.requests), beats_overloaded,
      static_cast<unsigned long long>(beats_total.slow_acks), 2 * kCommitDelayMs,
      static_cast<long long>(beats_total.max_ack_ms),
      static_cast<unsigned long long>(beats_total.keepalives),
      static_cast<unsigned long long>(beats_total.transport_errors), lines, expected, missing,
      duplicated, phantoms, static_cast<double>(peak_rss.value_or(0)) / (1 << 20),
      static_cast<double>(rss_at_start) / (1 << 20),
      static_cast<unsigned long long>(kRssBound >> 20));
  for (const std::string& s : all.samples) std::printf("  unexpected: %s\n", s.c_str());

  // It really was overloaded: HTTP clients were refused, many times over.
  EXPECT_GE(http_total.refused_429 + http_total.item_429, static_cast<std::uint64_t>(kBulkClients))
      << "the server absorbed everything: the test did not overload it";
  // ... and Beats windows waited: their appends were refused and retried.
  EXPECT_GT(beats_overloaded, 0u) << "no Beats append was refused: no ACK was delayed";
  EXPECT_EQ(http_total.missing_retry_after, 0u) << "a 429 without Retry-After";
  EXPECT_EQ(all.status_5xx, 0u);
  EXPECT_EQ(all.other_errors, 0u);
  EXPECT_EQ(http_total.transport_errors, 0u);
  // Every event stored exactly once, and all acknowledged.
  EXPECT_EQ(all.sent.size(), expected);
  EXPECT_EQ(all.acked.size(), expected);
  EXPECT_EQ(missing, 0u);
  EXPECT_EQ(duplicated, 0u);
  EXPECT_EQ(phantoms, 0u);
  EXPECT_EQ(lines, expected);
  ASSERT_TRUE(peak_rss.has_value());
  EXPECT_LT(*peak_rss, kRssBound);
}

}  // namespace
}  // namespace dashcam::testing::overload_test
