// Tests for storage/source_codec.h against real partition files: documents
// compressed with the partition's trained dictionary read back exactly, the
// first ones stay as they were, a reopened writer keeps its dictionary, and a
// damaged frame is an SQL error rather than a crash.
#include "storage/source_codec.h"

#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "storage/partition.h"
#include "storage/sqlite_db.h"
#include "storage/time_format.h"
#include "tests/common/test_server.h"

namespace dashcam::storage {
namespace {

constexpr std::int64_t kCodecDay = 20786;  // 2026-11-29
constexpr TimeMs kCodecT0 = kCodecDay * kMsPerDay + 3'600'000;

// A training-log document like the ones Filebeat sends, varied enough that
// no two are equal.
std::string LogDocument(std::mt19937_64& rng, int i) {
  const char* users[] = {"zhangsan", "lisi", "wangwu"};
  return fmt::format(
      R"({{"@timestamp":"2026-11-29T01:00:{:02}.{:03}Z","message":"epoch {} step {}/5000 )"
      R"(loss={:.4f} lr=1.{}e-04 grad_norm={:.2f}","log":{{"level":"INFO","file":{{"path":)"
      R"("/home/{}/runs/run-{}/train.log"}},"offset":{}}},"host":{{"name":"gpu-node-{:02}"}},)"
      R"("user":"{}","gpu_id":{}}})",
      i % 60, rng() % 1000, i % 7, rng() % 5000, (rng() % 10000) / 10000.0, rng() % 10,
      (rng() % 500) / 100.0, users[i % 3], rng() % 900, rng() % 100'000'000, rng() % 16,
      users[i % 3], rng() % 8);
}

class SourceCodecTest : public ::testing::Test {
 protected:
  std::string Path() const { return dir_.path() + "/day.db"; }

  std::unique_ptr<PartitionWriter> OpenWriter(std::size_t sample_events,
                                              SharedDictionaries* shared = nullptr) {
    PartitionOptions o;
    o.sync = SyncMode::kNormal;
    o.compression.sample_events = sample_events;
    o.shared_dictionaries = shared;
    auto w = PartitionWriter::Open(Path(), kCodecDay, o);
    EXPECT_TRUE(w.ok()) << w.status().ToString();
    return w.ok() ? std::move(*w) : nullptr;
  }

  // Writes `n` new documents in one transaction; they are also kept in
  // `written_`.
  void Write(PartitionWriter& w, int n) { Write(w, NewRecords(n)); }

  std::vector<Record> NewRecords(int n) {
    std::vector<Record> records(n);
    for (Record& r : records) {
      const int i = static_cast<int>(written_.size());
      r.ts_ms = kCodecT0 + i;
      r.level = "INFO";
      r.message = fmt::format("line {}", i);
      r.source = LogDocument(rng_, i);
      written_.push_back(r.source);
    }
    return records;
  }

  void Write(PartitionWriter& w, const std::vector<Record>& records) {
    const auto n = records.size();
    std::vector<const Record*> ptrs;
    for (const Record& r : records) ptrs.push_back(&r);
    std::vector<RecordOutcome> outcomes(n);
    std::vector<EventKey> keys(n);
    const Status s = w.Write(ptrs, outcomes, keys);
    ASSERT_TRUE(s.ok()) << s.ToString();
  }

  // Opens a writer, writes batches of these sizes, closes it.
  void WriteBatches(std::size_t sample_events, std::initializer_list<int> batches) {
    auto w = OpenWriter(sample_events);
    ASSERT_TRUE(w);
    for (int n : batches) Write(*w, n);
  }

  // Runs `sql` on the file with a connection of its own.
  void Modify(const char* sql) {
    Db db;
    ASSERT_TRUE(db.Open(Path(), SQLITE_OPEN_READWRITE).ok());
    ASSERT_TRUE(db.Exec(sql).ok()) << sql;
  }

  // The error message of reading the newest document; empty if it reads.
  std::string NewestDocumentError() {
    auto reader = PartitionReader::Open(Path(), 1024);
    EXPECT_TRUE(reader.ok());
    if (!reader.ok()) return "no reader";
    auto stmt = (*reader)->Statement("SELECT dc_source(source) FROM events ORDER BY key DESC");
    EXPECT_TRUE(stmt.ok());
    if (!stmt.ok()) return "no statement";
    const int rc = (*stmt)->Step();
    std::string error = rc == SQLITE_ROW ? "" : sqlite3_errmsg((*reader)->db());
    (*stmt)->Reset();
    return error;
  }

  struct Stored {
    std::vector<std::string> documents;  // dc_source, in key order
    int compressed = 0;
    std::size_t stored_bytes = 0, document_bytes = 0;
  };

  Stored ReadBack() {
    Stored out;
    auto reader = PartitionReader::Open(Path(), 1024);
    EXPECT_TRUE(reader.ok());
    if (!reader.ok()) return out;
    auto stmt = (*reader)->Statement("SELECT source, dc_source(source) FROM events ORDER BY key");
    EXPECT_TRUE(stmt.ok());
    if (!stmt.ok()) return out;
    int rc;
    while ((rc = (*stmt)->Step()) == SQLITE_ROW) {
      const std::string_view stored = (*stmt)->Blob(0);
      out.compressed += IsCompressedSource(stored);
      out.stored_bytes += stored.size();
      out.documents.emplace_back((*stmt)->Blob(1));
      out.document_bytes += out.documents.back().size();
    }
    EXPECT_EQ(rc, SQLITE_DONE) << sqlite3_errmsg((*reader)->db());
    (*stmt)->Reset();
    return out;
  }

  int Dictionaries() {
    Db db;
    EXPECT_TRUE(db.Open(Path(), SQLITE_OPEN_READONLY).ok());
    auto stmt = db.Prepare("SELECT count(*) FROM dicts");
    EXPECT_TRUE(stmt.ok());
    return stmt.ok() && stmt->Step() == SQLITE_ROW ? static_cast<int>(stmt->Int(0)) : -1;
  }

  testing::TempDir dir_;
  std::mt19937_64 rng_{7};
  std::vector<std::string> written_;
};

TEST_F(SourceCodecTest, CompressesOnceTrainedAndReadsBackEveryDocument) {
  auto w = OpenWriter(100);
  ASSERT_TRUE(w);
  Write(*w, 60);
  EXPECT_EQ(Dictionaries(), 0);
  // The 100th sample comes within this batch: its last 20 are compressed.
  Write(*w, 60);
  EXPECT_EQ(Dictionaries(), 1);
  for (int b = 0; b < 4; ++b) Write(*w, 100);
  w.reset();

  const Stored s = ReadBack();
  EXPECT_EQ(s.documents, written_);
  EXPECT_EQ(Dictionaries(), 1);
  // The 100 samples stay as they were; every later document is compressed.
  EXPECT_EQ(s.compressed, 420);
  std::size_t later_bytes = 0;
  for (std::size_t i = 100; i < written_.size(); ++i) later_bytes += written_[i].size();
  const std::size_t stored_later = s.stored_bytes - (s.document_bytes - later_bytes);
  EXPECT_LT(stored_later * 3, later_bytes) << stored_later << " of " << later_bytes;
}

TEST_F(SourceCodecTest, AReopenedWriterCompressesWithTheStoredDictionary) {
  WriteBatches(50, {50, 10});
  WriteBatches(50, {1});
  const Stored s = ReadBack();
  EXPECT_EQ(s.documents, written_);
  EXPECT_EQ(s.compressed, 11);
  EXPECT_EQ(Dictionaries(), 1);
}

TEST_F(SourceCodecTest, ZeroSamplesMeansNeverCompressed) {
  WriteBatches(0, {100, 100, 100});
  const Stored s = ReadBack();
  EXPECT_EQ(s.documents, written_);
  EXPECT_EQ(s.compressed, 0);
  EXPECT_EQ(Dictionaries(), 0);
}

TEST_F(SourceCodecTest, AFileFromBeforeCompressionGetsItsDictionaryWhenUpgraded) {
  WriteBatches(0, {40});
  Modify("DROP TABLE dicts; PRAGMA user_version=4");
  WriteBatches(30, {30, 5});
  const Stored s = ReadBack();
  EXPECT_EQ(s.documents, written_);
  EXPECT_EQ(s.compressed, 5);
  EXPECT_EQ(Dictionaries(), 1);
}

TEST_F(SourceCodecTest, ADamagedFrameIsAnErrorNotACrash) {
  WriteBatches(20, {20, 5});
  EXPECT_EQ(NewestDocumentError(), "");
  // Keeps the magic number and the header, garbles the rest.
  Modify(
      "UPDATE events SET source = substr(source, 1, 6) || randomblob(40) "
      "WHERE key = (SELECT max(key) FROM events)");
  EXPECT_EQ(NewestDocumentError(), "a corrupt compressed document");
}

TEST_F(SourceCodecTest, ACompressedDocumentWithoutADictionaryIsAnError) {
  WriteBatches(20, {20, 1});
  Modify("DELETE FROM dicts");
  EXPECT_EQ(NewestDocumentError(), "a compressed document but no compression dictionary 1");
}

// Stores `dictionary` as day dictionary `id` and re-encodes every other
// document with it, as compaction does; returns how many it re-encoded.
int EncodeEveryOther(const std::string& path, std::int64_t id, const std::string& dictionary) {
  DayDictionaryEncoder encoder;
  EXPECT_TRUE(encoder.Load(id, dictionary, 9).ok());
  Db db;
  EXPECT_TRUE(db.Open(path, SQLITE_OPEN_READWRITE).ok());
  EXPECT_TRUE(RegisterSourceFunction(db.get()).ok());
  auto insert = db.Prepare("INSERT INTO dicts(id, dict) VALUES(?1, ?2)");
  EXPECT_TRUE(insert.ok());
  insert->Bind(1, id);
  insert->BindBlobStatic(2, dictionary);
  EXPECT_EQ(insert->Step(), SQLITE_DONE);
  auto read = db.Prepare("SELECT key, dc_source(source) FROM events ORDER BY key");
  auto update = db.Prepare("UPDATE events SET source = ?2 WHERE key = ?1");
  EXPECT_TRUE(read.ok() && update.ok());
  int i = 0, encoded = 0;
  while (read->Step() == SQLITE_ROW) {
    if (i++ % 2) continue;
    const std::string_view stored = encoder.Encode(read->Text(1));
    EXPECT_EQ(static_cast<int>(stored[0]), id);
    update->Bind(1, read->Int(0));
    update->BindBlobStatic(2, stored);
    EXPECT_EQ(update->Step(), SQLITE_DONE);
    update->Reset();
    ++encoded;
  }
  return encoded;
}

TEST_F(SourceCodecTest, DocumentsInTheDayDictionaryFormReadBackBesideTheOthers) {
  WriteBatches(100, {100, 200});  // 100 as they came, 200 compressed
  const Stored before = ReadBack();
  ASSERT_EQ(before.compressed, 200);
  auto dictionary = TrainDictionary(written_, 16 * 1024);
  ASSERT_TRUE(dictionary.ok()) << dictionary.status().ToString();
  EXPECT_EQ(EncodeEveryOther(Path(), kFirstDayDictionary, *dictionary), 150);

  const Stored after = ReadBack();
  EXPECT_EQ(after.documents, written_);
  EXPECT_EQ(after.compressed, 250);  // 50 of the first 100 are compressed now
  EXPECT_LT(after.stored_bytes, before.stored_bytes);
  // A writer reopened on the file still compresses with its own dictionary.
  WriteBatches(100, {10});
  EXPECT_EQ(ReadBack().documents, written_);
  EXPECT_EQ(Dictionaries(), 2);
}

TEST_F(SourceCodecTest, ADayDictionaryDocumentWithoutItsDictionaryOrDamagedIsAnError) {
  WriteBatches(100, {100, 1});
  auto dictionary = TrainDictionary(written_, 16 * 1024);
  ASSERT_TRUE(dictionary.ok());
  EncodeEveryOther(Path(), kLastDayDictionary, *dictionary);  // the newest too
  EXPECT_EQ(NewestDocumentError(), "");
  Modify(
      "UPDATE events SET source = substr(source, 1, 5) || randomblob(30) "
      "WHERE key = (SELECT max(key) FROM events)");
  EXPECT_EQ(NewestDocumentError(), "a corrupt compressed document");
  Modify("DELETE FROM dicts WHERE id = 8");
  EXPECT_EQ(NewestDocumentError(), "a compressed document but no compression dictionary 8");
}

TEST(DayDictionaryEncoderTest, TakesOnlyDayDictionaryIdsAndKeepsWhatWouldNotShrink) {
  std::mt19937_64 rng(11);
  std::vector<std::string> docs;
  for (int i = 0; i < 200; ++i) docs.push_back(LogDocument(rng, i));
  auto dictionary = TrainDictionary(docs, 8 * 1024);
  ASSERT_TRUE(dictionary.ok());
  DayDictionaryEncoder encoder;
  EXPECT_EQ(encoder.Load(kWriterDictionary, *dictionary, 9).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(encoder.Load(kLastDayDictionary + 1, *dictionary, 9).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(encoder.Encode(docs[0]), docs[0]);  // nothing loaded: as it is
  ASSERT_TRUE(encoder.Load(kFirstDayDictionary, *dictionary, 9).ok());
  const std::string doc = LogDocument(rng, 500);
  const std::string stored(encoder.Encode(doc));
  EXPECT_TRUE(IsCompressedSource(stored));
  EXPECT_LT(stored.size() * 3, doc.size());
  EXPECT_EQ(encoder.Encode("{}"), "{}");
  EXPECT_FALSE(IsCompressedSource("{}"));
  EXPECT_FALSE(IsCompressedSource(std::string(1, '\x02')));  // no frame after the id
  EXPECT_EQ(TrainDictionary({"{}"}, 8 * 1024).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(SourceCodecTest, DocumentsCompressedBeforeTheWriterAreStoredAsTheyCame) {
  SharedDictionaries shared;
  auto w = OpenWriter(40, &shared);
  ASSERT_TRUE(w);
  std::vector<Record> early = NewRecords(40);
  shared.Precompress(early);  // no dictionary yet: nothing done
  for (const Record& r : early) EXPECT_TRUE(r.stored_source.empty());
  Write(*w, early);
  Write(*w, 5);  // trains, and publishes once committed

  std::vector<Record> later = NewRecords(30);
  shared.Precompress(later);
  for (const Record& r : later) {
    ASSERT_TRUE(IsCompressedSource(r.stored_source));
    EXPECT_NE(r.stored_dictionary, 0u);
  }
  // One that claims another dictionary: the writer compresses it itself.
  later[7].stored_dictionary += 1000;
  later[7].stored_source = "not a frame";
  Write(*w, later);
  w.reset();

  const Stored s = ReadBack();
  EXPECT_EQ(s.documents, written_);
  EXPECT_EQ(s.compressed, 35);
  // The submitted frames are what the file holds.
  auto reader = PartitionReader::Open(Path(), 1024);
  ASSERT_TRUE(reader.ok());
  auto stmt = (*reader)->Statement("SELECT source FROM events ORDER BY key DESC LIMIT 1");
  ASSERT_TRUE(stmt.ok());
  ASSERT_EQ((*stmt)->Step(), SQLITE_ROW);
  EXPECT_EQ((*stmt)->Blob(0), later.back().stored_source);
  (*stmt)->Reset();
}

TEST_F(SourceCodecTest, AReopenedFileKeepsItsSharedDictionaryId) {
  SharedDictionaries shared;
  WriteBatches(20, {20, 1});
  auto w = OpenWriter(20, &shared);
  ASSERT_TRUE(w);
  std::vector<Record> a = NewRecords(3);
  shared.Precompress(a);
  w = OpenWriter(20, &shared);  // the same bytes: the same id
  ASSERT_TRUE(w);
  std::vector<Record> b = NewRecords(3);
  shared.Precompress(b);
  ASSERT_NE(a[0].stored_dictionary, 0u);
  EXPECT_EQ(a[0].stored_dictionary, b[0].stored_dictionary);
  Write(*w, a);
  Write(*w, b);
  w.reset();
  EXPECT_EQ(ReadBack().documents, written_);
}

TEST(SharedDictionariesTest, OnlyDaysWithADictionaryAreCompressed) {
  std::mt19937_64 rng(9);
  SourceCompressor trainer(SourceCompression{.sample_events = 40});
  for (int i = 0; i < 40; ++i) trainer.AddSample(LogDocument(rng, i));
  auto bytes = trainer.Train();
  ASSERT_TRUE(bytes.ok());
  SharedDictionaries shared;
  const auto id = shared.Publish(kCodecDay, *bytes, trainer.dictionary());
  EXPECT_EQ(shared.Publish(kCodecDay, *bytes, trainer.dictionary()), id);
  EXPECT_NE(shared.Publish(kCodecDay + 1, *bytes, trainer.dictionary()), id);

  std::vector<Record> records(3);
  records[0].ts_ms = kCodecT0;
  records[0].source = LogDocument(rng, 1);
  records[1].ts_ms = kCodecT0 + 2 * kMsPerDay;  // a day without one
  records[1].source = LogDocument(rng, 2);
  records[2].ts_ms = kCodecT0;
  records[2].source = "{}";  // would not shrink
  shared.Precompress(records);
  EXPECT_TRUE(IsCompressedSource(records[0].stored_source));
  EXPECT_EQ(records[0].stored_dictionary, id);
  EXPECT_TRUE(records[1].stored_source.empty());
  EXPECT_TRUE(records[2].stored_source.empty());
}

TEST(SourceCompressorTest, ForgetGoesBackToPlainDocumentsAndTrainsAgainFromTheSamples) {
  std::mt19937_64 rng(3);
  SourceCompressor c(SourceCompression{.sample_events = 40});
  std::vector<std::string> docs;
  for (int i = 0; i < 40; ++i) {
    docs.push_back(LogDocument(rng, i));
    c.AddSample(docs.back());
  }
  ASSERT_TRUE(c.HasEnoughSamples());
  const std::string doc = LogDocument(rng, 99);
  EXPECT_EQ(c.Encode(doc), doc);  // not ready: as it is
  ASSERT_TRUE(c.Train().ok());
  EXPECT_TRUE(IsCompressedSource(c.Encode(doc)));
  c.Forget();
  EXPECT_FALSE(c.ready());
  EXPECT_EQ(c.Encode(doc), doc);
  ASSERT_TRUE(c.Train().ok());  // the samples were kept
  EXPECT_TRUE(IsCompressedSource(c.Encode(doc)));
}

TEST(SourceCompressorTest, ADocumentThatDoesNotShrinkIsStoredAsItIs) {
  std::mt19937_64 rng(5);
  SourceCompressor c(SourceCompression{.sample_events = 40});
  for (int i = 0; i < 40; ++i) c.AddSample(LogDocument(rng, i));
  ASSERT_TRUE(c.Train().ok());
  std::string noise = R"({"m":")";
  for (int i = 0; i < 24; ++i) noise += static_cast<char>('!' + rng() % 90);
  noise += "\"}";
  EXPECT_EQ(c.Encode(noise), noise);
  EXPECT_EQ(c.Encode("{}"), "{}");
}

}  // namespace
}  // namespace dashcam::storage
