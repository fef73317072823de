// Tests for storage/writer.h's disk-full pause against real SQLite partition
// files. The disk fills up for real inside SQLite: the test quota file
// (PartitionOptions::test_quota_file) caps each partition with PRAGMA
// max_page_count, so inserts past it fail with SQLITE_FULL, and raising the
// number in the file frees the space again.
#include "storage/writer.h"

#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "storage/fts_tokenizer.h"
#include "storage/metrics.h"
#include "storage/source_codec.h"
#include "storage/sqlite_db.h"
#include "storage/time_format.h"
#include "tests/common/test_server.h"

namespace dashcam::storage {
namespace {

using namespace std::chrono_literals;

constexpr std::int64_t kWriterDay = 20786;  // 2026-11-29
constexpr TimeMs kWriterT0 = kWriterDay * kMsPerDay + 10 * 3'600'000;
// Room for the schema (one page per table) and a few batches, not 100.
constexpr std::uint64_t kSmallQuota = 288u << 10;
constexpr std::uint64_t kNoQuota = 1ull << 40;

// What one partition file holds, read with a connection of its own.
struct FileContents {
  std::int64_t events = 0;
  std::int64_t level_counted = 0;  // sum of level_minutes: must equal events
  std::set<std::string> sources;
  std::string integrity;
};

FileContents ReadFile(const std::string& path) {
  FileContents out;
  Db db;
  EXPECT_TRUE(db.Open(path, SQLITE_OPEN_READONLY).ok()) << path;
  // As the store's readers do: the writer's probes and its reopening of
  // the file after a full disk take locks a reader may meet (seen in CI as
  // a failed prepare, without it).
  sqlite3_busy_timeout(db.get(), 5000);
  EXPECT_TRUE(RegisterFtsTokenizer(db.get()).ok());
  EXPECT_TRUE(RegisterSourceFunction(db.get()).ok());
  auto one = [&](const char* sql, auto read) {
    auto stmt = db.Prepare(sql);
    EXPECT_TRUE(stmt.ok()) << sql << ": " << sqlite3_errmsg(db.get());
    const bool row = stmt.ok() && stmt->Step() == SQLITE_ROW;
    EXPECT_TRUE(row) << sql;
    if (row) read(*stmt);
  };
  one("PRAGMA integrity_check", [&](Stmt& s) { out.integrity = s.Text(0); });
  one("SELECT count(*) FROM events", [&](Stmt& s) { out.events = s.Int(0); });
  one("SELECT coalesce(sum(n), 0) FROM level_minutes",
      [&](Stmt& s) { out.level_counted = s.Int(0); });
  auto stmt = db.Prepare("SELECT dc_source(source) FROM events");
  EXPECT_TRUE(stmt.ok()) << sqlite3_errmsg(db.get());
  while (stmt.ok() && stmt->Step() == SQLITE_ROW) out.sources.insert(std::string(stmt->Text(0)));
  return out;
}

class WriterDiskFullTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(parts_.Discover().ok());
    SetQuota(kSmallQuota);
  }
  void TearDown() override {
    if (writer_) writer_->Stop();
  }

  void StartWriter(std::chrono::milliseconds probe_interval, std::uint64_t resume_free_bytes = 0,
                   const std::function<void(WriterOptions&)>& tweak = {}) {
    WriterOptions o;
    o.disk_full_resume_free_bytes = resume_free_bytes;
    o.partition.sync = SyncMode::kNormal;
    o.partition.test_quota_file = QuotaPath();
    o.disk_full_probe_interval = probe_interval;
    o.metrics = &metrics_;
    if (tweak) tweak(o);
    writer_ = std::make_unique<Writer>(parts_, o, log_);
    writer_->Start();
  }

  // Commits so far (transactions that ended, each counted once).
  std::uint64_t Commits() const {
    const std::string text = metrics_.Render();
    const std::string name = "dashcam_commit_group_events_count ";
    const auto at = text.find(name);
    return at == std::string::npos ? 0 : std::stoull(text.substr(at + name.size()));
  }

  // Queues one part of a stream; its result arrives in the returned future.
  std::future<AppendResult> SubmitPart(std::vector<Record> records, std::uint64_t stream,
                                       bool more) {
    auto done = std::make_shared<std::promise<AppendResult>>();
    auto result = done->get_future();
    writer_->Submit(
        std::move(records), [done](AppendResult r) { done->set_value(std::move(r)); },
        BatchPart{stream, more});
    return result;
  }

