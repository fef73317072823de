// Tests for storage/compactor.h and storage/partition_compaction.h against
// real partition files written by a SqliteStore: a past day's index ends up
// one segment, its free pages go back to the filesystem, and every search
// answers as before, also while late events arrive during the compaction.
#include "storage/compactor.h"

#include <algorithm>
#include <atomic>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "storage/document_reader.h"
#include "storage/fts_tokenizer.h"
#include "storage/partition.h"
#include "storage/partition_reindex.h"
#include "storage/sqlite_store.h"
#include "storage/time_format.h"
#include "tests/common/test_server.h"

namespace dashcam::storage::compaction_test {

constexpr std::int64_t kPastDay = 20785;  // 2026-11-28
constexpr std::int64_t kToday = kPastDay + 2;
const TimeMs kNow = DayStart(kToday) + 3'600'000;

const char* const kWords[] = {"epoch",  "loss",  "cuda",   "nccl", "rank",    "step", "warmup",
                              "shard",  "grad",  "memory", "oom",  "barrier", "lr",   "ckpt",
                              "resume", "timer", "tensor", "node", "driver",  "p2p"};

// One training-log-like event of `day`; `i` picks its words, time and user.
Record Event(std::int64_t day, int i) {
  Record r;
  r.ts_ms = DayStart(day) + 1000 + static_cast<TimeMs>(i) * 37;
  r.level = i % 97 == 0 ? "ERROR" : "INFO";
  r.message = fmt::format("{} {} {} step {} value {}", kWords[i % 20], kWords[(i / 20) % 20],
                          kWords[(i * 7) % 20], i, i % 1013);
  r.index = "logs";
  r.fields.push_back(Field{"user.name", Field::Type::kString, fmt::format("user{}", i % 13), 0});
  r.source = fmt::format("ev{}", i);
  return r;
}

// Event(day, i) as ingest makes it: a JSON source, its message and fields
// as DocumentReader reads them (record.h), so that a re-index from the
// documents (partition_reindex.h) gives the index the writer made.
Record JsonEvent(std::int64_t day, int i) {
  const Record plain = Event(day, i);
  Record r;
  r.ts_ms = plain.ts_ms;
  r.index = plain.index;
  r.source = fmt::format(R"({{"message":"{}","log":{{"level":"{}"}},"user":{{"name":"user{}"}}}})",
                         plain.message, plain.level, i % 13);
  DocumentReader reader;
  DocumentView view;
  EXPECT_TRUE(reader.ReadUnpadded(r.source, view).ok()) << r.source;
  r.message = view.message.value_or("");
  r.level = view.level.value_or("");
  r.fields = std::move(view.fields);
  return r;
}

// Page counts and checks read on a connection of their own.
struct FileFacts {
  std::int64_t pages = 0;
  std::int64_t free_pages = 0;
  std::int64_t auto_vacuum = 0;
  std::string integrity;
  bool fully_merged = false;
};

std::int64_t PragmaInt(Db& db, const std::string& sql) {
  auto stmt = db.Prepare(sql);
  EXPECT_TRUE(stmt.ok()) << sql;
  if (!stmt.ok() || stmt->Step() != SQLITE_ROW) return -1;
  return stmt->Int(0);
}

FileFacts Facts(const std::string& path) {
  FileFacts f;
  Db db;
  EXPECT_TRUE(OpenForCompaction(path, db).ok());
  f.pages = PragmaInt(db, "PRAGMA page_count");
  f.free_pages = PragmaInt(db, "PRAGMA freelist_count");
  f.auto_vacuum = PragmaInt(db, "PRAGMA auto_vacuum");
  auto check = db.Prepare("PRAGMA integrity_check");
  if (check.ok() && check->Step() == SQLITE_ROW) f.integrity = std::string(check->Text(0));
  // FTS5's own check of its index structure.
  const Status fts = db.Exec("INSERT INTO fts(fts) VALUES('integrity-check')");
  if (!fts.ok()) f.integrity += "; fts: " + fts.ToString();
  auto merged = FtsFullyMerged(db);
  EXPECT_TRUE(merged.ok()) << merged.status().ToString();
  f.fully_merged = merged.ok() && *merged;
  return f;
}

// Whether NeedsReindex finds `db` due; an error fails the test.
bool ReindexDue(Db& db) {
  auto due = NeedsReindex(db);
  EXPECT_TRUE(due.ok()) << due.status().ToString();
  return due.ok() && *due;
}

class CompactionTest : public ::testing::Test {
 protected:
  void SetUp() override { OpenStore(/*two_column_index=*/false); }

