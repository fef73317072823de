// Disk-full test (issue 6, section 4) against the real binary: ingestion
// fills the disk, then
//   - _bulk is refused whole with 503, Retry-After and a JSON reason, and
//     refused at once while the pause lasts;
//   - every event acknowledged before is searchable, and search, count and
//     histogram answer 200 meanwhile;
//   - /readyz is 503 naming the full disk, /metrics has dashcam_disk_full 1,
//     /api/v1/status has ingest.disk_full;
//   - a Beats window sent meanwhile gets only keepalives (A 0), no ACK;
// then space is freed without a restart, and
//   - the Beats window is ACKed, the refused _bulk batches are taken, /readyz
//     is 200 again;
//   - every event is stored exactly once (each carries a unique `ev`; none
//     has an `_id`, so a double store would show), the log has one disk_full
//     line, and PRAGMA integrity_check is ok on every partition.
// The full disk is simulated inside SQLite by the hidden
// --test-disk-quota-file (PRAGMA max_page_count: a real SQLITE_FULL), and,
// when the test may mount filesystems (root), also by a real tiny tmpfs.
#include <sys/mount.h>

#include <charconv>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <boost/json.hpp>

#include "storage/fts_tokenizer.h"
#include "storage/sqlite_db.h"
#include "tests/common/beats_client.h"
#include "tests/common/http_client.h"
#include "tests/common/stored_events.h"
#include "tests/common/test_server.h"
#include "tests/common/wait_for.h"

namespace dashcam::testing::disk_full_test {
namespace {

namespace json = boost::json;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr int kBatch = 20;  // events per _bulk batch
constexpr int kBeatsEvents = 3;

std::string NowRfc3339() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[40];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S.000Z", &tm);
  return buf;
}

std::int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

class DiskFullScenario {
 public:
  DiskFullScenario(TestServer& server, std::string data_dir)
      : server_(server), data_dir_(std::move(data_dir)), http_("127.0.0.1", server.port()) {}

  // All of the test. `free_space` makes room on the full disk.
  void Run(const std::function<void()>& free_space, int max_batches) {
    FillUntilRefused(max_batches);
    if (::testing::Test::HasFatalFailure()) return;
    CheckWhileFull();
    BeatsClient beats(server_.beats_port());
    ASSERT_TRUE(beats.connected());
    SendBeatsWindowWhileFull(beats);
    free_space();
    ResumeByItself(beats);
    CheckStoredExactlyOnce();
    CheckLog();
    ASSERT_EQ(server_.Stop(), 0);
    CheckIntegrity();
  }

 private:
  // A _bulk body of kBatch events with about 1 KiB of distinct words each.
  std::vector<std::string> NextBatch(std::string& body) {
    std::vector<std::string> evs;
    for (int i = 0; i < kBatch; ++i) {
      const std::string ev = fmt::format("bulk-{}", next_ev_++);
      std::string words;
      for (int w = 0; w < 64; ++w) words += fmt::format(" w{:x}", rng_());
      body += R"({"create":{"_index":"logs"}})"
              "\n";
      body += json::serialize(
          json::object{{"@timestamp", ts_}, {"message", "disk full test" + words}, {"ev", ev}});
      body += "\n";
      evs.push_back(ev);
    }
    return evs;
  }

  HttpResult Bulk(const std::string& body) {
    return http_.Post("/_bulk", body, {{"Content-Type", "application/x-ndjson"}});
  }

  // Counts a 200 answer's created items as acknowledged; returns whether all were.
  bool Acknowledge(const HttpResult& res, const std::vector<std::string>& evs) {
    const json::value v = json::parse(res.body);
    const json::array& items = v.at("items").as_array();
    EXPECT_EQ(items.size(), evs.size());
    bool all = true;
    for (std::size_t i = 0; i < items.size() && i < evs.size(); ++i) {
      const json::value& item = items[i].as_object().begin()->value();
      const std::int64_t status = item.at("status").as_int64();
      if (status == 201) {
        EXPECT_TRUE(acked_.insert(evs[i]).second) << evs[i] << " acknowledged twice";
      } else {
        // A full disk never fails an item with a status Filebeat drops.
        EXPECT_EQ(status, 429) << json::serialize(item);
        all = false;
      }
    }
    return all;
  }

  void ExpectDiskFullRefusal(const HttpResult& res) {
    EXPECT_EQ(res.status, 503) << res.body;
    const auto retry = res.headers.find("retry-after");
    ASSERT_NE(retry, res.headers.end()) << "503 without Retry-After";
    int seconds = 0;
    std::from_chars(retry->second.data(), retry->second.data() + retry->second.size(), seconds);
    EXPECT_GT(seconds, 0);
    const json::value v = json::parse(res.body);
    EXPECT_EQ(v.at("error").at("type").as_string(), "disk_full_exception") << res.body;
    EXPECT_NE(std::string(v.at("error").at("reason").as_string()).find("disk is full"),
              std::string::npos)
        << res.body;
    EXPECT_EQ(v.at("status").as_int64(), 503);
  }

