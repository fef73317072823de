// The query language's leaves (query_ast.h) run by SqliteStore against real
// partitions: each construct on hand-made events, the vocabulary the writer
// keeps, and a check that compiled SQL and RowMatcher (the in-memory
// evaluator of the same contract) agree on random queries over generated
// training logs.
#include <algorithm>
#include <filesystem>
#include <future>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <re2/re2.h>

#include "storage/docno_keys.h"
#include "storage/document_reader.h"
#include "storage/fts_query_compiler.h"
#include "storage/fts_tokenizer.h"
#include "storage/log.h"
#include "storage/match_sample.h"
#include "storage/partition.h"
#include "storage/partition_compaction.h"
#include "storage/partition_reindex.h"
#include "storage/row_predicate.h"
#include "storage/sqlite_store.h"
#include "storage/text_tokenizer.h"
#include "storage/vocabulary.h"
#include "tests/common/test_server.h"
#include "tests/common/training_log_generator.h"

namespace dashcam::storage {
namespace {

using query::Node;
using query::NodeKind;
using Names = std::vector<std::string>;

constexpr TimeMs kLangT0 = dashcam::testing::kDefaultGeneratorStartMs + 3'600'000;

Node LangLeaf(NodeKind kind, std::string field, std::string text, unsigned distance = 0) {
  query::Term t;
  t.field = std::move(field);
  t.text = std::move(text);
  t.distance = distance;
  return Node::MakeLeaf(kind, std::move(t), 0);
}
Node LangTerm(std::string field, std::string text, bool prefix = false) {
  return Node::MakeTerm(query::Term{std::move(field), std::move(text), false, prefix}, 0);
}
Node Range(std::string field, std::string lo, std::string hi, bool inc_lo = true,
           bool inc_hi = true) {
  return Node::MakeRange(
      query::Range{std::move(field), std::move(lo), std::move(hi), inc_lo, inc_hi}, 0);
}
Node LangGroup(NodeKind kind, std::vector<Node> children) {
  return Node{kind, 0, std::move(children), {}, {}};
}

// A Record the way ingest builds one: fields and message from the document.
Record RecordOf(const std::string& json, std::string index, std::string doc_id = "") {
  DocumentReader reader;
  DocumentView view;
  EXPECT_TRUE(reader.ReadUnpadded(json, view).ok()) << json;
  Record r;
  r.ts_ms = view.timestamp.value_or(kLangT0);
  r.level = view.level.value_or("");
  r.message = view.message.value_or("");
  r.index = std::move(index);
  r.doc_id = std::move(doc_id);
  r.fields = view.fields;
  r.source = json;
  return r;
}

class QueryLanguageStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SqliteStoreOptions opts;
    opts.data_dir = dir_.path() + "/data";
    opts.writer.partition.sync = SyncMode::kNormal;
    opts.writer.partition.test_two_column_index = two_column_index_;
    auto s = SqliteStore::Open(std::move(opts), log_);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(*s);
  }

  // The store again, making files as a dashcam before version 10 did (a
  // two-column index: attrs_codec.h).
  void AsAnOlderVersion() {
    store_.reset();
    two_column_index_ = true;
    SetUp();
  }

  // Appends and remembers each event (with the id it got) for the evaluator.
  void Add(std::vector<Record> records) {
    std::promise<AppendResult> done;
    auto result = done.get_future();
    std::vector<Record> copy = records;
    store_->Append(std::move(copy), [&](AppendResult r) { done.set_value(std::move(r)); });
    AppendResult r = result.get();
    ASSERT_TRUE(r.status.ok()) << r.status.ToString();
    for (std::size_t i = 0; i < records.size(); ++i) {
      events_.push_back({std::move(records[i]), r.ids[i]});
    }
  }
  void AddJson(const std::string& json, std::string index = "logs", std::string doc_id = "") {
    Add({RecordOf(json, std::move(index), std::move(doc_id))});
  }