  std::string QuotaPath() const { return dir_.path() + "/quota"; }
  void SetQuota(std::uint64_t bytes) { std::ofstream(QuotaPath()) << bytes << "\n"; }

  // A batch of `n` events of about 2 KiB of distinct words each, named
  // "<prefix>-<i>" (the name is the stored source).
  std::vector<Record> Batch(const std::string& prefix, int n, TimeMs ts = kWriterT0) {
    std::vector<Record> out;
    for (int i = 0; i < n; ++i) {
      Record r;
      r.ts_ms = ts + i;
      r.level = i % 2 ? "INFO" : "WARN";
      for (int w = 0; w < 200; ++w) r.message += fmt::format("w{:x} ", rng_());
      r.source = fmt::format("{}-{}", prefix, i);
      out.push_back(std::move(r));
    }
    return out;
  }

  AppendResult Append(std::vector<Record> records) {
    std::promise<AppendResult> done;
    auto result = done.get_future();
    writer_->Submit(std::move(records), [&](AppendResult r) { done.set_value(std::move(r)); });
    return result.get();
  }

  // Appends batches until one fails; records the names of stored events.
  AppendResult FillUp(std::set<std::string>& stored) {
    for (int b = 0; b < 100; ++b) {
      const std::string prefix = fmt::format("fill{}", b);
      AppendResult r = Append(Batch(prefix, 20));
      if (!r.status.ok()) return r;
      for (int i = 0; i < 20; ++i) stored.insert(fmt::format("{}-{}", prefix, i));
    }
    ADD_FAILURE() << "the quota never filled up";
    return {};
  }

  bool WaitUntilWritable(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (writer_->Stats().disk_full) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(10ms);
    }
    return true;
  }

  testing::TempDir dir_;
  PartitionSet parts_{dir_.path() + "/data"};
  Log log_ = Log::Null();
  Metrics metrics_;
  std::unique_ptr<Writer> writer_;
  std::mt19937_64 rng_{42};
};

// The fixture's writer without a quota.
class WriterIdleDayTest : public WriterDiskFullTest {
 protected:
  void SetUp() override {
    WriterDiskFullTest::SetUp();
    SetQuota(kNoQuota);
  }
};

// A day the last 8 group commits did not write is closed (Writer::CloseIdle):
// its connection goes, and with it the -wal and -shm files. A late event
// reopens it and is stored beside the earlier ones, even in a millisecond
// that already holds one.
TEST_F(WriterIdleDayTest, AClosedDayReopensForALateEvent) {
  StartWriter(100ms);
  ASSERT_TRUE(Append(Batch("early", 10)).status.ok());
  const std::string path = parts_.PathFor(kWriterDay);
  EXPECT_TRUE(std::filesystem::exists(path + "-wal"));
  for (int g = 0; g < 9; ++g) {
    const TimeMs t = kWriterT0 + kMsPerDay + g * 100;
    ASSERT_TRUE(Append(Batch(fmt::format("next{}", g), 5, t)).status.ok());
  }
  EXPECT_FALSE(std::filesystem::exists(path + "-wal"));
  EXPECT_FALSE(std::filesystem::exists(path + "-shm"));
  const AppendResult late = Append(Batch("late", 3, kWriterT0 + 5));
  ASSERT_TRUE(late.status.ok()) << late.status.ToString();
  writer_->Stop();
  const FileContents day = ReadFile(path);
  EXPECT_EQ(day.integrity, "ok");
  EXPECT_EQ(day.events, 13);
  EXPECT_EQ(day.level_counted, 13);
  for (const char* name : {"early-0", "early-5", "early-9", "late-0", "late-2"}) {
    EXPECT_TRUE(day.sources.contains(name)) << name;
  }
}

// A batch queued in parts is written part by part into one transaction,
// which waits for the stream's next part and commits once the last is in;
// no part is reported before then.
TEST_F(WriterIdleDayTest, PartsOfABatchShareOneCommit) {
  StartWriter(100ms, 0, [](WriterOptions& o) {
    o.part_wait = 10s;
    o.max_transaction_open = 60s;
  });
  const std::uint64_t stream = writer_->NewStream();
  auto first = SubmitPart(Batch("p1", 30), stream, true);
  EXPECT_EQ(first.wait_for(300ms), std::future_status::timeout) << "reported before the last part";
  auto second = SubmitPart(Batch("p2", 30, kWriterT0 + 100), stream, true);
  auto last = SubmitPart(Batch("p3", 30, kWriterT0 + 200), stream, false);
  for (auto* f : {&first, &second, &last}) {
    const AppendResult r = f->get();
    ASSERT_TRUE(r.status.ok()) << r.status.ToString();
    ASSERT_EQ(r.outcomes.size(), 30u);
    for (RecordOutcome o : r.outcomes) EXPECT_EQ(o, RecordOutcome::kCreated);
  }
  EXPECT_EQ(Commits(), 1u);
  writer_->Stop();
  const FileContents day = ReadFile(parts_.PathFor(kWriterDay));
  EXPECT_EQ(day.integrity, "ok");
  EXPECT_EQ(day.events, 90);
  EXPECT_EQ(day.level_counted, 90);
}