  void FillUntilRefused(int max_batches) {
    for (int b = 0; b < max_batches; ++b) {
      std::string body;
      std::vector<std::string> evs = NextBatch(body);
      const HttpResult res = Bulk(body);
      if (res.status == 200) {
        if (!Acknowledge(res, evs)) refused_.push_back({std::move(body), std::move(evs)});
        continue;
      }
      ExpectDiskFullRefusal(res);
      refused_.push_back({std::move(body), std::move(evs)});
      break;
    }
    ASSERT_FALSE(refused_.empty()) << "the disk never filled up";
    ASSERT_FALSE(acked_.empty()) << "the disk was full from the start";
    // Paused: the next batch is refused at once, without a write.
    std::string body;
    std::vector<std::string> evs = NextBatch(body);
    const auto start = Clock::now();
    const HttpResult res = Bulk(body);
    ExpectDiskFullRefusal(res);
    EXPECT_LT(Clock::now() - start, 1s);
    refused_.push_back({std::move(body), std::move(evs)});
  }

  void CheckWhileFull() {
    const HttpResult ready = http_.Get("/readyz");
    EXPECT_EQ(ready.status, 503) << ready.body;
    EXPECT_NE(ready.body.find("disk is full"), std::string::npos) << ready.body;
    const HttpResult metrics = http_.Get("/metrics");
    EXPECT_NE(metrics.body.find("\ndashcam_disk_full 1\n"), std::string::npos);
    EXPECT_NE(metrics.body.find("dashcam_disk_full_pauses_total 1"), std::string::npos);
    EXPECT_NE(metrics.body.find("dashcam_ingest_refused_requests_total{status=\"503\"}"),
              std::string::npos);
    const HttpResult status = http_.Get("/api/v1/status");
    ASSERT_EQ(status.status, 200);
    EXPECT_TRUE(json::parse(status.body).at("ingest").at("disk_full").is_object()) << status.body;

    // Queries keep working and see every acknowledged event.
    const HttpResult search = http_.Get("/api/v1/search?from=0&limit=5&track_total_hits=true");
    ASSERT_EQ(search.status, 200) << search.body;
    EXPECT_EQ(json::parse(search.body).at("total").as_int64(),
              static_cast<std::int64_t>(acked_.size()));
    const HttpResult count = http_.Get("/_count?q=" + UrlEncode("message:test"));
    ASSERT_EQ(count.status, 200) << count.body;
    EXPECT_EQ(json::parse(count.body).at("count").as_int64(),
              static_cast<std::int64_t>(acked_.size()));
    const HttpResult histogram = http_.Get(fmt::format(
        "/api/v1/histogram?from={}&to={}&interval=1h", NowMs() - 7'200'000, NowMs() + 3'600'000));
    ASSERT_EQ(histogram.status, 200) << histogram.body;
    EXPECT_EQ(json::parse(histogram.body).at("total").as_int64(),
              static_cast<std::int64_t>(acked_.size()));
  }

  // A window sent while the disk is full: kept waiting, with keepalives.
  void SendBeatsWindowWhileFull(BeatsClient& beats) {
    std::string frames = WindowFrame(kBeatsEvents);
    for (int i = 1; i <= kBeatsEvents; ++i) {
      const std::string ev = fmt::format("beats-{}", i);
      beats_evs_.push_back(ev);
      frames += JsonFrame(i, json::serialize(json::object{
                                 {"@timestamp", ts_}, {"message", "disk full beats"}, {"ev", ev}}));
    }
    ASSERT_TRUE(beats.Send(frames));
    int keepalives = 0;
    // The first keepalive is due 2 s after the window waits, checked on a
    // 0.5 s tick: 6 s leaves room for a loaded machine or a sanitizer build.
    const auto ack = beats.ReadFinalAck(6000ms, &keepalives);
    EXPECT_FALSE(ack.has_value()) << "ACK " << ack->seq << " while the disk is full";
    EXPECT_GE(keepalives, 1);
  }

  void ResumeByItself(BeatsClient& beats) {
    const auto ack = beats.ReadFinalAck(10s);
    ASSERT_TRUE(ack.has_value()) << "no ACK after space returned";
    EXPECT_EQ(ack->seq, static_cast<std::uint32_t>(kBeatsEvents));
    for (const auto& ev : beats_evs_) acked_.insert(ev);
    // Filebeat resends a refused batch after its backoff; so do we.
    for (auto& [body, evs] : refused_) {
      bool stored = false;
      ASSERT_TRUE(WaitFor(
          [&] {
            const HttpResult res = Bulk(body);
            if (res.status != 200) return false;
            stored = Acknowledge(res, evs);
            return true;
          },
          10s))
          << "ingestion did not resume";
      EXPECT_TRUE(stored);
    }
    EXPECT_TRUE(WaitFor([&] { return http_.Get("/readyz").status == 200; }, 5s));
    EXPECT_NE(http_.Get("/metrics").body.find("\ndashcam_disk_full 0\n"), std::string::npos);
  }

