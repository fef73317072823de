// Re-indexing a day from its stored documents (storage/partition_reindex.h),
// against what the real binary wrote: the index made again from the stored
// documents holds exactly the terms, documents, columns and positions that
// ingest gave FTS5, for events of every kind ingest handles (training logs,
// detected insights, redacted secrets, awkward field shapes, keyword
// fields, replaced documents); and a day whose meta says an older dashcam
// indexed it is re-indexed when compacted, and answers every query as
// before.
#include <sqlite3.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <boost/json.hpp>

#include "storage/partition.h"
#include "storage/partition_compaction.h"
#include "storage/partition_reindex.h"
#include "storage/time_format.h"
#include "tests/common/fleet_corpus.h"
#include "tests/common/http_client.h"
#include "tests/common/redaction_corpus.h"
#include "tests/common/test_server.h"
#include "tests/common/training_log_generator.h"
#include "tests/common/wait_for.h"

namespace dashcam::testing::reindex_test {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;

std::int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Two days ago, at 10:00 UTC: a past day the compactor may take.
TimeMs PastNoon() {
  return DayStart(DayOf(NowMs()) - 2) + 10 * 3'600'000;
}

void PostBulk(HttpClient& client, const std::string& body, bool gzip) {
  std::map<std::string, std::string> headers{{"Content-Type", "application/x-ndjson"}};
  std::string sent = body;
  if (gzip) {
    headers["Content-Encoding"] = "gzip";
    sent = Gzip(body);
  }
  auto res = client.Post("/_bulk", sent, headers);
  ASSERT_EQ(res.status, 200) << res.body.substr(0, 300);
  ASSERT_FALSE(json::parse(res.body).at("errors").as_bool()) << res.body.substr(0, 2000);
}

// A bulk action line: index (replacing an earlier document of the same id)
// when `id` is given, else create.
std::string Action(const std::string& index, const std::string& id) {
  json::object meta{{"_index", index}};
  if (!id.empty()) meta["_id"] = id;
  return json::serialize(json::object{{id.empty() ? "create" : "index", meta}}) + "\n";
}

// Documents of shapes the field rules treat apart (storage/query_ast.h,
// attrs_codec.h), at `t` and after.
std::vector<std::string> AwkwardDocuments(TimeMs t) {
  const auto ts = [&](int i) { return json::value(FormatRfc3339Ms(t + i)).as_string(); };
  const std::string long_path = "/home/alice/" + std::string(300, 'p') + "/train.log";
  std::vector<json::object> docs = {
      {{"@timestamp", ts(0)}, {"message", ""}, {"tags", json::array{"", "---", "gpu", ""}}},
      {{"@timestamp", ts(1)}, {"msg", "msg is the message here"}, {"empty", ""}, {"dash", "--"}},
      {{"@timestamp", ts(2)},
       {"log", "log as a string is the message"},
       {"host", json::object{{"name", json::array{"gpu-node-01", "gpu node 02"}}}}},
      {{"@timestamp", ts(3)},
       {"message", "nested values"},
       {"a", json::object{{"b", json::object{{"c", 1.5}, {"d", json::array{1, "x", nullptr}}}}}},
       {"flag", true},
       {"none", nullptr},
       {"obj", json::object{}},
       {"arr", json::array{}}},
      {{"@timestamp", ts(4)},
       {"message", "keyword values cut at 256 bytes"},
       {"log", json::object{{"file", json::object{{"path", long_path}}}, {"offset", 77}}},
       {"run", json::object{{"id", "run with spaces \x1f and separators \x1e"}}}},
      {{"@timestamp", ts(5)},
       {"message", "UTF-8: 训练 失败 – CUDA error: out of memory ✓"},
       {"field with spaces", "value"},
       {"dotted.name.deep", "x"},
       {"weird\x1fname", "y"}},
      {{"@timestamp", ts(6)},
       {"message", "a client's own insight member is replaced"},
       {"insight", json::object{{"kind", "made_up"}, {"xid", 79}}},
       {"train", json::object{{"loss", 0.5}}}},
      {{"@timestamp", ts(7)},
       {"message", "epoch 3 step 1200/5000 loss 0.4312 lr 3e-4 grad_norm 1.25"},
       {"user", "zhangsan"},
       {"numbers", json::array{0, -1, 1e300, 0.1, 12345678901234}}},
      {{"@timestamp", ts(8)},
       {"message", "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB"},
       {"host", json::object{{"name", "gpu-node-07"}}},
       {"log", json::object{{"file", json::object{{"path", "/home/bob/runs/x/train.log"}}}}}},
  };
  std::vector<std::string> out;
  for (const auto& d : docs) out.push_back(json::serialize(d));
  return out;
}

// Sends every kind of event the test covers, in bulk requests of a few
// hundred, some gzipped; documents sent twice by id leave stale index
// entries behind (the partition's `replaced`).
void IngestEverything(HttpClient& client) {
  std::vector<std::string> lines;  // action + document, two lines each
  GeneratorOptions gen;
  gen.start_ms = PastNoon() - 3'600'000;
  gen.span_ms = 3 * 3'600'000;
  gen.expected_events = 3000;
  TrainingLogGenerator training(gen);
  for (int i = 0; i < 3000; ++i) {
    const std::string id = i % 10 == 0 ? fmt::format("t{}", i % 300) : "";
    lines.push_back(Action(i % 3 == 0 ? "filebeat-8.17.0" : "train-logs", id) +
                    training.Next().json + "\n");
  }
  const FleetCorpus fleet = MakeFleetCorpus({PastNoon() + 7'200'000, true});
  for (const FleetEvent& e : fleet.events) {
    lines.push_back(Action("fleet", e.id) + e.json + "\n");
  }
  TimeMs t = PastNoon() + 100;
  const auto doc = [&](std::string_view message) {
    return json::serialize(
        json::object{{"@timestamp", FormatRfc3339Ms(t++)}, {"message", message}});
  };
  for (const PlantedSecret& s : PlantedSecrets())
    lines.push_back(Action("sec", "") + doc(s.text) + "\n");
  for (const std::string& l : OrdinaryLogLines()) lines.push_back(Action("", "") + doc(l) + "\n");
  for (const std::string& d : OrdinaryJsonDocuments()) {
    json::object o = json::parse(d).as_object();
    o["@timestamp"] = FormatRfc3339Ms(t++);
    lines.push_back(Action("docs", "") + json::serialize(o) + "\n");
  }
  for (const std::string& d : AwkwardDocuments(PastNoon() + 5'000)) {
    lines.push_back(Action("awkward", "") + d + "\n");
  }
  std::string body;
  int requests = 0;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    body += lines[i];
    if ((i + 1) % 400 == 0 || i + 1 == lines.size()) {
      PostBulk(client, body, ++requests % 2 == 0);
      body.clear();
    }
  }
}

// One index entry, as fts5vocab's instance table gives it.
using Instance = std::tuple<std::string, std::int64_t, std::string, std::int64_t>;

// Every entry of FTS5 table `table` in `db`, sorted; without the events
// `replaced` names (stale entries of the events they replaced) when
// `live_only`.
std::vector<Instance> Instances(storage::Db& db, const std::string& table, bool live_only) {
  const std::string vocab = "temp.v_" + table;
  const Status made = db.Exec(fmt::format(
      "CREATE VIRTUAL TABLE IF NOT EXISTS {} USING fts5vocab(main, {}, instance)", vocab, table));
  EXPECT_TRUE(made.ok()) << made.ToString();
  auto stmt = db.Prepare(
      fmt::format("SELECT term, doc, col, offset FROM {} {} ORDER BY term, doc, col, offset", vocab,
                  live_only ? "WHERE doc NOT IN (SELECT key FROM replaced)" : ""));
  EXPECT_TRUE(stmt.ok()) << stmt.status().ToString();
  std::vector<Instance> out;
  while (stmt.ok() && stmt->Step() == SQLITE_ROW) {
    out.emplace_back(std::string(stmt->Text(0)), stmt->Int(1), std::string(stmt->Text(2)),
                     stmt->Int(3));
  }
  return out;
}

std::string Printable(const Instance& i) {
  std::string term;
  for (unsigned char c : std::get<0>(i)) {
    term += c < 0x20 ? fmt::format("\\x{:02x}", c) : std::string(1, static_cast<char>(c));
  }
  return fmt::format("{} doc {} {} @{}", term, std::get<1>(i), std::get<2>(i), std::get<3>(i));
}

std::int64_t Scalar(storage::Db& db, const std::string& sql) {
  auto stmt = db.Prepare(sql);
  EXPECT_TRUE(stmt.ok()) << sql;
  return stmt.ok() && stmt->Step() == SQLITE_ROW ? stmt->Int(0) : -1;
}

std::vector<std::string> PartitionFiles(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() == ".db") out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

const storage::CompactionPace kNoPause = [](auto) { return true; };

// IngestEverything into a server on `data` that does not compact (`args`
// besides), stopped after.
void IngestIntoAServer(const std::string& data, std::vector<std::string> args = {}) {
  args.insert(args.begin(), {"--compact-after", "off"});
  TestServer server(data, args);
  ASSERT_TRUE(server.Start()) << server.error();
  HttpClient client("127.0.0.1", server.port());
  IngestEverything(client);
  ASSERT_EQ(server.Stop(), 0);
}

TEST(ReindexTest, TheIndexMadeFromStoredDocumentsIsTheOneIngestMade) {
  TempDir dir;
  const std::string data = dir.path() + "/data";
  ASSERT_NO_FATAL_FAILURE(IngestIntoAServer(data));

  std::size_t compared = 0;
  std::int64_t replaced = 0;
  for (const std::string& path : PartitionFiles(data)) {
    SCOPED_TRACE(path);
    storage::Db db;
    ASSERT_TRUE(storage::OpenForCompaction(path, db).ok());
    storage::CompactionSteps steps;
    steps.reindex_events = 97;  // many steps, none aligned with ingest's commits
    std::uint64_t indexed = 0;
    const Status built =
        storage::BuildIndexFromDocuments(db, "fts_check", steps, kNoPause, &indexed);
    ASSERT_TRUE(built.ok()) << built.ToString();
    EXPECT_EQ(static_cast<std::int64_t>(indexed), Scalar(db, "SELECT count(*) FROM events"));
    const std::vector<Instance> ingested = Instances(db, "fts", /*live_only=*/true);
    const std::vector<Instance> rebuilt = Instances(db, "fts_check", false);
    EXPECT_EQ(ingested.size(), rebuilt.size());
    const auto [a, b] =
        std::mismatch(ingested.begin(), ingested.end(), rebuilt.begin(), rebuilt.end());
    if (a != ingested.end() || b != rebuilt.end()) {
      ADD_FAILURE() << "first difference: ingested "
                    << (a == ingested.end() ? "(end)" : Printable(*a)) << ", rebuilt "
                    << (b == rebuilt.end() ? "(end)" : Printable(*b));
    }
    compared += ingested.size();
    if (const std::int64_t n = Scalar(db, "SELECT count(*) FROM replaced"); n > 0) {
      replaced += n;
      EXPECT_GT(Instances(db, "fts", false).size(), ingested.size());  // the stale entries
    }
  }
  EXPECT_GT(compared, 100'000u);
  EXPECT_GT(replaced, 0);  // documents sent again by id are covered
}

// The answers a server gives to queries over every kind of field, without
// the time they took.
std::vector<std::string> Answers(HttpClient& client) {
  const char* const queries[] = {
      "_exists_:insight.kind",
      "_exists_:insight.xid",
      "_exists_:tags",
      "NOT _exists_:gpu_id",
      "_exists_:a.b",
      "_exists_:empty OR _exists_:dash",
      "host.name:gpu-node-07",
      "log.file.path:*bob*",
      "run.id:*",
      "_index:fleet",
      "cuda AND out",
      "\"out of memory\"",
      "\"out memory\"~2",
      "user:zhangsan AND gpu_id:3",
      "tags:gpu",
      "REDACTED",
  };
  std::vector<std::string> out;
  for (const char* q : queries) {
    auto res = client.Get("/api/v1/search?q=" + UrlEncode(q) +
                          "&limit=500&from=2000-01-01T00:00:00Z&to=2100-01-01T00:00:00Z");
    EXPECT_EQ(res.status, 200) << q << ": " << res.body.substr(0, 300);
    json::object o = json::parse(res.body).as_object();
    o.erase("took_ms");
    EXPECT_GT(o.at("total").as_int64(), 0) << q;  // every query finds something to compare
    out.push_back(std::string(q) + " -> " + json::serialize(o));
  }
  return out;
}

json::object Compaction(HttpClient& client) {
  return json::parse(client.Get("/api/v1/status").body).at("compaction").as_object();
}

// What a server that compacts the day of file `path` at once says, on the
// same connections, before and after the compaction.
struct AroundCompaction {
  std::vector<std::string> before, after;
  json::object compaction;  // its status after
  std::string log;
};

// Starts a server on `data` (with `args` besides) that compacts the day of
// file `path` at once, and fills `out`.
void AnswerAroundCompaction(const std::string& data, const std::string& path,
                            const std::vector<std::string>& args, AroundCompaction& out) {
  fs::last_write_time(path, fs::file_time_type::clock::now());
  std::vector<std::string> all = {"--compact-after", "3s", "--test-compaction-check-ms", "50"};
  all.insert(all.end(), args.begin(), args.end());
  TestServer server(data, all);
  ASSERT_TRUE(server.Start()) << server.error();
  HttpClient client("127.0.0.1", server.port());
  out.before = Answers(client);
  ASSERT_EQ(Compaction(client).at("compacted_partitions").as_int64(), 0)
      << "compacted before the first answers";
  const auto done = [&] { return Compaction(client).at("compacted_partitions").as_int64() >= 1; };
  ASSERT_TRUE(WaitFor(done, std::chrono::seconds(60))) << client.Get("/api/v1/status").body;
  out.compaction = Compaction(client);
  out.after = Answers(client);
  ASSERT_EQ(server.Stop(), 0);
  out.log = server.ReadLog();
}

TEST(ReindexTest, ADayAnOlderVersionIndexedIsIndexedAgainWhenCompactedAndAnswersAlike) {
  TempDir dir;
  const std::string data = dir.path() + "/data";
  // An older dashcam's index had two columns (attrs_codec.h).
  ASSERT_NO_FATAL_FAILURE(IngestIntoAServer(data, {"--test-two-column-index"}));
  const auto files = PartitionFiles(data);
  ASSERT_EQ(files.size(), 1u);
  const std::string path = files[0];
  // What a file of an older dashcam says: no term for every value, fewer
  // keyword fields.
  {
    storage::Db db;
    ASSERT_TRUE(storage::OpenForCompaction(path, db).ok());
    auto one_column = storage::FtsHasOneColumn(db);
    ASSERT_TRUE(one_column.ok() && !*one_column);
    ASSERT_TRUE(db.Exec("DELETE FROM meta WHERE key = 'field_terms'; UPDATE meta SET value = "
                        "'_index,host.name' WHERE key = 'keyword_fields'")
                    .ok());
    auto due = storage::NeedsReindex(db);
    ASSERT_TRUE(due.ok() && *due);
    ASSERT_GT(Scalar(db, "SELECT count(*) FROM replaced"), 0);
  }
  // The server asks before the compaction and after it, on the same
  // connections: those opened before the new index read its meta again.
  // The day is also small enough to have its documents encoded anew.
  AroundCompaction around;
  ASSERT_NO_FATAL_FAILURE(
      AnswerAroundCompaction(data, path, {"--test-day-dictionary-events", "1000"}, around));
  const json::object& last = around.compaction.at("last").as_object();
  EXPECT_GT(last.at("reindexed_events").as_int64(), 3000) << around.compaction;
  EXPECT_GT(last.at("documents_encoded").as_int64(), 3000) << around.compaction;
  EXPECT_EQ(around.after, around.before);

  storage::Db db;
  ASSERT_TRUE(storage::OpenForCompaction(path, db).ok());
  EXPECT_EQ(Scalar(db, "SELECT count(*) FROM meta WHERE key = 'field_terms' AND value = 'all'"), 1);
  auto one_column = storage::FtsHasOneColumn(db);
  ASSERT_TRUE(one_column.ok());
  EXPECT_TRUE(*one_column);
  auto due = storage::NeedsReindex(db);
  ASSERT_TRUE(due.ok());
  EXPECT_FALSE(*due);
  EXPECT_EQ(Scalar(db, "SELECT count(*) FROM sqlite_master WHERE name LIKE '%_reindex'"), 0);
  EXPECT_GT(Scalar(db, "SELECT count(*) FROM events WHERE substr(source, 1, 1) = x'02'"), 3000);
  // The new index holds no stale entries, and is sound and one segment.
  const auto live = Instances(db, "fts", true);
  EXPECT_EQ(Instances(db, "fts", false).size(), live.size());
  EXPECT_TRUE(db.Exec("INSERT INTO fts(fts) VALUES('integrity-check')").ok());
  auto merged = storage::FtsFullyMerged(db);
  ASSERT_TRUE(merged.ok());
  EXPECT_TRUE(*merged);
  EXPECT_NE(around.log.find("\"reindexed_events\":"), std::string::npos);
}

// With --compacted-positions drop, a compacted day's index keeps no
// positions (storage/rowid_layout.h): phrases and proximity are then found
// by their words and checked in the documents, and answer as before.
TEST(ReindexTest, ADayCompactedWithoutPositionsAnswersAlike) {
  TempDir dir;
  const std::string data = dir.path() + "/data";
  ASSERT_NO_FATAL_FAILURE(IngestIntoAServer(data));
  const auto files = PartitionFiles(data);
  ASSERT_EQ(files.size(), 1u);
  const std::string path = files[0];
  AroundCompaction around;
  ASSERT_NO_FATAL_FAILURE(
      AnswerAroundCompaction(data, path, {"--compacted-positions", "drop"}, around));
  EXPECT_GT(around.compaction.at("last").at("reindexed_events").as_int64(), 3000);
  EXPECT_EQ(around.after, around.before);

  storage::Db db;
  ASSERT_TRUE(storage::OpenForCompaction(path, db).ok());
  EXPECT_EQ(Scalar(db,
                   "SELECT count(*) FROM meta WHERE key = 'rowids' AND value LIKE "
                   "'docnos:%:blocks:nopos'"),
            1);
  EXPECT_EQ(Scalar(db,
                   "SELECT count(*) FROM sqlite_master WHERE name = 'fts' AND sql LIKE "
                   "'%detail=none%'"),
            1);
  EXPECT_TRUE(db.Exec("INSERT INTO fts(fts) VALUES('integrity-check')").ok());
  auto due = storage::NeedsReindex(db, /*positions=*/false);
  ASSERT_TRUE(due.ok());
  EXPECT_FALSE(*due);
  due = storage::NeedsReindex(db, /*positions=*/true);  // --compacted-positions keep
  ASSERT_TRUE(due.ok());
  EXPECT_TRUE(*due);
}

}  // namespace
}  // namespace dashcam::testing::reindex_test