// Parts pay only while the writer would wait for them: with a batch queued
// or being written, a new batch is better queued whole (NewStream 0).
TEST_F(WriterIdleDayTest, NoStreamWhileTheWriterHasOtherWork) {
  StartWriter(100ms, 0, [](WriterOptions& o) { o.test_commit_delay_ms = 300; });
  EXPECT_NE(writer_->NewStream(), 0u);
  std::promise<AppendResult> done;
  writer_->Submit(Batch("busy", 5), [&](AppendResult r) { done.set_value(std::move(r)); });
  EXPECT_EQ(writer_->NewStream(), 0u);
  EXPECT_TRUE(done.get_future().get().status.ok());
  EXPECT_NE(writer_->NewStream(), 0u);
}

// A stream whose last part never comes costs its transaction one part_wait;
// a transaction of max_group_records, or holding a batch queued whole, does
// not wait at all.
TEST_F(WriterIdleDayTest, TransactionsWaitForPartsOnlyBrieflyAndUnderTheGroupLimit) {
  StartWriter(100ms, 0, [](WriterOptions& o) {
    o.part_wait = 200ms;
    o.max_group_records = 50;
  });
  auto open = SubmitPart(Batch("open", 10), writer_->NewStream(), true);
  ASSERT_EQ(open.wait_for(10s), std::future_status::ready);
  EXPECT_TRUE(open.get().status.ok());

  StartWriter(100ms, 0, [](WriterOptions& o) {
    o.part_wait = 60s;
    o.max_transaction_open = 60s;
    o.max_group_records = 50;
  });
  auto big = SubmitPart(Batch("big", 60, kWriterT0 + 1000), writer_->NewStream(), true);
  ASSERT_EQ(big.wait_for(10s), std::future_status::ready) << "waited for a part it did not need";
  EXPECT_TRUE(big.get().status.ok());

  // A batch queued whole ends the wait: its client is not held up by
  // another's parts.
  auto part = SubmitPart(Batch("part", 5, kWriterT0 + 2000), writer_->NewStream(), true);
  std::this_thread::sleep_for(100ms);  // in the open transaction by now
  auto whole = SubmitPart(Batch("whole", 5, kWriterT0 + 3000), 0, false);
  ASSERT_EQ(whole.wait_for(10s), std::future_status::ready) << "held up by another's parts";
  EXPECT_TRUE(whole.get().status.ok());
  EXPECT_TRUE(part.get().status.ok());
  writer_->Stop();
  const FileContents day = ReadFile(parts_.PathFor(kWriterDay));
  EXPECT_EQ(day.events, 80);
}

// A part that cannot be stored takes back the parts written before it in the
// same transaction: none of them is reported stored, and none is in the file.
TEST_F(WriterDiskFullTest, APartThatFailsFailsTheEarlierPartsOfItsTransaction) {
  StartWriter(100ms, 0, [](WriterOptions& o) {
    o.part_wait = 10s;
    o.max_transaction_open = 60s;
  });
  ASSERT_TRUE(Append(Batch("before", 2)).status.ok());
  const std::uint64_t stream = writer_->NewStream();
  auto small = SubmitPart(Batch("small", 2, kWriterT0 + 100), stream, true);
  std::this_thread::sleep_for(100ms);  // written into the open transaction by now
  auto large = SubmitPart(Batch("large", 400, kWriterT0 + 200), stream, false);
  for (auto* f : {&small, &large}) {
    const AppendResult r = f->get();
    EXPECT_EQ(r.status.code(), StatusCode::kNoSpace) << r.status.ToString();
    for (RecordOutcome o : r.outcomes) EXPECT_EQ(o, RecordOutcome::kFailed);
  }
  writer_->Stop();
  const FileContents day = ReadFile(parts_.PathFor(kWriterDay));
  EXPECT_EQ(day.integrity, "ok");
  EXPECT_EQ(day.sources, (std::set<std::string>{"before-0", "before-1"}));
  EXPECT_EQ(day.level_counted, 2);
}