  void CheckStoredExactlyOnce() {
    StoredCounts stored;
    ASSERT_TRUE(CountStored(server_.port(), "ev", stored)) << stored.error;
    EXPECT_TRUE(stored.without_field.empty());
    std::set<std::string> found;
    int duplicates = 0;
    for (const auto& [ev, n] : stored.by_value) {
      found.insert(ev);
      duplicates += n - 1;
    }
    EXPECT_EQ(duplicates, 0);
    EXPECT_EQ(found, acked_);
    std::printf("disk full: %zu events acknowledged, %zu found, %d duplicates\n", acked_.size(),
                stored.events, duplicates);
  }

  void CheckLog() {
    const std::string log = server_.ReadLog();
    const auto count = [&](std::string_view needle) {
      int n = 0;
      for (auto at = log.find(needle); at != std::string::npos; at = log.find(needle, at + 1)) ++n;
      return n;
    };
    EXPECT_EQ(count("\"event\":\"disk_full\""), 1) << log.substr(0, 4000);
    EXPECT_EQ(count("\"event\":\"disk_space_recovered\""), 1);
    EXPECT_EQ(count("\"event\":\"commit_failed\""), 0);
  }

  void CheckIntegrity() {
    int partitions = 0;
    for (const auto& entry : fs::directory_iterator(data_dir_)) {
      if (entry.path().extension() != ".db") continue;
      ++partitions;
      storage::Db db;
      ASSERT_TRUE(db.Open(entry.path().string(), SQLITE_OPEN_READONLY).ok());
      ASSERT_TRUE(storage::RegisterFtsTokenizer(db.get()).ok());
      auto stmt = db.Prepare("PRAGMA integrity_check");
      ASSERT_TRUE(stmt.ok());
      ASSERT_EQ(stmt->Step(), SQLITE_ROW);
      EXPECT_EQ(stmt->Text(0), "ok") << entry.path();
    }
    EXPECT_GE(partitions, 1);
  }

  struct Refused {
    std::string body;
    std::vector<std::string> evs;
  };

  TestServer& server_;
  const std::string data_dir_;
  HttpClient http_;
  const std::string ts_ = NowRfc3339();
  std::mt19937_64 rng_{7};
  int next_ev_ = 0;
  std::set<std::string> acked_;
  std::vector<Refused> refused_;
  std::vector<std::string> beats_evs_;
};

TEST(DiskFullTest, QuotaFullPausesIngestionQueriesWorkAndResumesByItself) {
  TempDir dir;
  const std::string quota = dir.path() + "/quota";
  std::ofstream(quota) << (200u << 10) << "\n";
  TestServer server(dir.path() + "/data", {"--test-disk-quota-file", quota});
  ASSERT_TRUE(server.Start()) << server.error() << "\n" << server.ReadLog().substr(0, 4000);
  DiskFullScenario scenario(server, dir.path() + "/data");
  scenario.Run([&] { std::ofstream(quota) << (1ull << 40) << "\n"; }, 100);
}

// A tmpfs mounted for the test (root only), unmounted when it goes.
class TinyTmpfs {
 public:
  TinyTmpfs(const std::string& dir, std::size_t bytes) : dir_(dir) {
    fs::create_directories(dir);
    const std::string opts = fmt::format("size={}", bytes);
    mounted_ = ::mount("tmpfs", dir.c_str(), "tmpfs", 0, opts.c_str()) == 0;
  }
  ~TinyTmpfs() {
    if (mounted_) ::umount2(dir_.c_str(), MNT_DETACH);
  }
  bool mounted() const { return mounted_; }

 private:
  std::string dir_;
  bool mounted_ = false;
};

TEST(DiskFullTest, RealTinyFilesystemPausesAndResumes) {
  TempDir dir;
  TinyTmpfs tmpfs(dir.path() + "/mnt", 24u << 20);
  if (!tmpfs.mounted()) GTEST_SKIP() << "cannot mount a tmpfs here (needs root)";
  // Ballast leaves 3 MiB; deleting it frees more than the 16 MiB the writer
  // wants before it resumes (WriterOptions::disk_full_resume_free_bytes).
  const std::string ballast = dir.path() + "/mnt/ballast";
  std::ofstream(ballast) << std::string(21u << 20, 'x');
  TestServerOptions o;
  o.data_dir = dir.path() + "/mnt/data";
  o.log_path = dir.path() + "/server.log";  // not on the full disk
  TestServer server(o);
  ASSERT_TRUE(server.Start()) << server.error() << "\n" << server.ReadLog().substr(0, 4000);
  DiskFullScenario scenario(server, o.data_dir);
  scenario.Run([&] { fs::remove(ballast); }, 400);
}

}  // namespace
}  // namespace dashcam::testing::disk_full_test