  // `two_column_index`: new files as a dashcam before version 10 made them.
  void OpenStore(bool two_column_index) {
    store_.reset();
    SqliteStoreOptions opts;
    opts.data_dir = DataDir();
    opts.writer.partition.sync = SyncMode::kNormal;
    opts.writer.partition.test_two_column_index = two_column_index;
    opts.now = [] { return kNow; };
    opts.compaction.enabled = false;  // each test runs its own Compactor
    auto s = SqliteStore::Open(std::move(opts), log_);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(*s);
    ASSERT_TRUE(set_.Discover().ok());
  }

  std::string DataDir() const { return dir_.path() + "/data"; }
  std::string PastPath() const { return set_.PathFor(kPastDay); }

  void Append(std::vector<Record> records) {
    std::promise<AppendResult> done;
    auto result = done.get_future();
    store_->Append(std::move(records), [&](AppendResult r) { done.set_value(std::move(r)); });
    const AppendResult r = result.get();
    ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  }
  // Events [first, first + n) of `day` in commits of `per_commit`; JsonEvent
  // when `json`, else Event.
  void AppendEvents(std::int64_t day, int first, int n, int per_commit, bool json = false) {
    for (int i = first; i < first + n; i += per_commit) {
      std::vector<Record> batch;
      for (int j = i; j < std::min(first + n, i + per_commit); ++j) {
        batch.push_back(json ? JsonEvent(day, j) : Event(day, j));
      }
      Append(std::move(batch));
    }
  }

  // The hits of `q` (message terms, AND) by source, newest first, and the
  // total; compared before and after compaction.
  std::pair<std::uint64_t, std::vector<std::string>> Find(std::vector<std::string> terms,
                                                          std::string user = "") {
    std::vector<query::Node> children;
    for (auto& t : terms) {
      children.push_back(query::Node::MakeTerm(query::Term{"", std::move(t), false, false}, 0));
    }
    if (!user.empty()) {
      children.push_back(
          query::Node::MakeTerm(query::Term{"user.name", std::move(user), false, false}, 0));
    }
    const query::Node q{query::NodeKind::kAnd, 0, std::move(children), {}};
    SearchRequest req;
    req.query = &q;
    req.limit = 200;
    req.count_limit = 1'000'000;
    auto page = store_->Search(req);
    EXPECT_TRUE(page.ok()) << page.status().ToString();
    std::vector<std::string> names;
    if (!page.ok()) return {};
    for (const StoredEvent& e : page->hits) names.push_back(e.source);
    return {page->total, names};
  }
  using Answers = std::vector<std::pair<std::uint64_t, std::vector<std::string>>>;
  Answers Probe() {
    return {Find({"cuda"}), Find({"oom", "memory"}), Find({"nccl"}, "user3"), Find({"step"}),
            Find({"p2p", "barrier", "driver"})};
  }

  CompactionPolicy Policy(int merge_pages, int vacuum_pages) const {
    CompactionPolicy p;
    p.quiet_period = std::chrono::milliseconds(0);
    p.steps.merge_pages = merge_pages;
    p.steps.vacuum_pages = vacuum_pages;
    return p;
  }