TEST_F(WriterDiskFullTest, FullDiskRollsBackPausesAndResumesByItself) {
  StartWriter(100ms);
  std::set<std::string> stored;
  const AppendResult failed = FillUp(stored);
  ASSERT_FALSE(stored.empty()) << failed.status.ToString();
  // The failed batch: nothing of it stored or reported stored.
  EXPECT_EQ(failed.status.code(), StatusCode::kNoSpace) << failed.status.ToString();
  ASSERT_EQ(failed.outcomes.size(), 20u);
  for (RecordOutcome o : failed.outcomes) EXPECT_EQ(o, RecordOutcome::kFailed);

  WriterStats stats = writer_->Stats();
  EXPECT_TRUE(stats.disk_full);
  EXPECT_GT(stats.disk_full_since_ms, 0);
  EXPECT_EQ(stats.disk_full_error.code(), StatusCode::kNoSpace);

  // Paused: refused at once, before Submit returns, and nothing queues.
  bool called = false;
  AppendResult refused;
  writer_->Submit(Batch("refused", 5), [&](AppendResult r) {
    called = true;
    refused = std::move(r);
  });
  EXPECT_TRUE(called);
  EXPECT_EQ(refused.status.code(), StatusCode::kNoSpace);
  EXPECT_TRUE(refused.outcomes.empty());
  EXPECT_EQ(writer_->Stats().queued_bytes, 0u);

  // Probes keep failing while the quota stays: still paused.
  std::this_thread::sleep_for(350ms);
  EXPECT_TRUE(writer_->Stats().disk_full);

  // The file holds exactly the acknowledged events, consistently.
  FileContents during = ReadFile(parts_.PathFor(kWriterDay));
  EXPECT_EQ(during.integrity, "ok");
  EXPECT_EQ(during.sources, stored);
  EXPECT_EQ(during.level_counted, during.events);

  SetQuota(kNoQuota);
  ASSERT_TRUE(WaitUntilWritable(5s));
  stats = writer_->Stats();
  EXPECT_TRUE(stats.last_commit.ok()) << stats.last_commit.ToString();
  // The batch refused before is taken now, on the reopened connection.
  const AppendResult again = Append(Batch("refused", 5, kWriterT0 + 100'000));
  ASSERT_TRUE(again.status.ok()) << again.status.ToString();
  for (int i = 0; i < 5; ++i) stored.insert(fmt::format("refused-{}", i));

  writer_->Stop();
  FileContents after = ReadFile(parts_.PathFor(kWriterDay));
  EXPECT_EQ(after.integrity, "ok");
  EXPECT_EQ(after.sources, stored);
  EXPECT_EQ(after.level_counted, after.events);
}

TEST_F(WriterDiskFullTest, NewPartitionOnFullDiskLeavesNoFileBehind) {
  SetQuota(1);  // one page: not even the schema fits
  StartWriter(100ms);
  const AppendResult r = Append(Batch("new", 3));
  EXPECT_EQ(r.status.code(), StatusCode::kNoSpace) << r.status.ToString();
  EXPECT_TRUE(writer_->Stats().disk_full);
  const std::string path = parts_.PathFor(kWriterDay);
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_FALSE(std::filesystem::exists(path + "-wal"));
  EXPECT_FALSE(parts_.Contains(kWriterDay));

  SetQuota(kNoQuota);
  ASSERT_TRUE(WaitUntilWritable(5s));  // the probe creates the partition
  const AppendResult ok = Append(Batch("new", 3));
  ASSERT_TRUE(ok.status.ok()) << ok.status.ToString();
  EXPECT_TRUE(parts_.Contains(kWriterDay));
  writer_->Stop();
  FileContents after = ReadFile(path);
  EXPECT_EQ(after.integrity, "ok");
  EXPECT_EQ(after.sources, (std::set<std::string>{"new-0", "new-1", "new-2"}));
}

TEST_F(WriterDiskFullTest, ExclusiveTaskDuringPauseBringsTheProbeForward) {
  StartWriter(std::chrono::hours(1));  // no timed probe within the test
  std::set<std::string> stored;
  ASSERT_EQ(FillUp(stored).status.code(), StatusCode::kNoSpace);
  ASSERT_TRUE(writer_->Stats().disk_full);
  SetQuota(kNoQuota);  // as if retention had dropped a partition
  std::this_thread::sleep_for(200ms);
  EXPECT_TRUE(writer_->Stats().disk_full);  // nothing probed yet
  bool ran = false;
  ASSERT_TRUE(writer_->RunExclusive(kWriterDay - 1, [&] { ran = true; }).ok());
  EXPECT_TRUE(ran);
  EXPECT_TRUE(WaitUntilWritable(5s));
}

TEST_F(WriterDiskFullTest, StaysPausedUntilTheFilesystemHasTheFreeBytesToResume) {
  StartWriter(50ms, std::numeric_limits<std::uint64_t>::max());
  std::set<std::string> stored;
  ASSERT_EQ(FillUp(stored).status.code(), StatusCode::kNoSpace);
  SetQuota(kNoQuota);  // SQLite could write, but the filesystem is "too full"
  EXPECT_FALSE(WaitUntilWritable(400ms));
  const AppendResult r = Append(Batch("refused", 1));
  EXPECT_EQ(r.status.code(), StatusCode::kNoSpace);
  EXPECT_NE(r.status.message().find("disk is full"), std::string::npos) << r.status.ToString();
}

TEST_F(WriterDiskFullTest, StopWhilePausedReturnsAndRefuses) {
  StartWriter(std::chrono::hours(1));
  std::set<std::string> stored;
  ASSERT_EQ(FillUp(stored).status.code(), StatusCode::kNoSpace);
  const auto start = std::chrono::steady_clock::now();
  writer_->Stop();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
  const AppendResult r = Append(Batch("late", 1));
  EXPECT_EQ(r.status.code(), StatusCode::kUnavailable);
  EXPECT_EQ(ReadFile(parts_.PathFor(kWriterDay)).sources, stored);
}

// A partition the writer has stopped writing (Writer::CloseIdle, before it
// closes the connection) gives its page cache back and truncates its WAL file, unless a reader is
// in it (then without waiting for it), and writes on afterwards.
TEST(PartitionWriterMemoryTest, IdleDayGivesThePageCacheAndTheWalBack) {
  dashcam::testing::TempDir dir;
  PartitionOptions o;
  o.sync = SyncMode::kNormal;
  const std::string path = dir.path() + "/day.db";
  auto wal_bytes = [&] { return std::filesystem::file_size(path + "-wal"); };
  auto opened = PartitionWriter::Open(path, kWriterDay, o);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  PartitionWriter& w = **opened;
  int next = 0;
  auto write = [&](int n) {
    std::vector<Record> records(n);
    std::vector<const Record*> ptrs;
    for (Record& r : records) {
      const int i = next++;
      r.ts_ms = kWriterT0 + i;
      r.message = fmt::format("epoch {} step {} loss=0.{:04} token{}", i / 1000, i, i % 9973, i);
      r.source = fmt::format(R"({{"message":"{}","i":{}}})", r.message, i);
      ptrs.push_back(&r);
    }
    std::vector<RecordOutcome> outcomes(records.size());
    std::vector<EventKey> keys(records.size());
    const Status s = w.Write(ptrs, outcomes, keys);
    ASSERT_TRUE(s.ok()) << s.ToString();
  };
  for (int i = 0; i < 10; ++i) write(2000);
  const std::int64_t filled = w.CacheBytes();
  EXPECT_GT(filled, 1 << 20);
  ASSERT_GT(wal_bytes(), 0u);
  {
    // A search in a read transaction over the WAL.
    Db reader;
    ASSERT_TRUE(reader.Open(path, SQLITE_OPEN_READONLY).ok());
    ASSERT_TRUE(reader.Exec("BEGIN").ok());
    auto stmt = reader.Prepare("SELECT count(*) FROM events");
    ASSERT_TRUE(stmt.ok());
    ASSERT_EQ(stmt->Step(), SQLITE_ROW);
    const auto start = std::chrono::steady_clock::now();
    w.ReleaseCacheAndWal();
    EXPECT_LT(std::chrono::steady_clock::now() - start, 1s);
    EXPECT_GT(wal_bytes(), 0u);
    stmt->Reset();
    ASSERT_TRUE(reader.Exec("COMMIT").ok());
  }
  EXPECT_LT(w.CacheBytes(), filled / 4) << filled;
  write(2000);
  EXPECT_GT(w.CacheBytes(), 0);
  w.ReleaseCacheAndWal();
  EXPECT_EQ(wal_bytes(), 0u);
  write(10);
  EXPECT_EQ(ReadFile(path).sources.size(), 22'010u);
}

}  // namespace
}  // namespace dashcam::storage