  Result<SearchPage> Run(const Node& q) {
    SearchRequest req;
    req.query = &q;
    req.limit = 10'000;
    req.count_limit = 0;
    return store_->Search(req);
  }
  // The hits' messages, sorted.
  Names Find(const Node& q) {
    auto page = Run(q);
    EXPECT_TRUE(page.ok()) << query::DebugString(q) << ": " << page.status().ToString();
    Names out;
    if (!page.ok()) return out;
    DocumentReader reader;
    DocumentView view;
    for (const StoredEvent& e : page->hits) {
      EXPECT_TRUE(reader.ReadUnpadded(e.source, view).ok());
      out.push_back(view.message.value_or("<none>"));
    }
    std::sort(out.begin(), out.end());
    return out;
  }
  // The ids RowMatcher says match, sorted.
  std::vector<std::string> Expected(const Node& q) {
    if (views_.size() != events_.size()) {
      DocumentReader reader;
      views_.resize(events_.size());
      for (std::size_t i = 0; i < events_.size(); ++i) {
        EXPECT_TRUE(reader.ReadUnpadded(events_[i].first.source, views_[i]).ok());
      }
    }
    std::vector<std::string> out;
    for (std::size_t i = 0; i < events_.size(); ++i) {
      const auto& [record, id] = events_[i];
      if (matcher_.Matches(q, EventView{&views_[i], record.index, id, record.ts_ms})) {
        out.push_back(id);
      }
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  // The search finds exactly the events RowMatcher says match.
  void ExpectRowMatcherAnswer(const Node& q) {
    auto page = Run(q);
    ASSERT_TRUE(page.ok()) << query::DebugString(q) << ": " << page.status().ToString();
    std::vector<std::string> got;
    for (const StoredEvent& e : page->hits) got.push_back(e.id);
    std::sort(got.begin(), got.end());
    EXPECT_EQ(got, Expected(q)) << query::DebugString(q);
  }

  // Date histograms of `q` over [from, to) count what RowMatcher finds:
  // every 60 s and 1 h (few enough buckets for the explorer's histogram)
  // and 7 s (too many).
  void ExpectHistogramsOfTheRowMatcher(const Node& q, TimeMs from, TimeMs to) {
    std::map<std::string, TimeMs> time_of;
    for (const auto& [record, id] : events_) time_of[id] = record.ts_ms;
    for (const TimeMs interval : {TimeMs{60'000}, TimeMs{3'600'000}, TimeMs{7'000}}) {
      std::map<TimeMs, std::uint64_t> want;
      for (const std::string& id : Expected(q)) ++want[time_of.at(id) / interval * interval];
      SearchRequest req;
      req.query = &q;
      req.from = from;
      req.to = to;
      auto got = store_->Histogram(req, interval);
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      std::map<TimeMs, std::uint64_t> have;
      for (const HistogramBucket& b : *got) have[b.start] = b.count;
      EXPECT_EQ(have, want) << query::DebugString(q) << " every " << interval << " ms";
    }
  }

  void KeywordFieldsMatchWholeValues(bool older);
  void MessageAndFieldsStayApart(bool older);

  dashcam::testing::TempDir dir_;
  Log log_ = Log::Null();
  bool two_column_index_ = false;
  std::unique_ptr<SqliteStore> store_;
  std::vector<std::pair<Record, std::string>> events_;
  std::vector<DocumentView> views_;  // of events_, for Expected
  RowMatcher matcher_;
};

std::string Ev(std::string_view message, std::string_view more = "") {
  return fmt::format(R"({{"@timestamp":"2026-11-29T01:00:00Z","message":"{}"{}}})", message, more);
}

TEST_F(QueryLanguageStoreTest, WildcardsExpandAgainstTheVocabulary) {
  AddJson(Ev("RuntimeError: CUDA out of memory", R"(,"hostname":"gpu-node-07")"));
  AddJson(Ev("cudnn failure: outofmemory", R"(,"hostname":"gpu-node-12")"));
  AddJson(Ev("cuda ok", R"(,"hostname":"gpu-node")"));
  AddJson(Ev("显存不足", R"(,"hostname":"cpu-node-07")"));
  const Names oom = {"RuntimeError: CUDA out of memory", "cudnn failure: outofmemory"};
  EXPECT_EQ(Find(LangLeaf(NodeKind::kWildcard, "", "*memory")), oom);
  EXPECT_EQ(Find(LangLeaf(NodeKind::kWildcard, "", "cud?")),
            (Names{"RuntimeError: CUDA out of memory", "cuda ok"}));
  EXPECT_EQ(Find(LangLeaf(NodeKind::kWildcard, "", "c*a")),
            (Names{"RuntimeError: CUDA out of memory", "cuda ok"}));
  EXPECT_EQ(Find(LangLeaf(NodeKind::kWildcard, "", "CU*N")), (Names{"cudnn failure: outofmemory"}));
  EXPECT_EQ(Find(LangLeaf(NodeKind::kWildcard, "", "*xyz*")), Names{});
  EXPECT_EQ(Find(LangLeaf(NodeKind::kWildcard, "", "显*")), (Names{"显存不足"}));
  // Several positions: gpu, node, then any token (so not plain "gpu-node").
  EXPECT_EQ(Find(LangLeaf(NodeKind::kWildcard, "hostname", "gpu-node-*")), oom);
  EXPECT_EQ(Find(LangLeaf(NodeKind::kWildcard, "hostname", "*-node-0?")),
            (Names{"RuntimeError: CUDA out of memory", "显存不足"}));
  EXPECT_EQ(Find(LangLeaf(NodeKind::kWildcard, "hostname", "g*-node-1*")),
            (Names{"cudnn failure: outofmemory"}));
  // A wildcard never crosses a separator.
  EXPECT_EQ(Find(LangLeaf(NodeKind::kWildcard, "hostname", "gpu*07")), Names{});
}

// Histogram(req, interval) (Elasticsearch's date_histogram) counts, per
// bucket, the events the search finds: match-all, FTS5 alone (minus the
// stale entries of a replaced event), FTS5 and rows, rows alone, and each
// within a @timestamp range of the query; over two days.
TEST_F(QueryLanguageStoreTest, DateHistogramsCountWhatTheRowMatcherFinds) {
  std::vector<Record> records;
  const char* const words[] = {"epoch", "loss", "cuda", "nccl", "warmup"};
  for (int i = 0; i < 3000; ++i) {
    const TimeMs t = kLangT0 + static_cast<TimeMs>(i) * 61'013;  // ~2 days
    records.push_back(
        RecordOf(fmt::format(R"({{"@timestamp":{},"message":"{} {} step {}","gpu_id":{}}})", t,
                             words[i % 5], words[(i / 5) % 5], i, i % 8),
                 "logs"));
  }
  Add(std::move(records));
  AddJson(fmt::format(R"({{"@timestamp":{},"message":"epoch stale"}})", kLangT0 + 5), "logs", "d1");
  AddJson(fmt::format(R"({{"@timestamp":{},"message":"epoch fresh"}})", kLangT0 + 7), "logs", "d1");
  std::erase_if(events_, [](const auto& e) { return e.first.message == "epoch stale"; });
  views_.clear();

  const Node queries[] = {
      Node::MatchAll(),
      LangTerm("", "epoch"),
      LangGroup(NodeKind::kAnd, {LangTerm("", "cuda"), Range("gpu_id", "2", "5")}),
      LangGroup(NodeKind::kNot, {LangTerm("", "loss")}),
      LangTerm("", "nosuchword"),
      Range("@timestamp", std::to_string(kLangT0 + 3'600'000), std::to_string(kLangT0 + 7'200'000)),
      LangGroup(NodeKind::kAnd,
                {LangTerm("", "epoch"),
                 Range("@timestamp", std::to_string(kLangT0 + 86'000'000), "", false)}),
  };
  for (const Node& q : queries)
    ExpectHistogramsOfTheRowMatcher(q, kLangT0 - 3'600'000, kLangT0 + 3 * 86'400'000);
}

TEST_F(QueryLanguageStoreTest, TooManyExpansionsIsAnErrorNamingTheLimit) {
  std::vector<Record> records;
  for (int i = 0; i < 1100; ++i) records.push_back(RecordOf(Ev(fmt::format("job{}", i)), "logs"));
  Add(std::move(records));
  auto page = Run(LangLeaf(NodeKind::kWildcard, "", "job*"));
  ASSERT_FALSE(page.ok());
  EXPECT_EQ(page.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(page.status().message().find("matches more than 1024 distinct terms"),
            std::string::npos)
      << page.status().message();
  // Narrower patterns are fine; so is a prefix (FTS5 answers it alone).
  auto narrow = Run(LangLeaf(NodeKind::kWildcard, "", "job10?"));
  ASSERT_TRUE(narrow.ok()) << narrow.status().ToString();
  EXPECT_EQ(narrow->hits.size(), 10u);
  auto prefix = Run(LangTerm("", "job", true));
  ASSERT_TRUE(prefix.ok());
  EXPECT_EQ(prefix->hits.size(), 1100u);
}

TEST_F(QueryLanguageStoreTest, Regexes) {
  AddJson(Ev("CUDA error: out of memory"));
  AddJson(Ev("CUDA error: illegal memory access"));
  AddJson(Ev("cuda error: out of memory"));
  AddJson(Ev("error out of memory"));
  AddJson(Ev("x", R"(,"user":"zhangsan","tags":["a1","b22"])"));
  EXPECT_EQ(
      Find(LangLeaf(NodeKind::kRegex, "", "CUDA error: (out of memory|illegal memory access)")),
      (Names{"CUDA error: illegal memory access", "CUDA error: out of memory"}));
  EXPECT_EQ(Find(LangLeaf(NodeKind::kRegex, "message", "(?i)^cuda error: out")),
            (Names{"CUDA error: out of memory", "cuda error: out of memory"}));
  EXPECT_EQ(Find(LangLeaf(NodeKind::kRegex, "", "r: o")),
            (Names{"CUDA error: out of memory", "cuda error: out of memory"}));
  EXPECT_EQ(Find(LangLeaf(NodeKind::kRegex, "", "^e.*y$")), (Names{"error out of memory"}));
  EXPECT_EQ(Find(LangLeaf(NodeKind::kRegex, "user", "^zh.*n$")), (Names{"x"}));
  EXPECT_EQ(Find(LangLeaf(NodeKind::kRegex, "tags", "^b\\d+$")), (Names{"x"}));
  EXPECT_EQ(Find(LangLeaf(NodeKind::kRegex, "tags", "a1b")), Names{});
}

TEST_F(QueryLanguageStoreTest, RegexesOfOneWordFindItInsideTokensAndPastTheCut) {
  // The vocabulary gives the terms holding the word; the cut token is one of
  // them because it is long, though the word is past what the index keeps.
  const std::string blob = "blob " + std::string(140, 'f') + "NCCLwarn end";
  AddJson(Ev("NCCL WARN Could not enable P2P access"));
  AddJson(Ev("libnccl2 loaded"));
  AddJson(Ev(blob));
  AddJson(Ev("epoch 3 done"));
  AddJson(Ev("y", R"(,"user":"ncclbot")"));
  EXPECT_EQ(Find(LangLeaf(NodeKind::kRegex, "", "NCCL")),
            (Names{"NCCL WARN Could not enable P2P access", blob}));
  EXPECT_EQ(Find(LangLeaf(NodeKind::kRegex, "", "nccl")), (Names{"libnccl2 loaded"}));
  EXPECT_EQ(Find(LangLeaf(NodeKind::kRegex, "", "NCCLwarn")), (Names{blob}));
  EXPECT_EQ(Find(LangLeaf(NodeKind::kRegex, "", "cclw.*end")), Names{});
  EXPECT_EQ(Find(LangLeaf(NodeKind::kRegex, "", "ffNCCLw.*end")), (Names{blob}));
  EXPECT_EQ(Find(LangLeaf(NodeKind::kRegex, "user", "cclb")), (Names{"y"}));
  EXPECT_EQ(Find(LangLeaf(NodeKind::kRegex, "", "ccl")), (Names{"libnccl2 loaded"}));
}

TEST_F(QueryLanguageStoreTest, FuzzyAndProximity) {
  AddJson(Ev("CUDA out of memory"));
  AddJson(Ev("memory pressure"));
  AddJson(Ev("memo to self"));
  AddJson(Ev("out of the cuda memory"));
  EXPECT_EQ(Find(LangLeaf(NodeKind::kFuzzy, "", "memroy", 1)),
            (Names{"CUDA out of memory", "memory pressure", "out of the cuda memory"}));
  EXPECT_EQ(Find(LangLeaf(NodeKind::kFuzzy, "", "memroy", 0)), Names{});
  EXPECT_EQ(Find(LangLeaf(NodeKind::kFuzzy, "", "mem", 2)), (Names{"memo to self"}));
  EXPECT_EQ(Find(LangLeaf(NodeKind::kNear, "", "cuda memory", 3)),
            (Names{"CUDA out of memory", "out of the cuda memory"}));
  EXPECT_EQ(Find(LangLeaf(NodeKind::kNear, "", "cuda memory", 1)),
            (Names{"out of the cuda memory"}));
  EXPECT_EQ(Find(LangLeaf(NodeKind::kNear, "", "memory cuda", 0)),
            (Names{"out of the cuda memory"}));
  // "out of" is one phrase of two tokens; it must end within 1 of `memory`.
  EXPECT_EQ(Find(LangLeaf(NodeKind::kNear, "", "out-of memory", 1)), (Names{"CUDA out of memory"}));
  EXPECT_EQ(Find(LangLeaf(NodeKind::kNear, "", "out-of memory", 2)),
            (Names{"CUDA out of memory", "out of the cuda memory"}));
}

// A message prefix or word never reaches a field's terms, nor a field's
// query the message: in a two-column index by the column, in the one column
// of version 10 by the spelling of field terms (attrs_codec.h).
void QueryLanguageStoreTest::MessageAndFieldsStayApart(bool older) {
  if (older) AsAnOlderVersion();
  AddJson(Ev("loss spike", R"(,"log":{"level":"ERROR"},"gpu_id":3,"cuda_version":"12.1")"));
  AddJson(Ev("gpu fell off the bus", R"(,"log":{"level":"INFO"})"));
  AddJson(Ev("cudnn failure log"));
  {
    Db db;
    ASSERT_TRUE(db.Open(dir_.path() + "/data/2026-11-29.db", SQLITE_OPEN_READONLY).ok());
    ASSERT_TRUE(RegisterFtsTokenizer(db.get()).ok());
    auto one_column = FtsHasOneColumn(db);
    ASSERT_TRUE(one_column.ok()) << one_column.status().ToString();
    EXPECT_EQ(*one_column, !older);
  }
  const struct {
    Node q;
    Names want;
  } cases[] = {
      {LangTerm("", "lo", true), {"cudnn failure log", "loss spike"}},
      {LangTerm("", "gp", true), {"gpu fell off the bus"}},
      {LangTerm("", "cud", true), {"cudnn failure log"}},
      {LangTerm("", "log"), {"cudnn failure log"}},
      {LangTerm("", "error"), {}},
      {LangLeaf(NodeKind::kWildcard, "", "l?s*"), {"loss spike"}},
      {LangLeaf(NodeKind::kWildcard, "", "*u*"), {"cudnn failure log", "gpu fell off the bus"}},
      {LangTerm("log.level", "error"), {"loss spike"}},
      {LangTerm("log.level", "e", true), {"loss spike"}},
      {LangTerm("cuda_version", "12.1"), {"loss spike"}},
      {LangTerm("gpu_id", "3"), {"loss spike"}},
      {LangTerm("gpu_id", "loss"), {}},
      {Node::MakeExists("log", 0), {"gpu fell off the bus", "loss spike"}},
      {LangLeaf(NodeKind::kWildcard, "log.level", "in*"), {"gpu fell off the bus"}},
      {LangLeaf(NodeKind::kNear, "", "spike loss", 1), {"loss spike"}},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(Find(c.q), c.want) << query::DebugString(c.q);
    ExpectRowMatcherAnswer(c.q);
  }
}

TEST_F(QueryLanguageStoreTest, MessageAndFieldsStayApart) {
  MessageAndFieldsStayApart(/*older=*/false);
}

TEST_F(QueryLanguageStoreTest, MessageAndFieldsStayApartInAnOlderVersionsFile) {
  MessageAndFieldsStayApart(/*older=*/true);
}

TEST_F(QueryLanguageStoreTest, MetaFields) {
  AddJson(Ev("one"), "filebeat-8.17.0-2026.11.29");
  AddJson(Ev("two"), "app-logs", "my-doc-1");
  AddJson(Ev("three"), "");
  const std::string one_id = events_[0].second;
  EXPECT_EQ(Find(LangLeaf(NodeKind::kWildcard, "_index", "filebeat-*")), (Names{"one"}));
  // _index is a keyword field: its whole value, or a prefix.
  EXPECT_EQ(Find(LangTerm("_index", "app")), Names{});
  EXPECT_EQ(Find(LangTerm("_index", "app-logs")), (Names{"two"}));
  EXPECT_EQ(Find(LangTerm("_index", "filebeat-8.17.0-2026.11.29")), (Names{"one"}));
  EXPECT_EQ(Find(LangTerm("_index", "filebeat-8.17.0", /*prefix=*/true)), (Names{"one"}));
  EXPECT_EQ(Find(Node::MakeExists("_index", 0)), (Names{"one", "two"}));
  EXPECT_EQ(Find(LangLeaf(NodeKind::kRegex, "_index", "^app-")), (Names{"two"}));
  EXPECT_EQ(Find(LangTerm("_id", one_id)), (Names{"one"}));
  EXPECT_EQ(Find(LangTerm("_id", "my-doc-1")), (Names{"two"}));
  EXPECT_EQ(Find(LangTerm("_id", "my-doc")), Names{});
  EXPECT_EQ(Find(LangGroup(NodeKind::kNot, {LangTerm("_id", "my-doc-1")})),
            (Names{"one", "three"}));
}

// NOT _exists_ leaves out the events holding an index term of the field
// without reading them; those whose value gave no term (a string of no
// tokens) are read, and so are fields with no index terms at all.
TEST_F(QueryLanguageStoreTest, MissingFieldsAgreeWithReadingEveryEvent) {
  AddJson(Ev("number", R"(,"gpu_id":3,"gpu":{"id":1})"), "logs");
  AddJson(Ev("text", R"(,"gpu_id":"three","host":{"name":"gpu-node-01"})"), "logs");
  AddJson(Ev("no tokens", R"(,"gpu_id":"---","host":{"name":""})"), "");
  AddJson(Ev("empty", R"(,"gpu_id":"","train":{"loss":0.5})"), "logs");
  AddJson(Ev("array", R"(,"gpu_id":[1,"two"],"gpu.id":"x")"), "logs");
  AddJson(Ev("null", R"(,"gpu_id":null)"), "");
  AddJson(Ev("nothing"), "logs");
  for (const char* field :
       {"gpu_id", "gpu", "gpu.id", "host.name", "train.loss", "_index", "message", "absent"}) {
    const Node q = LangGroup(NodeKind::kNot, {Node::MakeExists(field, 0)});
    ExpectRowMatcherAnswer(q);
    // Also beside a term that drives the search.
    const Node both = LangGroup(NodeKind::kAnd, {LangTerm("", "tokens"), q});
    EXPECT_EQ(Find(both).size(), Expected(both).size()) << field;
  }
  EXPECT_EQ(Find(LangGroup(NodeKind::kNot, {Node::MakeExists("gpu_id", 0)})),
            (Names{"nothing", "null"}));
  EXPECT_EQ(Find(LangGroup(NodeKind::kNot, {Node::MakeExists("host.name", 0)})),
            (Names{"array", "empty", "nothing", "null", "number"}));
  // An indexed field is planned with its terms; the message and unindexed
  // fields by reading rows alone.
  const Node gpu = LangGroup(NodeKind::kNot, {Node::MakeExists("gpu_id", 0)});
  auto compiled = CompileFtsQuery(gpu);
  ASSERT_TRUE(compiled.ok());
  EXPECT_NE(compiled->where.find("fts MATCH"), std::string::npos) << compiled->where;
  // Beside a driving term, only the few rows FTS5 picks are read.
  const Node driven = LangGroup(NodeKind::kAnd, {LangTerm("", "tokens"), gpu});
  compiled = CompileFtsQuery(driven);
  ASSERT_TRUE(compiled.ok());
  EXPECT_TRUE(compiled->fts.has_value());
  EXPECT_EQ(compiled->where.find("fts MATCH"), std::string::npos) << compiled->where;
  const Node loss = LangGroup(NodeKind::kNot, {Node::MakeExists("train.loss", 0)});
  compiled = CompileFtsQuery(loss);
  ASSERT_TRUE(compiled.ok());
  EXPECT_EQ(compiled->where.find("fts MATCH"), std::string::npos) << compiled->where;
}

// Among many events without them, the fields are rare: _exists_ is then
// answered by the index (fts_query_compiler.h), and must still find the
// values that have no token, objects, arrays and nothing of the rest.
TEST_F(QueryLanguageStoreTest, ExistsOfRareFieldsAgreesWithReadingEveryEvent) {
  std::vector<Record> records;
  for (int i = 0; i < 300; ++i) records.push_back(RecordOf(Ev("filler"), "logs"));
  Add(std::move(records));
  AddJson(Ev("number", R"(,"gpu_id":3,"gpu":{"id":1})"), "logs");
  AddJson(Ev("text", R"(,"gpu_id":"three","host":{"name":"gpu-node-01"})"), "logs");
  AddJson(Ev("no tokens", R"(,"gpu_id":"---","host":{"name":""},"tag":"")"), "");
  AddJson(Ev("empty", R"(,"gpu_id":"","train":{"loss":0.5},"tags":["",""])"), "logs");
  AddJson(Ev("array", R"(,"gpu_id":[1,"two"],"gpu.id":"x","tags":["a","-"])"), "logs");
  AddJson(Ev("null", R"(,"gpu_id":null,"tag":null,"tags":[])"), "");
  AddJson(Ev("nested", R"(,"gpu":{"name":{"first":"--"}},"log":{"offset":7})"), "logs");
  for (const char* field :
       {"gpu_id", "gpu", "gpu.id", "gpu.name", "host", "host.name", "tag", "tags", "train",
        "train.loss", "log", "log.offset", "_index", "absent"}) {
    for (const Node& q :
         {Node::MakeExists(field, 0), LangGroup(NodeKind::kNot, {Node::MakeExists(field, 0)})}) {
      ExpectRowMatcherAnswer(q);
    }
  }
  EXPECT_EQ(Find(Node::MakeExists("gpu_id", 0)),
            (Names{"array", "empty", "no tokens", "number", "text"}));
  EXPECT_EQ(Find(Node::MakeExists("tag", 0)), (Names{"no tokens"}));
  EXPECT_EQ(Find(Node::MakeExists("gpu", 0)), (Names{"array", "nested", "number"}));
}

TEST_F(QueryLanguageStoreTest, HostileTextIsMatchedLiterally) {
  AddJson(Ev("it's \\\"quoted\\\" NEAR(a b) col:umn * ^x'); DROP TABLE events; --"));
  for (const char* text : {"'); DROP TABLE events; --", "NEAR(", "\"", "col:umn", "^x", "*"}) {
    SCOPED_TRACE(text);
    for (NodeKind kind :
         {NodeKind::kWildcard, NodeKind::kRegex, NodeKind::kFuzzy, NodeKind::kNear}) {
      const std::string pattern = kind == NodeKind::kRegex ? RE2::QuoteMeta(text) : text;
      auto page = Run(LangLeaf(kind, "", pattern, 1));
      EXPECT_TRUE(page.ok() || page.status().code() == StatusCode::kInvalidArgument)
          << page.status().ToString();
    }
    EXPECT_EQ(Find(LangLeaf(NodeKind::kRegex, "", RE2::QuoteMeta(text))).size(), 1u);
  }
  EXPECT_EQ(Find(Node::MatchAll()).size(), 1u);  // still there
}

// A partition written before the vocab table existed is backfilled when the
// writer opens it again, and read through fts5vocab until then.
// run.id is a keyword field (attrs_codec.h): whole values, case kept, in
// a new partition and in one written before keyword fields (whose older
// events index the value as text).
// `older`: in a file of an older version (two columns), which then loses
// its keyword list and gains an event indexed so.
void QueryLanguageStoreTest::KeywordFieldsMatchWholeValues(bool older) {
  if (older) AsAnOlderVersion();
  const std::string long_a = std::string(300, 'x') + "-a", long_b = std::string(300, 'x') + "-b";
  AddJson(Ev("one", R"(,"run":{"id":"r-42"})"));
  AddJson(Ev("two", R"(,"run":{"id":"r-42-b"})"));
  AddJson(Ev("three", R"(,"run":{"id":"R-42"})"));
  AddJson(Ev("four", R"(,"run":{"id":"gpu-node-07:/var/log/train.log"})"));
  AddJson(Ev("five", fmt::format(R"(,"run":{{"id":"{}"}})", long_a)));
  AddJson(Ev("six", fmt::format(R"(,"run":{{"id":"{}"}})", long_b)));
  AddJson(Ev("seven", R"(,"run":{"id":42})"));
  AddJson(Ev("eight", R"(,"run":{"id":["r-1","r-2"]})"));
  // Cut inside the 4-byte character at byte 253: its index term keeps 253 bytes.
  const std::string x253(253, 'x');
  AddJson(Ev("ten", fmt::format(R"(,"run":{{"id":"{}{}tail"}})", x253, "\xF0\x9F\x98\x80")));
  // Indexed alike (0x1F becomes a space), told apart by the row check.
  AddJson(Ev("eleven", R"(,"run":{"id":"job 7"})"));
  AddJson(Ev("twelve", R"(,"run":{"id":"job\u001f7"})"));
  struct Case {
    Node q;
    Names want;
    Names legacy_extra;  // the older event matches too (its run.id is "r-7")
  };
  const Case cases[] = {
      {LangTerm("run.id", "r-42"), {"one"}, {}},
      {LangTerm("run.id", "r-4", true), {"one", "two"}, {}},
      {LangTerm("run.id", "r-"), {}, {}},
      {LangTerm("run.id", "r-", true), {"eight", "one", "two"}, {"nine"}},
      {LangTerm("run.id", "r"), {}, {}},  // a word of a value is not the value
      {LangTerm("run.id", "42"), {"seven"}, {}},
      {LangTerm("run.id", "r-2"), {"eight"}, {}},
      {LangTerm("run.id", "r-7"), {}, {"nine"}},
      {LangTerm("run.id", "gpu-node-07:/var/log/train.log"), {"four"}, {}},
      {LangTerm("run.id", long_a), {"five"}, {}},
      {LangTerm("run.id", std::string(300, 'x'), true), {"five", "six"}, {}},
      {LangTerm("run.id", x253), {}, {}},
      {LangTerm("run.id", "job 7"), {"eleven"}, {}},
      {LangTerm("run.id",
                "job\x1f"
                "7"),
       {"twelve"},
       {}},
      {LangLeaf(NodeKind::kWildcard, "run.id", "job?7"), {"eleven", "twelve"}, {}},
      {LangLeaf(NodeKind::kRegex, "run.id", "^job\\x1f"), {"twelve"}, {}},
      {LangTerm("run.id", x253, true), {"five", "six", "ten"}, {}},
      {LangLeaf(NodeKind::kWildcard, "run.id", "r-4?"), {"one"}, {}},
      {LangLeaf(NodeKind::kWildcard, "run.id", "*42*"), {"one", "three", "two"}, {}},
      {LangLeaf(NodeKind::kWildcard, "run.id", "*-a"), {"five"}, {}},
      {LangLeaf(NodeKind::kWildcard, "run.id", "r-?"), {"eight"}, {"nine"}},
      {LangLeaf(NodeKind::kFuzzy, "run.id", "r-43", 1), {"one"}, {}},
      {LangLeaf(NodeKind::kFuzzy, "run.id", "r-8", 1), {"eight"}, {"nine"}},
      {LangLeaf(NodeKind::kRegex, "run.id", "^r-4[0-9]$"), {"one"}, {}},
      {LangLeaf(NodeKind::kRegex, "run.id", "train"), {"four"}, {}},
      {LangLeaf(NodeKind::kRegex, "run.id", "-b$"), {"six", "two"}, {}},
      {Node::MakeNot(LangTerm("run.id", "r-42"), 0),
       {"eight", "eleven", "five", "four", "seven", "six", "ten", "three", "twelve", "two"},
       {"nine"}},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(Find(c.q), c.want) << query::DebugString(c.q);
    auto page = Run(c.q);
    ASSERT_TRUE(page.ok());
    std::vector<std::string> ids;
    for (const StoredEvent& e : page->hits) ids.push_back(e.id);
    std::sort(ids.begin(), ids.end());
    EXPECT_EQ(ids, Expected(c.q)) << "RowMatcher disagrees: " << query::DebugString(c.q);
  }

  if (!older) return;
  // The same partition as an older version left it: no keyword list, and
  // one more event whose run.id is indexed as text.
  store_.reset();
  const std::string path = dir_.path() + "/data/2026-11-29.db";
  {
    Db db;
    ASSERT_TRUE(db.Open(path, SQLITE_OPEN_READWRITE).ok());
    ASSERT_TRUE(RegisterFtsTokenizer(db.get()).ok());
    const EventKey key = FirstKeyAt(kLangT0 - 1);
    auto ins = db.Prepare("INSERT INTO events(key, idx, source) VALUES(?1, 'logs', ?2)");
    ASSERT_TRUE(ins.ok());
    ins->Bind(1, static_cast<std::int64_t>(key));
    ins->Bind(2, Ev("nine", R"(,"run":{"id":"r-7"})"));
    ASSERT_EQ(ins->Step(), SQLITE_DONE);
    auto fts = db.Prepare("INSERT INTO fts(rowid, message, attrs) VALUES(?1, ?2, ?3)");
    ASSERT_TRUE(fts.ok());
    fts->Bind(1, static_cast<std::int64_t>(key));
    fts->Bind(2, std::string("\x01nine"));
    fts->Bind(3, std::string("\x02_index\x1fslogs\x1erun.id\x1fsr-7"));
    ASSERT_EQ(fts->Step(), SQLITE_DONE);
    ASSERT_TRUE(db.Exec(fmt::format("DELETE FROM meta WHERE key = '{}'", kKeywordFieldsMeta)).ok());
  }
  SetUp();
  for (const Case& c : cases) {
    Names want = c.want;
    want.insert(want.end(), c.legacy_extra.begin(), c.legacy_extra.end());
    std::sort(want.begin(), want.end());
    EXPECT_EQ(Find(c.q), want) << "older partition: " << query::DebugString(c.q);
  }
  // Its _index too is text there; a keyword query still finds it.
  const Names everyone = Find(Node::MakeExists("_index", 0));
  EXPECT_EQ(everyone.size(), 12u);
  EXPECT_EQ(Find(LangTerm("_index", "logs")), everyone);
  EXPECT_EQ(Find(LangTerm("_index", "lo", true)), everyone);
  EXPECT_EQ(Find(LangLeaf(NodeKind::kWildcard, "_index", "l*s")), everyone);
  EXPECT_EQ(Find(LangTerm("_index", "log")), Names{});
}

TEST_F(QueryLanguageStoreTest, KeywordFieldsMatchWholeValues) {
  KeywordFieldsMatchWholeValues(/*older=*/false);
}

TEST_F(QueryLanguageStoreTest, KeywordFieldsMatchWholeValuesInAnOlderVersionsFile) {
  KeywordFieldsMatchWholeValues(/*older=*/true);
}

// A fleet may run more runs in a day than a wildcard may expand to: on a
// keyword field that is candidates and the row check, not an error.
TEST_F(QueryLanguageStoreTest, KeywordPatternsPastTheExpansionLimitCheckRows) {
  std::vector<Record> records;
  for (int i = 0; i < 1100; ++i) {
    records.push_back(
        RecordOf(Ev(fmt::format("m{}", i), fmt::format(R"(,"run":{{"id":"r-{}"}})", i)), "logs"));
  }
  Add(std::move(records));
  for (const Node& q : {LangLeaf(NodeKind::kWildcard, "run.id", "r-*"),
                        LangLeaf(NodeKind::kWildcard, "run.id", "*0"),
                        LangLeaf(NodeKind::kRegex, "run.id", "^r-[0-9]+$")}) {
    ExpectRowMatcherAnswer(q);
  }
  EXPECT_EQ(Expected(LangLeaf(NodeKind::kWildcard, "run.id", "r-*")).size(), 1100u);
  EXPECT_EQ(Expected(LangLeaf(NodeKind::kWildcard, "run.id", "*0")).size(), 110u);
}

// What the compiler asks a partition to choose between its index and rows:
// a sample's answer about a leaf's share, and the events a range holds.
TEST_F(QueryLanguageStoreTest, APartitionTellsHowCommonALeafIsAndHowManyEventsARangeHolds) {
  std::vector<Record> records;
  for (int i = 0; i < 1000; ++i) {  // one a minute, every tenth with a gpu
    Record r = RecordOf(Ev("line", i % 10 == 0 ? R"(,"gpu":1)" : ""), "logs");
    r.ts_ms = kLangT0 + i * kMsPerMinute;
    records.push_back(std::move(r));
  }
  Add(std::move(records));
  auto reader = PartitionReader::Open(dir_.path() + "/data/2026-11-29.db", 1024);
  ASSERT_TRUE(reader.ok());
  EXPECT_TRUE((*reader)->field_terms_recorded());
  const Node gpu = Node::MakeExists("gpu", 0);
  for (const auto& [share, below] : {std::pair{0.5, true}, {0.2, true}, {0.05, false}}) {
    auto answer = SampleShareBelow(**reader, gpu, share);
    ASSERT_TRUE(answer.ok()) << answer.status().ToString();
    EXPECT_EQ(*answer, std::optional<bool>(below)) << share;
  }
  auto counts = CountEvents(**reader, kLangT0 + 100 * kMsPerMinute, kLangT0 + 300 * kMsPerMinute);
  ASSERT_TRUE(counts.ok()) << counts.status().ToString();
  ASSERT_TRUE(counts->has_value());
  EXPECT_EQ((*counts)->all, 1000u);
  EXPECT_EQ((*counts)->in_range, 200u);
}

// A file from before schema 13 gains number_ranges' `integers` column,
// knowing nothing of its older rows (0: candidates, read), and ranges
// answer the same.
TEST_F(QueryLanguageStoreTest, NumberRangesOfAnOlderVersionGainTheIntegersColumn) {
  for (int v = 70000; v < 70010; ++v) {
    AddJson(Ev(fmt::format("mem {}", v), fmt::format(R"(,"gpu_mem_mb":{})", v)));
  }
  const Node above = Range("gpu_mem_mb", "70006", "", false, true);
  EXPECT_EQ(Find(above), (Names{"mem 70007", "mem 70008", "mem 70009"}));
  store_.reset();
  const std::string path = dir_.path() + "/data/2026-11-29.db";
  {
    Db db;
    ASSERT_TRUE(db.Open(path, SQLITE_OPEN_READWRITE).ok());
    ASSERT_TRUE(
        db.Exec("ALTER TABLE number_ranges DROP COLUMN integers; PRAGMA user_version=12").ok());
  }
  SetUp();  // opening the store migrates the file
  AddJson(Ev("mem again", R"(,"gpu_mem_mb":70008,"step":120)"));
  auto reader = PartitionReader::Open(path, 1024);
  ASSERT_TRUE(reader.ok());
  auto stmt =
      (*reader)->Statement("SELECT group_concat(field || '=' || integers, ',') FROM number_ranges");
  ASSERT_TRUE(stmt.ok()) << stmt.status().ToString();
  ASSERT_EQ((*stmt)->Step(), SQLITE_ROW);
  EXPECT_EQ((*stmt)->Text(0), "gpu_mem_mb=0,step=1");
  (*stmt)->Reset();
  EXPECT_EQ(Find(above), (Names{"mem 70007", "mem 70008", "mem 70009", "mem again"}));
  EXPECT_EQ(Find(Range("step", "", "120", true, false)), Names{});
}

TEST_F(QueryLanguageStoreTest, OlderPartitionsGetAVocabulary) {
  AsAnOlderVersion();  // a version 1 file had two columns
  AddJson(Ev("alpha beta"));
  store_.reset();
  const std::string path = dir_.path() + "/data/2026-11-29.db";
  {
    Db db;
    ASSERT_TRUE(db.Open(path, SQLITE_OPEN_READWRITE).ok());
    ASSERT_TRUE(db.Exec("DROP TABLE vocab; PRAGMA user_version=1").ok());
  }
  {
    auto reader = PartitionReader::Open(path, 1024);
    ASSERT_TRUE(reader.ok());
    TermRange all{"", "", [](std::string_view) { return true; }};
    auto terms = ListTerms(**reader, all, 100);
    ASSERT_TRUE(terms.ok()) << terms.status().ToString();
    EXPECT_EQ(*terms, (std::vector<std::string>{"_index\x1f=logs", "alpha", "beta"}));
  }
  SetUp();
  AddJson(Ev("gamma"));  // the writer opens (and migrates) the partition
  auto reader = PartitionReader::Open(path, 1024);
  ASSERT_TRUE(reader.ok());
  auto stmt = (*reader)->Statement("SELECT group_concat(term, ',') FROM vocab");
  ASSERT_TRUE(stmt.ok()) << stmt.status().ToString();
  ASSERT_EQ((*stmt)->Step(), SQLITE_ROW);
  EXPECT_EQ((*stmt)->Text(0), "_index\x1f=logs,alpha,beta,gamma");
  (*stmt)->Reset();
  EXPECT_EQ(Find(LangLeaf(NodeKind::kWildcard, "", "?lpha")), (Names{"alpha beta"}));
}

// ---- Compiled SQL against RowMatcher on generated training logs ----

class RandomQueries {
 public:
  RandomQueries(const std::vector<std::pair<Record, std::string>>& events, std::uint32_t seed)
      : events_(events), rng_(seed) {
    for (const auto& [r, id] : events) {
      for (const std::string& t : TextTokenizer::TokenizeToVector(r.message)) tokens_.insert(t);
    }
  }

  Node Make(int depth = 0) {
    const int pick = Int(0, depth >= 2 ? 0 : 9);
    if (pick >= 7) {
      std::vector<Node> children;
      for (int i = Int(2, 3); i > 0; --i) children.push_back(Make(depth + 1));
      return LangGroup(pick == 7 ? NodeKind::kOr : NodeKind::kAnd, std::move(children));
    }
    if (pick == 6) return Node::MakeNot(Make(depth + 1), 0);
    return MakeLeaf();
  }

 private:
  int Int(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  const Record& AnyEvent() { return events_[Int(0, static_cast<int>(events_.size()) - 1)].first; }
  std::string AnyToken() {
    auto it = tokens_.begin();
    std::advance(it, Int(0, static_cast<int>(tokens_.size()) - 1));
    return *it;
  }
  std::string FieldText(const Record& r, const std::string& name) {
    for (const Field& f : r.fields) {
      if (f.name == name) return f.text;
    }
    return "none";
  }
  std::string Mutate(std::string token, char wildcard) {
    if (token.empty()) return token;
    const std::size_t at = static_cast<std::size_t>(Int(0, static_cast<int>(token.size()) - 1));
    if ((static_cast<unsigned char>(token[at]) & 0x80) == 0) token[at] = wildcard;
    return token;
  }

  Node MakeLeaf() {
    const Record& r = AnyEvent();
    const auto words = TextTokenizer::TokenizeToVector(r.message);
    const std::string word = words.empty() ? AnyToken() : words[Int(0, words.size() - 1)];
    static const char* kFields[] = {"user", "host.name", "log.level", "run_id", "log.file.path"};
    const std::string field = kFields[Int(0, 4)];
    switch (Int(0, 13)) {
      case 0:
        return LangTerm("", word);
      case 1: {
        const std::size_t at = words.size() > 2 ? Int(0, words.size() - 3) : 0;
        std::string phrase;
        for (std::size_t i = at; i < std::min(words.size(), at + 3); ++i) phrase += words[i] + " ";
        return Node::MakeTerm(query::Term{"", phrase, true, false}, 0);
      }
      case 2:
        return LangTerm("", word.substr(0, std::max<std::size_t>(1, word.size() / 2)), true);
      case 3:
        return LangTerm(field, FieldText(r, field));
      case 4:
        return LangLeaf(NodeKind::kWildcard, "",
                        Int(0, 1) ? "*" + word.substr(word.size() / 2) : Mutate(word, '?'));
      case 5: {
        std::string value = FieldText(r, field);
        value = value.substr(0, value.size() / 2) + "*";
        return LangLeaf(NodeKind::kWildcard, field, Int(0, 1) ? value : Mutate(value, '?'));
      }
      case 6: {
        const std::string& m = r.message;
        const std::size_t at = m.empty() ? 0 : Int(0, static_cast<int>(m.size()) - 1);
        std::string re = RE2::QuoteMeta(m.substr(at, Int(2, 14)));
        if (Int(0, 2) == 0) re = "^" + RE2::QuoteMeta(m.substr(0, Int(1, 6))) + ".*" + re;
        if (Int(0, 2) == 0) re = "(" + re + "|" + RE2::QuoteMeta(AnyToken()) + ")";
        if (Int(0, 3) == 0) re = "(?i)" + re;
        return LangLeaf(NodeKind::kRegex, Int(0, 4) ? "" : "message", re);
      }
      case 7: {
        std::string w = word;
        if (w.size() > 2) std::swap(w[0], w[1]);
        if (Int(0, 3) == 0) {
          const auto value = TextTokenizer::TokenizeToVector(FieldText(r, field));
          return LangLeaf(NodeKind::kFuzzy, field, value.empty() ? "x" : value.back(), Int(0, 2));
        }
        return LangLeaf(NodeKind::kFuzzy, "", w, Int(0, 2));
      }
      case 8: {
        const std::string other = words.empty() ? word : words[Int(0, words.size() - 1)];
        return LangLeaf(NodeKind::kNear, "", word + " " + other, Int(0, 4));
      }
      case 9: {
        static const char* kNumeric[] = {"gpu_mem_mb", "loss", "step", "gpu_id"};
        const std::string f = kNumeric[Int(0, 3)];
        const std::string v = FieldText(r, f) == "none" ? "1" : FieldText(r, f);
        return Int(0, 1) ? Range(f, v, "", Int(0, 1) == 0, true) : Range(f, "", v, true, Int(0, 1));
      }
      case 10:
        return Range("log.level", "E", "J", true, false);
      case 11: {
        static const char* kMaybe[] = {"gpu_id", "step", "host", "loss", "nope", "message"};
        return Node::MakeExists(kMaybe[Int(0, 5)], 0);
      }
      case 12:
        return Int(0, 1) ? LangTerm("_id", events_[Int(0, events_.size() - 1)].second)
                         : LangLeaf(NodeKind::kWildcard, "_index", "app*");
      default:
        return Range("@timestamp", std::to_string(r.ts_ms),
                     std::to_string(r.ts_ms + Int(0, 60'000)), true, Int(0, 1));
    }
  }

  const std::vector<std::pair<Record, std::string>>& events_;
  std::mt19937 rng_;
  std::set<std::string> tokens_;
};

TEST_F(QueryLanguageStoreTest, CompiledQueriesAgreeWithTheRowMatcher) {
  dashcam::testing::GeneratorOptions options;
  options.seed = 7;
  options.expected_events = 2000;
  options.span_ms = 2 * kMsPerDay;  // two partitions
  dashcam::testing::TrainingLogGenerator gen(options);
  std::vector<Record> records;
  for (int i = 0; i < 2000; ++i) {
    const auto ev = gen.Next();
    records.push_back(RecordOf(ev.json, i % 3 == 0 ? "app-logs" : "filebeat-x",
                               i % 7 == 0 ? fmt::format("doc-{}", i) : ""));
  }
  Add(std::move(records));
  RandomQueries queries(events_, 20261129);
  int compared = 0, refused = 0;
  for (int i = 0; i < 300; ++i) {
    const Node q = queries.Make();
    auto page = Run(q);
    if (!page.ok()) {
      ASSERT_EQ(page.status().code(), StatusCode::kInvalidArgument)
          << query::DebugString(q) << ": " << page.status().ToString();
      EXPECT_NE(page.status().message().find("matches more than"), std::string::npos)
          << page.status().message();
      ++refused;
      continue;
    }
    std::vector<std::string> got;
    for (const StoredEvent& e : page->hits) got.push_back(e.id);
    std::sort(got.begin(), got.end());
    ASSERT_EQ(got, Expected(q)) << "query " << i << ": " << query::DebugString(q);
    ++compared;
  }
  EXPECT_GE(compared, 270) << "refused: " << refused;
}

// ---- Days whose index rowids are docnos (rowid_layout.h) ----

class NumberedDaysTest : public QueryLanguageStoreTest {
 protected:
  std::vector<std::string> DayFiles() {
    std::vector<std::string> out;
    for (const auto& f : std::filesystem::directory_iterator(dir_.path() + "/data")) {
      if (f.path().extension() == ".db") out.push_back(f.path().string());
    }
    std::sort(out.begin(), out.end());
    return out;
  }
  // Re-indexes every day as the compactor does with `steps`, numbering its
  // events.
  void NumberEveryDay(const CompactionSteps& steps = {}) {
    for (const std::string& path : DayFiles()) {
      Db db;
      ASSERT_TRUE(OpenForCompaction(path, db).ok()) << path;
      auto r = ReindexPartition(db, steps, [](auto) { return true; });
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      EXPECT_TRUE(r->swapped && r->numbered) << path;
    }
  }
  static CompactionSteps DroppingPositions() {
    CompactionSteps steps;
    steps.drop_positions = true;
    return steps;
  }
  // Whether each day's file is due a re-index (keeping positions), and holds
  // table `table`.
  std::vector<std::pair<bool, bool>> DueAndHolding(const std::string& table) {
    std::vector<std::pair<bool, bool>> out;
    for (const std::string& path : DayFiles()) {
      Db db;
      EXPECT_TRUE(OpenForCompaction(path, db).ok()) << path;
      auto due = NeedsReindex(db);
      EXPECT_TRUE(due.ok()) << due.status().ToString();
      auto stmt = db.Prepare("SELECT count(*) FROM sqlite_master WHERE name = ?1");
      EXPECT_TRUE(stmt.ok());
      if (!due.ok() || !stmt.ok()) return out;
      stmt->Bind(1, table);
      EXPECT_EQ(stmt->Step(), SQLITE_ROW);
      out.emplace_back(*due, stmt->Int(0) == 1);
    }
    return out;
  }
  // meta "rowids" of every day.
  std::vector<RowidLayout> Layouts() {
    std::vector<RowidLayout> out;
    for (const std::string& path : DayFiles()) {
      auto reader = PartitionReader::Open(path, 1024);
      EXPECT_TRUE(reader.ok());
      if (reader.ok()) out.push_back((*reader)->rowids());
    }
    return out;
  }
  // `n` generated events over the two days, every fifth with an id.
  std::vector<Record> Generated(std::uint64_t seed, int n, int id_base) {
    dashcam::testing::GeneratorOptions options;
    options.seed = seed;
    options.expected_events = static_cast<std::size_t>(n);
    options.span_ms = 2 * kMsPerDay;
    dashcam::testing::TrainingLogGenerator gen(options);
    std::vector<Record> records;
    for (int i = 0; i < n; ++i) {
      records.push_back(RecordOf(gen.Next().json, i % 3 == 0 ? "app-logs" : "filebeat-x",
                                 i % 5 == 0 ? fmt::format("doc-{}", id_base + i) : ""));
    }
    return records;
  }
  // Sends event `doc-<i>` again with another body, a little later the same
  // day: the old one is replaced.
  void Replace(int i) {
    const std::string id = fmt::format("doc-{}", i);
    auto old =
        std::find_if(events_.begin(), events_.end(), [&](const auto& e) { return e.second == id; });
    ASSERT_NE(old, events_.end()) << id;
    const TimeMs ts = old->first.ts_ms / kMsPerDay * kMsPerDay + 1000 * i;
    events_.erase(old);
    views_.clear();
    Record r = RecordOf(
        fmt::format(R"({{"@timestamp":{},"message":"replaced {} cuda epoch","gpu_id":3}})", ts, i),
        "app-logs", id);
    r.op = WriteOp::kIndex;
    Add({std::move(r)});
  }

  // `q`'s hits, and the total counted, are RowMatcher's; false when the
  // store refuses it (as InvalidArgument).
  bool AnswersAsTheRowMatcher(const Node& q, const std::string& what) {
    SearchRequest req;
    req.query = &q;
    req.limit = 10'000;
    req.count_limit = 100'000;
    auto page = store_->Search(req);
    if (!page.ok()) {
      EXPECT_EQ(page.status().code(), StatusCode::kInvalidArgument) << page.status().ToString();
      return false;
    }
    std::vector<std::string> got;
    for (const StoredEvent& e : page->hits) got.push_back(e.id);
    std::sort(got.begin(), got.end());
    const std::vector<std::string> want = Expected(q);
    std::vector<std::string> missing, extra;
    std::set_difference(want.begin(), want.end(), got.begin(), got.end(),
                        std::back_inserter(missing));
    std::set_difference(got.begin(), got.end(), want.begin(), want.end(),
                        std::back_inserter(extra));
    EXPECT_EQ(got, want) << what << ": " << query::DebugString(q) << ": " << missing.size()
                         << " missing, the first " << (missing.empty() ? "-" : missing[0]) << "; "
                         << extra.size() << " extra, the first "
                         << (extra.empty() ? "-" : extra[0]);
    EXPECT_EQ(page->total, want.size()) << query::DebugString(q);
    return true;
  }

  // Phrases of every kind (message, proximity, text and number fields),
  // which a day without positions checks on the rows, from some events.
  std::vector<Node> PhrasesOfEvents() {
    std::vector<Node> out;
    for (std::size_t k = 0; k < events_.size(); k += events_.size() / 7 + 1) {
      const Record& r = events_[k].first;
      for (const Field& f : r.fields) {
        if (f.name == "loss" || f.name == "gpu_mem_mb" || f.name == "run_id") {
          out.push_back(LangTerm(f.name, f.text));
        }
      }
      const auto words = TextTokenizer::TokenizeToVector(r.message);
      if (words.size() < 3) continue;
      out.push_back(Node::MakeTerm(
          query::Term{"", words[0] + " " + words[1] + " " + words[2], true, false}, 0));
      out.push_back(LangLeaf(NodeKind::kNear, "", words[0] + " " + words[2], 1));
    }
    return out;
  }

  // Random queries and PhrasesOfEvents: the hits, and the total counted,
  // are RowMatcher's; and date histograms count what it finds.
  void ExpectAnswersOfTheRowMatcher(std::uint32_t seed, int queries) {
    RandomQueries random(events_, seed);
    int compared = 0;
    for (int i = 0; i < queries; ++i) {
      const Node q = random.Make();
      if (AnswersAsTheRowMatcher(q, fmt::format("query {}", i))) ++compared;
      if (::testing::Test::HasFatalFailure()) return;
    }
    for (const Node& q : PhrasesOfEvents()) {
      EXPECT_TRUE(AnswersAsTheRowMatcher(q, "phrase")) << query::DebugString(q);
    }
    EXPECT_GE(compared, queries * 9 / 10);
    const Node histogram_queries[] = {
        LangTerm("", "epoch"),
        LangGroup(NodeKind::kAnd, {LangTerm("", "loss"), Range("gpu_id", "2", "5")}),
        LangGroup(NodeKind::kNot, {LangTerm("", "epoch")}),
        Node::MakeTerm(query::Term{"", "out of memory", true, false}, 0),
    };
    for (const Node& q : histogram_queries) {
      ExpectHistogramsOfTheRowMatcher(
          q, dashcam::testing::kDefaultGeneratorStartMs - 1'800'000,
          dashcam::testing::kDefaultGeneratorStartMs + 2 * kMsPerDay + 1'234'567);
    }
  }
};

// Numbered without positions first (phrases are then checked on the rows),
// then with them.
TEST_F(NumberedDaysTest, NumberedAndLateDaysAnswerWhatTheRowMatcherFinds) {
  Add(Generated(11, 2000, 0));
  NumberEveryDay(DroppingPositions());
  for (const RowidLayout& l : Layouts()) {
    EXPECT_TRUE(l.clean() && l.blocks && !l.positions) << l.meta;
  }
  ExpectAnswersOfTheRowMatcher(101, 150);

  // Late events, and documents sent again: each day is marked late, and
  // read in the form that takes both kinds of rowid.
  Add(Generated(12, 300, 5000));
  for (int i = 0; i < 2000; i += 100) Replace(i);
  for (const RowidLayout& l : Layouts()) EXPECT_TRUE(l.dense() && l.late) << l.meta;
  ExpectAnswersOfTheRowMatcher(102, 150);

  // Numbered again, keeping positions: clean, a later numbering.
  const auto due = std::vector<std::pair<bool, bool>>(2, {true, true});
  EXPECT_EQ(DueAndHolding(kDocnoKeysTable), due);
  NumberEveryDay();
  for (const RowidLayout& l : Layouts()) {
    EXPECT_TRUE(l.clean() && l.positions) << l.meta;
    EXPECT_EQ(l.generation, 2) << l.meta;
  }
  ExpectAnswersOfTheRowMatcher(103, 150);
}

// A day numbered by a dashcam before version 11 keeps its keys in table
// `docnos`, a row each: it is read so, late as well, until compaction
// numbers it again into blocks.
TEST_F(NumberedDaysTest, DaysNumberedByAnOlderVersionAreReadAndNumberedAgainInBlocks) {
  Add(Generated(14, 2000, 0));
  CompactionSteps older;
  older.test_docnos_table = true;
  NumberEveryDay(older);
  const auto two_days = std::vector<std::pair<bool, bool>>(2, {true, true});
  for (const RowidLayout& l : Layouts()) {
    EXPECT_TRUE(l.clean() && !l.blocks && l.positions) << l.meta;
  }
  EXPECT_EQ(DueAndHolding("docnos"), two_days);
  ExpectAnswersOfTheRowMatcher(104, 100);

  Add(Generated(15, 300, 5000));
  for (int i = 0; i < 2000; i += 100) Replace(i);
  for (const RowidLayout& l : Layouts()) EXPECT_TRUE(l.late && !l.blocks) << l.meta;
  ExpectAnswersOfTheRowMatcher(105, 100);

  // A statement prepared for the old table, run after the numbering drops
  // it, fails as a change of rowids (the store then compiles anew).
  auto reader = PartitionReader::Open(DayFiles().front(), 1024);
  ASSERT_TRUE(reader.ok());
  const std::string old_key = fmt::format("{} AND {}", KeyOfDocnoSql((*reader)->rowids()),
                                          RowidsGuardSql((*reader)->rowids()));
  auto key_of = [&]() -> Status {
    auto stmt = (*reader)->Statement(old_key);
    if (!stmt.ok()) return stmt.status();
    (*stmt)->Bind(1, 1);
    const int rc = (*stmt)->Step();
    (*stmt)->Reset();
    return rc == SQLITE_ROW ? Status::Ok() : SqliteStatus(rc, (*reader)->db(), "old key");
  };
  EXPECT_TRUE(key_of().ok());

  NumberEveryDay();
  const Status old_table = key_of();
  EXPECT_TRUE(IsRowidsChanged(old_table)) << old_table.ToString();
  for (const RowidLayout& l : Layouts()) {
    EXPECT_TRUE(l.clean() && l.blocks && l.positions) << l.meta;
    EXPECT_EQ(l.generation, 2) << l.meta;
  }
  const auto not_due = std::vector<std::pair<bool, bool>>(2, {false, false});
  EXPECT_EQ(DueAndHolding("docnos"), not_due);
  const auto holding = std::vector<std::pair<bool, bool>>(2, {false, true});
  EXPECT_EQ(DueAndHolding(kDocnoKeysTable), holding);
  ExpectAnswersOfTheRowMatcher(106, 100);
}

TEST_F(NumberedDaysTest, AStatementCompiledForOtherRowidsFailsAndIsNamed) {
  Add(Generated(13, 200, 0));
  const std::string path = DayFiles().front();
  auto reader = PartitionReader::Open(path, 1024);
  ASSERT_TRUE(reader.ok());
  const RowidLayout keys = (*reader)->rowids();
  EXPECT_FALSE(keys.dense());
  const std::string checks_keys = fmt::format("SELECT 1 WHERE {}", RowidsGuardSql(keys));
  auto run = [&](const std::string& sql) -> Status {
    auto stmt = (*reader)->Statement(sql);
    if (!stmt.ok()) return stmt.status();
    const int rc = (*stmt)->Step();
    (*stmt)->Reset();
    return SqliteStatus(rc, (*reader)->db(), "guarded");
  };
  EXPECT_TRUE(run(checks_keys).ok());
  // A phrase, which the numbered day's index (no positions) cannot take:
  // FTS5 refuses it before the guard runs, as a change of rowids.
  const std::string phrase =
      fmt::format("SELECT count(*) FROM fts WHERE fts MATCH '{}' AND {}",
                  QuoteFtsString(EncodeMessagePhrase("out of memory")), RowidsGuardSql(keys));
  EXPECT_TRUE(run(phrase).ok());

  NumberEveryDay(DroppingPositions());
  const Status after = run(checks_keys);  // prepared before the numbering
  EXPECT_TRUE(IsRowidsChanged(after)) << after.ToString();
  const Status phrase_after = run(phrase);
  EXPECT_TRUE(IsRowidsChanged(phrase_after)) << phrase_after.ToString();
  ASSERT_TRUE((*reader)->ReadRowids().ok());
  const RowidLayout numbered = (*reader)->rowids();
  ASSERT_TRUE(numbered.clean()) << numbered.meta;
  const std::string checks_numbered = fmt::format("SELECT 1 WHERE {}", RowidsGuardSql(numbered));
  EXPECT_TRUE(run(checks_numbered).ok());

  // A late event marks the day late in its own transaction.
  Add({RecordOf(R"({"@timestamp":"2026-11-29T01:00:00Z","message":"late"})", "logs")});
  EXPECT_TRUE(IsRowidsChanged(run(checks_numbered)));
  ASSERT_TRUE((*reader)->ReadRowids().ok());
  EXPECT_TRUE((*reader)->rowids().late) << (*reader)->rowids().meta;
  EXPECT_EQ((*reader)->rowids().docnos, numbered.docnos);
}

}  // namespace
}  // namespace dashcam::storage