  dashcam::testing::TempDir dir_;
  Log log_ = Log::Null();
  std::unique_ptr<SqliteStore> store_;
  // A second view of the same directory, as the store's compactor would have.
  PartitionSet set_{dir_.path() + "/data"};
};

TEST_F(CompactionTest, MergesTheIndexReturnsFreePagesAndAnswersAlike) {
  // Days written before crisismerge=64 merged each 16 segments in one go
  // and so kept free pages; this day is written the same way (FTS5's
  // writer connection reloads its config when another connection sets it).
  AppendEvents(kPastDay, 0, 400, 400);
  ASSERT_TRUE(set_.Discover().ok());
  {
    Db db;
    ASSERT_TRUE(OpenForCompaction(PastPath(), db).ok());
    ASSERT_TRUE(db.Exec("INSERT INTO fts(fts, rank) VALUES('crisismerge', 16)").ok());
  }
  AppendEvents(kPastDay, 400, 25'200, 400);  // 63 commits more: the 64th merges 16 segments
  const FileFacts before = Facts(PastPath());
  ASSERT_EQ(before.auto_vacuum, 2) << "new partitions are created with auto_vacuum=INCREMENTAL";
  ASSERT_FALSE(before.fully_merged);
  ASSERT_GT(before.free_pages, 0) << "the day's segment merges left free pages";
  const Answers answers = Probe();
  ASSERT_GT(answers[0].first, 0u);

  Compactor compactor(
      Policy(200, 100), set_, [] { return kNow; }, log_, nullptr);
  EXPECT_EQ(compactor.CheckNow(), 1u);

  const FileFacts after = Facts(PastPath());
  EXPECT_EQ(after.integrity, "ok");
  EXPECT_TRUE(after.fully_merged);
  EXPECT_EQ(after.free_pages, 0);
  EXPECT_LT(after.pages, before.pages - before.free_pages / 2);
  const CompactionStatus status = compactor.Status();
  EXPECT_EQ(status.compacted_partitions, 1u);
  ASSERT_TRUE(status.last);
  EXPECT_EQ(status.last->day, kPastDay);
  EXPECT_GT(status.last->result.merge_steps, 1);  // small steps, so several
  EXPECT_GT(status.last->result.vacuum_steps, 1);
  EXPECT_TRUE(status.last->result.returns_pages);
  EXPECT_TRUE(status.last->result.fully_merged);
  EXPECT_EQ(status.last->result.bytes_before, static_cast<std::uint64_t>(before.pages) * 4096);
  EXPECT_EQ(status.last->result.bytes_after, static_cast<std::uint64_t>(after.pages) * 4096);
  EXPECT_EQ(status.returned_bytes,
            status.last->result.bytes_before - status.last->result.bytes_after);
  EXPECT_TRUE(status.last_error.empty()) << status.last_error;
  EXPECT_EQ(Probe(), answers);

  // Unchanged files are not compacted again.
  EXPECT_EQ(compactor.CheckNow(), 0u);
  // A late event makes the day due again; it is found, and so is the rest.
  Record late = Event(kPastDay, 7);
  late.message = "late arrival cuda";
  late.source = "late";
  Append({late});
  EXPECT_EQ(compactor.CheckNow(), 1u);
  const FileFacts again = Facts(PastPath());
  EXPECT_TRUE(again.fully_merged);
  EXPECT_EQ(again.integrity, "ok");
  const auto late_hits = Find({"late", "arrival"});
  EXPECT_EQ(late_hits.second, std::vector<std::string>{"late"});
  EXPECT_EQ(Find({"cuda"}).first, answers[0].first + 1);
}

TEST_F(CompactionTest, LateEventsDuringCompactionAreKept) {
  AppendEvents(kPastDay, 0, 12'000, 300);
  ASSERT_TRUE(set_.Discover().ok());
  const std::uint64_t all_before = Find({"step"}).first;
  ASSERT_EQ(all_before, 12'000u);
  // Tiny steps, so that the compaction is many transactions long and the
  // writer's late commits fall between them.
  Compactor compactor(
      Policy(10, 20), set_, [] { return kNow; }, log_, nullptr);
  std::atomic<bool> compacting{true};
  std::thread compaction([&] {
    compactor.CheckNow();
    compacting = false;
  });
  int late = 0;
  while (compacting && late < 50'000) {
    AppendEvents(kPastDay, 100'000 + late, 50, 50);
    late += 50;
  }
  compaction.join();
  // The late segments, if any came after the merge.
  compactor.CheckNow();
  EXPECT_EQ(Find({"step"}).first, 12'000u + static_cast<std::uint64_t>(late));
  const FileFacts after = Facts(PastPath());
  EXPECT_EQ(after.integrity, "ok");
  EXPECT_TRUE(after.fully_merged);
  EXPECT_EQ(after.free_pages, 0);
  EXPECT_GT(compactor.Status().compacted_partitions, 0u);
  EXPECT_GT(late, 0);
}

TEST_F(CompactionTest, TodayAndRecentlyWrittenDaysWait) {
  AppendEvents(kToday, 0, 2'000, 100);
  AppendEvents(kPastDay, 0, 2'000, 100);
  ASSERT_TRUE(set_.Discover().ok());
  CompactionPolicy quiet = Policy(1000, 2000);
  quiet.quiet_period = std::chrono::hours(1);
  Compactor waits(
      quiet, set_, [] { return kNow; }, log_, nullptr);
  EXPECT_EQ(waits.CheckNow(), 0u);  // the past day was written just now
  EXPECT_FALSE(Facts(PastPath()).fully_merged);

  Compactor now(
      Policy(1000, 2000), set_, [] { return kNow; }, log_, nullptr);
  EXPECT_EQ(now.CheckNow(), 1u);  // the past day only
  EXPECT_TRUE(Facts(PastPath()).fully_merged);
  EXPECT_FALSE(Facts(set_.PathFor(kToday)).fully_merged);
}

TEST_F(CompactionTest, OlderFilesAreMergedButKeepTheirSize) {
  AppendEvents(kPastDay, 0, 8'000, 200);
  store_->Close();
  {
    // What a file made before auto_vacuum was set looks like.
    Db db;
    ASSERT_TRUE(OpenForCompaction(PastPath(), db).ok());
    ASSERT_TRUE(db.Exec("PRAGMA auto_vacuum=NONE").ok());
    ASSERT_TRUE(db.Exec("VACUUM").ok());
  }
  ASSERT_TRUE(set_.Discover().ok());
  const FileFacts before = Facts(PastPath());
  ASSERT_EQ(before.auto_vacuum, 0);
  Compactor compactor(
      Policy(200, 100), set_, [] { return kNow; }, log_, nullptr);
  EXPECT_EQ(compactor.CheckNow(), 1u);
  const FileFacts after = Facts(PastPath());
  EXPECT_TRUE(after.fully_merged);
  EXPECT_EQ(after.integrity, "ok");
  EXPECT_GE(after.pages, before.pages);  // merged, not shrunk
  const CompactionStatus status = compactor.Status();
  ASSERT_TRUE(status.last);
  EXPECT_FALSE(status.last->result.returns_pages);
  EXPECT_EQ(status.last->result.vacuum_steps, 0);
  EXPECT_GT(status.last->result.merge_steps, 0);
}

TEST_F(CompactionTest, AReindexMeetingALateEventIsDroppedAndTheNextOneTakesIt) {
  AppendEvents(kPastDay, 0, 2'000, 250, /*json=*/true);
  Db db;
  ASSERT_TRUE(OpenForCompaction(PastPath(), db).ok());
  ASSERT_TRUE(db.Exec("DELETE FROM meta WHERE key = 'field_terms'").ok());  // an older file
  const Answers answers = Probe();
  ASSERT_TRUE(ReindexDue(db));
  CompactionSteps steps;
  steps.reindex_events = 100;
  Record late = JsonEvent(kPastDay, 7);
  late.message = "late arrival";
  late.source = R"({"message":"late arrival"})";
  int paced = 0;
  auto dropped = ReindexPartition(db, steps, [&](auto) {
    if (++paced == 5) Append({late});  // between two steps of the build
    return true;
  });
  ASSERT_TRUE(dropped.ok()) << dropped.status().ToString();
  EXPECT_FALSE(dropped->swapped);
  EXPECT_TRUE(ReindexDue(db));
  auto left = db.Prepare("SELECT count(*) FROM sqlite_master WHERE name LIKE 'fts_reindex%'");
  ASSERT_TRUE(left.ok() && left->Step() == SQLITE_ROW);
  EXPECT_EQ(left->Int(0), 0);
  left->Reset();
  EXPECT_EQ(Find({"late", "arrival"}).first, 1u);

  // A reader opened before the swap reads on, and takes the new meta when
  // it reads it again.
  auto reader = PartitionReader::Open(PastPath(), 1024);
  ASSERT_TRUE(reader.ok());
  EXPECT_FALSE((*reader)->field_terms_recorded());
  auto taken = ReindexPartition(db, steps, [](auto) { return true; });
  ASSERT_TRUE(taken.ok()) << taken.status().ToString();
  EXPECT_TRUE(taken->swapped);
  EXPECT_EQ(taken->events, 2'001u);
  EXPECT_FALSE(ReindexDue(db));
  EXPECT_FALSE((*reader)->field_terms_recorded());
  ASSERT_TRUE((*reader)->ReadMeta().ok());
  EXPECT_TRUE((*reader)->field_terms_recorded());
  EXPECT_EQ(Find({"late", "arrival"}).first, 1u);
  EXPECT_EQ(Probe(), answers);
  db.Close();
  const FileFacts after = Facts(PastPath());
  EXPECT_EQ(after.integrity, "ok");
  EXPECT_TRUE(after.fully_merged);
  // The writer, whose connection had the file open all along, writes into
  // the new index.
  late.source = R"({"message":"later arrival"})";
  late.message = "later arrival";
  Append({late});
  EXPECT_EQ(Find({"arrival"}).first, 2u);
  EXPECT_EQ(Facts(PastPath()).integrity, "ok");
}

TEST_F(CompactionTest, AnOlderDayIsReindexedWhenThereIsRoomForItsNewIndex) {
  AppendEvents(kPastDay, 0, 1'500, 300, /*json=*/true);
  {
    Db db;
    ASSERT_TRUE(OpenForCompaction(PastPath(), db).ok());
    ASSERT_TRUE(db.Exec("DELETE FROM meta WHERE key = 'field_terms'").ok());
  }
  ASSERT_TRUE(set_.Discover().ok());
  const Answers answers = Probe();
  std::uint64_t asked = 0;
  bool room = false;
  Compactor compactor(
      Policy(1000, 2000), set_, [] { return kNow; }, log_, nullptr,
      [&](std::uint64_t bytes) {
        asked = bytes;
        return room;
      });
  EXPECT_EQ(compactor.CheckNow(), 1u);  // merged, not re-indexed
  EXPECT_GT(asked, 0u);                 // the size of the day's files
  ASSERT_TRUE(compactor.Status().last);
  EXPECT_EQ(compactor.Status().last->result.reindexed_events, 0u);
  EXPECT_TRUE(compactor.Status().last->result.reindex_pending);
  room = true;
  EXPECT_EQ(compactor.CheckNow(), 1u);  // still due: now re-indexed
  EXPECT_EQ(compactor.Status().last->result.reindexed_events, 1'500u);
  EXPECT_FALSE(compactor.Status().last->result.reindex_pending);
  EXPECT_EQ(compactor.CheckNow(), 0u);  // and done
  auto pin = set_.OpenPinned(kPastDay, [](const std::string&) { return Status::Ok(); });
  ASSERT_TRUE(pin.ok() && *pin);
  EXPECT_EQ((*pin)->generation(), 1u);  // readers take the new meta
  EXPECT_EQ(Probe(), answers);
  const FileFacts after = Facts(PastPath());
  EXPECT_EQ(after.integrity, "ok");
  EXPECT_TRUE(after.fully_merged);
}

// Whether the file at `path` has the one-column index of version 10.
bool OneColumn(const std::string& path) {
  Db db;
  EXPECT_TRUE(OpenForCompaction(path, db).ok());
  auto one = FtsHasOneColumn(db);
  EXPECT_TRUE(one.ok()) << one.status().ToString();
  return one.ok() && *one;
}

// A day of an older version's two-column index is re-indexed into one
// column, and the writer that had it open goes on writing late events into
// the new index.
TEST_F(CompactionTest, AnOlderVersionsTwoColumnDayGetsOneColumnAndItsWriterFollows) {
  OpenStore(/*two_column_index=*/true);
  AppendEvents(kPastDay, 0, 1'500, 300, /*json=*/true);
  ASSERT_FALSE(OneColumn(PastPath()));
  {
    Db db;
    ASSERT_TRUE(OpenForCompaction(PastPath(), db).ok());
    ASSERT_TRUE(ReindexDue(db));
  }
  ASSERT_TRUE(set_.Discover().ok());
  const Answers answers = Probe();
  Compactor compactor(
      Policy(1000, 2000), set_, [] { return kNow; }, log_, nullptr);
  EXPECT_EQ(compactor.CheckNow(), 1u);
  ASSERT_TRUE(compactor.Status().last);
  EXPECT_EQ(compactor.Status().last->result.reindexed_events, 1'500u);
  EXPECT_TRUE(OneColumn(PastPath()));
  EXPECT_EQ(Probe(), answers);
  {
    Db db;
    ASSERT_TRUE(OpenForCompaction(PastPath(), db).ok());
    EXPECT_FALSE(ReindexDue(db));
  }
  // The store's writer opened the day before the swap.
  Append({JsonEvent(kPastDay, 9'000)});
  EXPECT_EQ(Find({"9000"}).first, 1u);
  EXPECT_EQ(Find({"9000"}, "user4").first, 1u);
  EXPECT_EQ(Find({"9000"}, "user5").first, 0u);
  const FileFacts after = Facts(PastPath());
  EXPECT_EQ(after.integrity, "ok");
}

// Every event's columns with its document as JSON text, in key order, read
// on a connection of their own.
std::vector<std::string> StoredRows(const std::string& path) {
  std::vector<std::string> rows;
  auto reader = PartitionReader::Open(path, 1024);
  EXPECT_TRUE(reader.ok());
  if (!reader.ok()) return rows;
  auto stmt = (*reader)->Statement(
      "SELECT key, level, idx, coalesce(doc_id, '-'), dc_source(source) FROM events ORDER BY key");
  EXPECT_TRUE(stmt.ok());
  if (!stmt.ok()) return rows;
  int rc;
  while ((rc = (*stmt)->Step()) == SQLITE_ROW) {
    rows.push_back(fmt::format("{} {} {} {} {}", (*stmt)->Int(0), (*stmt)->Text(1),
                               (*stmt)->Text(2), (*stmt)->Text(3), (*stmt)->Text(4)));
  }
  EXPECT_EQ(rc, SQLITE_DONE) << sqlite3_errmsg((*reader)->db());
  (*stmt)->Reset();
  return rows;
}

TEST_F(CompactionTest, AReindexEncodesTheDocumentsWithADictionaryOfTheWholeDay) {
  std::vector<Record> events;
  for (int i = 0; i < 3'000; ++i) {
    events.push_back(JsonEvent(kPastDay, i));
    if (i % 100 == 0) events.back().doc_id = fmt::format("doc-{}", i);
  }
  for (std::size_t i = 0; i < events.size(); i += 500) {
    Append(std::vector<Record>(events.begin() + i, events.begin() + i + 500));
  }
  Db db;
  ASSERT_TRUE(OpenForCompaction(PastPath(), db).ok());
  const std::vector<std::string> rows = StoredRows(PastPath());
  ASSERT_EQ(rows.size(), 3'000u);
  const std::int64_t bytes = PragmaInt(db, "SELECT sum(length(source)) FROM events");
  const Answers answers = Probe();
  ASSERT_TRUE(ReindexDue(db));
  CompactionSteps steps;
  steps.reindex_events = 700;
  steps.day_dictionary_events = 1'000;
  auto done = ReindexPartition(db, steps, [](auto) { return true; });
  ASSERT_TRUE(done.ok()) << done.status().ToString();
  EXPECT_TRUE(done->swapped);
  EXPECT_TRUE(done->recoded);
  EXPECT_EQ(done->encoded,
            static_cast<std::uint64_t>(
                PragmaInt(db, "SELECT count(*) FROM events WHERE substr(source, 1, 1) = x'02'")));
  EXPECT_FALSE(ReindexDue(db));

  EXPECT_EQ(StoredRows(PastPath()), rows);
  EXPECT_EQ(Probe(), answers);
  // All but documents that would not shrink are in the day-dictionary form,
  // and they take less room than the writer's first plain, then compressed
  // documents.
  EXPECT_GE(PragmaInt(db, "SELECT count(*) FROM events WHERE substr(source, 1, 1) = x'02'"), 2'900);
  const std::int64_t recoded_bytes = PragmaInt(db, "SELECT sum(length(source)) FROM events");
  EXPECT_LT(recoded_bytes * 2, bytes) << recoded_bytes << " of " << bytes;
  EXPECT_EQ(PragmaInt(db, "SELECT count(*) FROM dicts"), 2);
  EXPECT_EQ(PragmaInt(db,
                      "SELECT count(*) FROM sqlite_master WHERE name = 'events_doc_id' AND "
                      "tbl_name = 'events'"),
            1);
  EXPECT_EQ(PragmaInt(db, "SELECT count(*) FROM sqlite_master WHERE name LIKE '%_reindex'"), 0);

  // A late event with a taken id replaces its event (the unique index holds);
  // the next re-index encodes it with the same day dictionary.
  Record late = JsonEvent(kPastDay, 7);
  late.doc_id = "doc-100";
  late.op = WriteOp::kIndex;
  late.source = R"({"message":"late arrival","user":{"name":"user7"}})";
  DocumentReader reader;
  DocumentView view;
  ASSERT_TRUE(reader.ReadUnpadded(late.source, view).ok());
  late.message = view.message.value_or("");
  late.level.clear();
  late.fields = std::move(view.fields);
  Append({late});
  EXPECT_EQ(PragmaInt(db, "SELECT count(*) FROM events WHERE doc_id = 'doc-100'"), 1);
  EXPECT_TRUE(ReindexDue(db));
  auto again = ReindexPartition(db, steps, [](auto) { return true; });
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_TRUE(again->recoded);
  EXPECT_EQ(again->encoded, 1u);  // the late event's; the rest were copied as they were
  EXPECT_FALSE(ReindexDue(db));
  EXPECT_EQ(PragmaInt(db, "SELECT count(*) FROM dicts"), 2);
  EXPECT_EQ(PragmaInt(db,
                      "SELECT count(*) FROM events WHERE doc_id = 'doc-100' AND "
                      "substr(source, 1, 1) = x'02'"),
            1);
  const std::vector<std::string> now = StoredRows(PastPath());
  ASSERT_EQ(now.size(), 3'000u);
  EXPECT_EQ(std::count_if(
                now.begin(), now.end(),
                [&](const std::string& row) { return row.ends_with(" doc-100 " + late.source); }),
            1);
  EXPECT_EQ(Find({"late", "arrival"}).first, 1u);
  db.Close();
  EXPECT_EQ(Facts(PastPath()).integrity, "ok");
}

}  // namespace dashcam::storage::compaction_test
