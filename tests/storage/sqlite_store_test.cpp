// Tests for storage/sqlite_store.h against real SQLite partitions in a
// temporary data directory: what Append stores and what Search, Get and
// Partitions give back.
#include "storage/sqlite_store.h"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <filesystem>
#include <future>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "storage/document_reader.h"
#include "storage/log.h"
#include "storage/partition.h"
#include "storage/sqlite_db.h"
#include "storage/time_format.h"
#include "tests/common/test_server.h"
#include "tests/common/wait_for.h"

namespace dashcam::storage {
namespace {

using query::Node;
using query::NodeKind;
using Names = std::vector<std::string>;
namespace json = boost::json;

constexpr std::int64_t kDay = 20786;  // 2026-11-29
constexpr TimeMs kT0 = kDay * kMsPerDay + 10 * 3'600'000;

class SqliteStoreTest : public ::testing::Test {
 protected:
  // Query, field and event builders. An event's `source` is its name, so
  // hits are easy to compare.
  static Node Term(std::string f, std::string text, bool phrase = false, bool prefix = false) {
    return Node::MakeTerm(query::Term{std::move(f), std::move(text), phrase, prefix}, 0);
  }
  static Node Msg(std::string text) { return Term("", std::move(text)); }
  static Node Phrase(std::string text) { return Term("", std::move(text), true); }
  static Node Not(Node c) { return Node::MakeNot(std::move(c), 0); }
  static Node And(std::vector<Node> c) { return Node{NodeKind::kAnd, 0, std::move(c), {}}; }
  static Node Or(std::vector<Node> c) { return Node{NodeKind::kOr, 0, std::move(c), {}}; }
  static Field S(std::string name, std::string text) {
    return Field{std::move(name), Field::Type::kString, std::move(text), 0};
  }
  static Field N(std::string name, std::string canonical, double v) {
    return Field{std::move(name), Field::Type::kNumber, std::move(canonical), v};
  }
  static Record Ev(std::string name, TimeMs ts, std::string msg, std::vector<Field> fields = {}) {
    Record r;
    r.ts_ms = ts;
    r.level = "INFO";
    r.message = std::move(msg);
    r.index = "logs";
    r.fields = std::move(fields);
    r.source = std::move(name);
    return r;
  }

  void SetUp() override { Open(); }

  void Open(WriterOptions writer = {}, RetentionPolicy retention = {}) {
    store_.reset();
    SqliteStoreOptions opts;
    opts.data_dir = DataDir();
    opts.writer = writer;
    opts.retention = retention;
    opts.writer.partition.sync = SyncMode::kNormal;
    // Every search here may count days on helper threads too.
    opts.search_helpers = 2;
    opts.metrics = &metrics_;
    auto s = SqliteStore::Open(std::move(opts), log_);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(*s);
  }
  std::string DataDir() const { return dir_.path() + "/data"; }

  AppendResult Append(std::vector<Record> records) {
    std::promise<AppendResult> done;
    auto result = done.get_future();
    store_->Append(std::move(records), [&](AppendResult r) { done.set_value(std::move(r)); });
    return result.get();
  }
  void MustAppend(std::vector<Record> records) {
    AppendResult r = Append(std::move(records));
    ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  }

  Result<SearchPage> Run(const Node& q, TimeMs from = kMinEventTime, TimeMs to = kMaxEventTime,
                         std::size_t limit = 1000) {
    SearchRequest req;
    req.query = &q;
    req.from = from;
    req.to = to;
    req.limit = limit;
    return store_->Search(req);
  }
  // The hits' names, newest first.
  Names Find(const Node& q, TimeMs from = kMinEventTime, TimeMs to = kMaxEventTime) {
    auto page = Run(q, from, to);
    EXPECT_TRUE(page.ok()) << query::DebugString(q) << ": " << page.status().ToString();
    Names out;
    if (page.ok()) {
      for (const StoredEvent& e : page->hits) out.push_back(e.source);
    }
    return out;
  }

  dashcam::testing::TempDir dir_;
  Log log_ = Log::Null();
  Metrics metrics_;  // declared before store_: outlives it
  std::unique_ptr<SqliteStore> store_;
};

TEST_F(SqliteStoreTest, MessageTermsAndPhrases) {
  MustAppend({Ev("a", kT0 + 1, "CUDA out of memory on cuda:0"),
              Ev("b", kT0 + 2, "cudas are plural"), Ev("c", kT0 + 3, "Out Of Memory"),
              Ev("d", kT0 + 4, "memory out of order")});
  EXPECT_EQ(Find(Msg("cuda")), (Names{"a"}));
  EXPECT_EQ(Find(Msg("CUDA")), (Names{"a"}));
  EXPECT_EQ(Find(Msg("cudas")), (Names{"b"}));
  EXPECT_EQ(Find(Msg("cuda:0")), (Names{"a"}));
  EXPECT_EQ(Find(Phrase("out of memory")), (Names{"c", "a"}));
  EXPECT_EQ(Find(Phrase("MEMORY OUT")), (Names{"d"}));
  EXPECT_EQ(Find(Phrase("memory of")), Names{});
  EXPECT_EQ(Find(Term("message", "plural")), (Names{"b"}));
  EXPECT_EQ(Find(Term("", "cud", false, true)), (Names{"b", "a"}));
  EXPECT_EQ(Find(Term("", "out of mem", true, true)), (Names{"c", "a"}));
  EXPECT_EQ(Find(Node::MatchAll()), (Names{"d", "c", "b", "a"}));
  // Tokens are cut to kMaxTokenBytes on both sides, so a longer query matches.
  MustAppend({Ev("long", kT0 + 5, std::string(200, 'z'))});
  EXPECT_EQ(Find(Msg(std::string(128, 'z') + "tail")), (Names{"long"}));
}

TEST_F(SqliteStoreTest, FieldTermsAndNumbers) {
  MustAppend({Ev("n0", kT0 + 1, "x", {S("hostname", "gpu-01.example"), N("gpu_id", "0", 0)}),
              Ev("n00", kT0 + 2, "x", {S("hostname", "gpu-02"), N("gpu_id", "0", 0.0)}),
              Ev("s0", kT0 + 3, "x", {S("gpu_id", "0"), N("loss", "0.5", 0.5)}),
              Ev("n1", kT0 + 4, "x", {N("gpu_id", "1", 1), S("host", "gpu")})});
  EXPECT_EQ(Find(Term("hostname", "gpu-01")), (Names{"n0"}));
  EXPECT_EQ(Find(Term("hostname", "GPU")), (Names{"n00", "n0"}));
  EXPECT_EQ(Find(Term("host", "gpu")), (Names{"n1"}));  // not hostname's values
  EXPECT_EQ(Find(Term("hostname", "gpu", false, true)), (Names{"n00", "n0"}));
  EXPECT_EQ(Find(Term("host.na", "gpu", false, true)), Names{});  // the name is whole
  EXPECT_EQ(Find(Term("gpu_id", "0")), (Names{"s0", "n00", "n0"}));
  const Names zero = Find(Term("gpu_id", "0.0"));
  for (const char* want : {"n00", "n0"}) {
    EXPECT_NE(std::find(zero.begin(), zero.end(), want), zero.end()) << want;
  }
  EXPECT_EQ(Find(Term("gpu_id", "1")), (Names{"n1"}));
  EXPECT_EQ(Find(Term("loss", "0.50")), (Names{"s0"}));
  EXPECT_EQ(Find(Term("_index", "logs")).size(), 4u);
  // Field values are not message text, and the message is not a field.
  EXPECT_EQ(Find(Msg("gpu")), Names{});
  EXPECT_EQ(Find(Term("message", "example")), Names{});
}

// Regression: numbers were indexed in the same token form as words of text
// values, so `delta:-1` (text "-1" -> token 1) found the number 1.
TEST_F(SqliteStoreTest, NumberTokensDoNotMeetTextTokens) {
  MustAppend({Ev("num1", kT0 + 1, "x", {N("delta", "1", 1)}),
              Ev("numneg1", kT0 + 2, "x", {N("delta", "-1", -1)}),
              Ev("text_v1", kT0 + 3, "x", {S("delta", "v 1")})});
  EXPECT_EQ(Find(Term("delta", "-1")), (Names{"text_v1", "numneg1"}));
  EXPECT_EQ(Find(Term("delta", "-1.0")), (Names{"numneg1"}));
  EXPECT_EQ(Find(Term("delta", "1")), (Names{"text_v1", "num1"}));
  EXPECT_EQ(Find(Term("delta", "1.0")), (Names{"num1"}));
}

// Regression: a limit of 0 (counts, size=0 aggregations) read hits.back()
// of an emptied vector.
TEST_F(SqliteStoreTest, LimitZeroOnlyCounts) {
  MustAppend({Ev("a", kT0 + 1, "x"), Ev("b", kT0 + 2, "x")});
  auto page = Run(Msg("x"), kMinEventTime, kMaxEventTime, 0);
  ASSERT_TRUE(page.ok());
  EXPECT_TRUE(page->hits.empty());
  EXPECT_FALSE(page->next.has_value());
  EXPECT_EQ(page->total, 2u);
}

// Existence and ranges on fields are evaluated against the stored document
// (dc_match), so the sources here are real JSON.
TEST_F(SqliteStoreTest, ExistsAndRangesOnFields) {
  // The event's name is its first key, so hits can be told apart.
  auto ev = [](std::string name, TimeMs ts, std::string json, std::vector<Field> fields) {
    Record r = Ev(name, ts, "x", std::move(fields));
    r.source = "{\"" + name + "\":1," + json.substr(1);
    return r;
  };
  MustAppend({ev("a", kT0 + 1, R"({"message":"x","gpu_mem_mb":70001,"host":{"name":"n1"}})",
                 {N("gpu_mem_mb", "70001", 70001), S("host.name", "n1")}),
              ev("b", kT0 + 2, R"({"message":"x","gpu_mem_mb":512,"loss":"0.5"})",
                 {N("gpu_mem_mb", "512", 512), S("loss", "0.5")}),
              ev("c", kT0 + 3, R"({"message":"x","user":"alice","gpu_mem_mb":null})",
                 {S("user", "alice")})});
  auto names = [&](const Node& q) {
    Names out;
    for (const std::string& source : Find(q))
      out.push_back(source.substr(2, source.find('"', 2) - 2));
    std::sort(out.begin(), out.end());
    return out;
  };
  auto range = [](std::string f, std::string lo, std::string hi, bool inc_lo = true,
                  bool inc_hi = true) {
    return Node::MakeRange(query::Range{std::move(f), std::move(lo), std::move(hi), inc_lo, inc_hi},
                           0);
  };
  EXPECT_EQ(names(Node::MakeExists("gpu_mem_mb", 0)), (Names{"a", "b"}));  // null is missing
  EXPECT_EQ(names(Node::MakeExists("host", 0)), (Names{"a"}));             // an object
  EXPECT_EQ(names(Not(Node::MakeExists("gpu_mem_mb", 0))), (Names{"c"}));
  EXPECT_EQ(names(range("gpu_mem_mb", "10000", "")), (Names{"a"}));
  EXPECT_EQ(names(range("gpu_mem_mb", "", "512", true, false)), Names{});
  EXPECT_EQ(names(range("gpu_mem_mb", "", "512")), (Names{"b"}));
  EXPECT_EQ(names(range("loss", "0.1", "1")), (Names{"b"}));  // a numeric string
  EXPECT_EQ(names(range("user", "a", "b")), (Names{"c"}));    // strings by byte order
  EXPECT_EQ(names(And({Msg("x"), range("gpu_mem_mb", "600", "")})), (Names{"a"}));
  EXPECT_EQ(names(Or({Term("user", "alice"), range("gpu_mem_mb", "600", "")})), (Names{"a", "c"}));
}

// Numeric ranges over numbers of every shape give the events that reading
// each one finds: plain numbers through the partition's number_ranges
// (number_ranges.h), the rest (exponents, numeric strings, past 2^53) by
// reading every event. Then the same file without the table's guarantee
// (an older file) answers alike, and with the table emptied behind its back
// answers nothing on the plain field: proof that the table is what plans it.
TEST_F(SqliteStoreTest, NumericRangesAgreeWithReadingEveryEvent) {
  const std::vector<std::string> mixed = {
      "0",       "5",     "-5",      "12.5",      "-0.25", "1e-05", "1e+20",   "9007199254740993",
      "\"137\"", "\"x\"", "[1,250]", "[\"2\",3]", "77998", "78000", "\"inf\"", "true"};
  const std::vector<std::string> plain = {"0",    "7",     "-7",   "70",    "-70.5",   "699",
                                          "7000", "0.125", "-0.5", "78000", "[5,-12]", "77999.5"};
  DocumentReader reader;
  std::vector<Record> records;
  std::vector<std::vector<Field>> fields;  // as read back from each document
  for (int i = 0; i < 300; ++i) {
    std::string json = fmt::format(R"({{"i":{},"v":{},"w":{}}})", i, mixed[i % mixed.size()],
                                   plain[(i / 3) % plain.size()]);
    DocumentView view;
    ASSERT_TRUE(reader.ReadUnpadded(json, view).ok()) << json;
    Record r = Ev(std::to_string(i), kT0 + i, "x", view.fields);
    r.source = std::move(json);
    fields.push_back(view.fields);
    records.push_back(std::move(r));
  }
  MustAppend(std::move(records));
  // What reading each event finds (query_ast.h's kRange).
  auto expected = [&](const query::Range& r) {
    auto number = [](std::string_view s) -> std::optional<double> {
      double d = 0;
      auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), d);
      if (s.empty() || ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
      return d;
    };
    const double lo = r.lower.empty() ? 0 : *number(r.lower);
    const double hi = r.upper.empty() ? 0 : *number(r.upper);
    auto between = [&](double v) {
      return (r.lower.empty() || (r.include_lower ? v >= lo : v > lo)) &&
             (r.upper.empty() || (r.include_upper ? v <= hi : v < hi));
    };
    std::set<std::string> out;
    for (std::size_t i = 0; i < fields.size(); ++i) {
      for (const Field& f : fields[i]) {
        if (f.name != r.field) continue;
        const auto v = f.type == Field::Type::kNumber   ? std::optional<double>(f.number)
                       : f.type == Field::Type::kString ? number(f.text)
                                                        : std::nullopt;
        if (v && between(*v)) out.insert(std::to_string(i));
      }
    }
    return out;
  };
  auto found = [&](const query::Range& r) {
    auto page = Run(Node::MakeRange(r, 0));
    EXPECT_TRUE(page.ok()) << page.status().ToString();
    std::set<std::string> out;
    if (page.ok()) {
      for (const StoredEvent& e : page->hits) {
        out.insert(std::to_string(json::parse(e.source).at("i").as_int64()));
      }
    }
    return out;
  };
  std::vector<query::Range> ranges;
  const std::vector<std::string> bounds = {"",
                                           "-100",
                                           "-12",
                                           "-7",
                                           "-0.5",
                                           "0",
                                           "0.1",
                                           "5",
                                           "7",
                                           "12.5",
                                           "69",
                                           "70",
                                           "77998",
                                           "78000",
                                           "1e6",
                                           "1e-6",
                                           "9007199254740992"};
  for (const char* field : {"v", "w"}) {
    for (std::size_t a = 0; a < bounds.size(); ++a) {
      for (std::size_t b = 0; b < bounds.size(); b += 3) {
        ranges.push_back({field, bounds[a], bounds[b], a % 2 == 0, b % 2 == 0});
      }
    }
  }
  auto check_all = [&](const std::string& label) {
    for (const query::Range& r : ranges) {
      EXPECT_EQ(found(r), expected(r)) << label << ": " << r.field << " " << r.lower << " .. "
                                       << r.upper << " " << r.include_lower << r.include_upper;
    }
  };
  check_all("recorded");
  const query::Range some_w{"w", "0", "100", true, true};
  ASSERT_FALSE(expected(some_w).empty());

  // The table emptied behind the store's back: the plain field answers
  // nothing, since its numbers are planned from the table alone.
  const std::string path = DataDir() + "/" + FormatDay(kDay) + ".db";
  auto modify = [&](const char* sql) {
    store_.reset();
    Db db;
    ASSERT_TRUE(db.Open(path, SQLITE_OPEN_READWRITE).ok());
    ASSERT_TRUE(db.Exec(sql).ok()) << sql;
    db.Close();
    Open();
  };
  modify("DELETE FROM number_ranges");
  EXPECT_TRUE(found(some_w).empty());
  // Without the meta row the file reads like one created before the table:
  // every event is read, and the answers are right again.
  modify("DELETE FROM meta WHERE key = 'number_ranges'");
  check_all("not recorded");
}

TEST_F(SqliteStoreTest, BooleanOperators) {
  MustAppend({Ev("ab", kT0 + 1, "alpha beta"), Ev("a", kT0 + 2, "alpha"), Ev("b", kT0 + 3, "beta"),
              Ev("none", kT0 + 4, "gamma")});
  EXPECT_EQ(Find(And({Msg("alpha"), Msg("beta")})), (Names{"ab"}));
  EXPECT_EQ(Find(Or({Msg("alpha"), Msg("beta")})), (Names{"b", "a", "ab"}));
  EXPECT_EQ(Find(And({Msg("alpha"), Not(Msg("beta"))})), (Names{"a"}));
  EXPECT_EQ(Find(Not(Msg("alpha"))), (Names{"none", "b"}));
  EXPECT_EQ(Find(And({Not(Msg("alpha")), Not(Msg("beta"))})), (Names{"none"}));
  EXPECT_EQ(Find(Or({Msg("alpha"), Not(Msg("beta"))})), (Names{"none", "a", "ab"}));
  EXPECT_EQ(Find(And({Msg("alpha"), Or({Msg("beta"), Not(Msg("gamma"))})})), (Names{"a", "ab"}));
  EXPECT_EQ(Find(Not(Node::MatchAll())), Names{});
}

TEST_F(SqliteStoreTest, PhraseDoesNotSpanArrayElements) {
  MustAppend({Ev("split", kT0 + 1, "x", {S("tags", "a"), S("tags", "b")}),
              Ev("joined", kT0 + 2, "x", {S("tags", "a b")})});
  EXPECT_EQ(Find(Term("tags", "a b", true)), (Names{"joined"}));
  EXPECT_EQ(Find(Term("tags", "b")), (Names{"joined", "split"}));
  EXPECT_EQ(Find(And({Term("tags", "a"), Term("tags", "b")})), (Names{"joined", "split"}));
}

TEST_F(SqliteStoreTest, CjkPieces) {
  MustAppend({Ev("zh", kT0 + 1, "CUDA显存不足"), Ev("other", kT0 + 2, "显卡正常")});
  EXPECT_EQ(Find(Msg("显存")), (Names{"zh"}));
  EXPECT_EQ(Find(Msg("存不足")), (Names{"zh"}));
  EXPECT_EQ(Find(Msg("cuda显存")), (Names{"zh"}));
  EXPECT_EQ(Find(Msg("不足显存")), Names{});
}

TEST_F(SqliteStoreTest, NewestFirstEvenWhenAppendedOutOfOrder) {
  MustAppend({Ev("t3", kT0 + 3000, "e"), Ev("t1", kT0 + 1000, "e")});
  MustAppend({Ev("t2", kT0 + 2000, "e"), Ev("t0", kT0, "e"), Ev("t4", kT0 + 4000, "e")});
  EXPECT_EQ(Find(Msg("e")), (Names{"t4", "t3", "t2", "t1", "t0"}));
  EXPECT_EQ(Find(Node::MatchAll()), (Names{"t4", "t3", "t2", "t1", "t0"}));
}

TEST_F(SqliteStoreTest, TimeRangeIsHalfOpen) {
  MustAppend({Ev("t0", kT0, "e"), Ev("t1", kT0 + 1, "e"), Ev("t2", kT0 + 2, "e")});
  EXPECT_EQ(Find(Msg("e"), kT0 + 1, kT0 + 2), (Names{"t1"}));
  EXPECT_EQ(Find(Node::MatchAll(), kT0, kT0 + 2), (Names{"t1", "t0"}));
  EXPECT_EQ(Find(Msg("e"), kT0 + 1, kT0 + 3), (Names{"t2", "t1"}));
  EXPECT_EQ(Find(Msg("e"), kT0 + 1, kT0 + 1), Names{});
  EXPECT_EQ(Find(Msg("e"), kT0 + 2, kT0), Names{});
  auto page = Run(Msg("e"), kT0 + 1, kT0 + 2);
  ASSERT_TRUE(page.ok());
  EXPECT_EQ(page->total, 1u);
}

TEST_F(SqliteStoreTest, PaginationVisitsEveryHitOnceWhileAppending) {
  std::vector<Record> batch;
  for (int i = 0; i < 25; ++i) batch.push_back(Ev(fmt::format("e{}", i), kT0 + i, "page"));
  MustAppend(std::move(batch));
  std::multiset<std::string> seen;
  std::optional<EventKey> before;
  const Node q = Msg("page");
  for (int round = 0; round < 10; ++round) {
    SearchRequest req;
    req.query = &q;
    req.limit = 10;
    req.before = before;
    auto page = store_->Search(req);
    ASSERT_TRUE(page.ok()) << page.status().ToString();
    if (round == 0) {
      EXPECT_EQ(page->total, 25u);
    }
    for (const StoredEvent& e : page->hits) seen.insert(e.source);
    if (!page->next) break;
    EXPECT_EQ(*page->next, page->hits.back().key);
    before = page->next;
    MustAppend({Ev(fmt::format("new{}", round), kT0 + 1000 + round, "page")});  // newer
  }
  ASSERT_EQ(seen.size(), 25u);
  for (int i = 0; i < 25; ++i) EXPECT_EQ(seen.count(fmt::format("e{}", i)), 1u) << i;
}

TEST_F(SqliteStoreTest, TotalIsCappedByCountLimit) {
  std::vector<Record> batch;
  for (int d = 0; d < 3; ++d) {
    for (int i = 0; i < 10; ++i) batch.push_back(Ev("x", kT0 + d * kMsPerDay + i, "counted"));
  }
  MustAppend(std::move(batch));
  const Node q = Msg("counted");
  SearchRequest req;
  req.query = &q;
  req.limit = 5;
  struct Case {
    std::size_t count_limit;
    std::uint64_t total;
    bool exact;
  };
  for (Case c :
       {Case{1000, 30, true}, Case{15, 15, false}, Case{10, 10, false}, Case{0, 0, true}}) {
    SCOPED_TRACE(c.count_limit);
    req.count_limit = c.count_limit;
    auto page = store_->Search(req);
    ASSERT_TRUE(page.ok());
    EXPECT_EQ(page->hits.size(), 5u);
    EXPECT_EQ(page->total, c.total);
    EXPECT_EQ(page->total_exact, c.exact);
  }
}

// Retention may drop a day after a search listed the days and before it
// opened that day's files. The search reads the day as empty, as one started
// a moment later would, rather than failing. Each day here is written, so
// listed, then dropped by the size rule right after its commit, before any
// connection opened it: the search must open its files, or find it gone.
TEST_F(SqliteStoreTest, ADayDroppedWhileASearchRunsReadsAsEmpty) {
  RetentionPolicy one_byte;
  one_byte.max_disk_bytes = 1;                           // every past day goes after each commit
  one_byte.check_period = std::chrono::milliseconds(5);  // and a commit pokes it this soon
  Open({}, one_byte);
  const std::int64_t today = DayOf(WallClockMs());
  std::vector<Record> kept;  // tomorrow's: never dropped
  for (int i = 0; i < 50; ++i) kept.push_back(Ev("kept", DayStart(today + 1) + i, "epoch done"));
  MustAppend(std::move(kept));
  std::atomic<bool> stop{false};
  std::atomic<int> searches{0};
  std::string failure;  // set by the searcher before it returns
  std::thread searcher([&] {
    const Node q = Msg("epoch");
    SearchRequest req;
    req.query = &q;
    req.limit = 60;
    req.count_limit = 10'000;
    while (!stop.load()) {
      const bool histogram = searches.load() % 2 == 1;
      const Status s =
          histogram ? store_->Histogram(req, kMsPerDay).status() : store_->Search(req).status();
      if (!s.ok()) {
        failure = (histogram ? "histogram: " : "search: ") + s.ToString();
        return;
      }
      searches.fetch_add(1);
    }
  });
  bool dropped = true;
  for (int i = 0; i < 200 && dropped && !HasFailure(); ++i) {
    const std::int64_t day = today - 1 - i;
    MustAppend({Ev("old", DayStart(day) + 1'000, "epoch begins")});
    dropped = dashcam::testing::WaitFor([&] { return store_->Partitions().size() == 1; },
                                        std::chrono::seconds(10));
  }
  stop.store(true);
  searcher.join();
  EXPECT_TRUE(dropped);
  EXPECT_EQ(failure, "");
  EXPECT_GT(searches.load(), 0);
  EXPECT_EQ(Find(Msg("epoch")).size(), 50u);
}

// Helper threads read days of a search beside the searching thread
// (search_helpers.h): the newest hits, the totals, their caps and exactness
// must not depend on who read which day.
TEST_F(SqliteStoreTest, HitsAndTotalsOverManyDaysAreTheSameWhoeverReadsThem) {
  constexpr int kDays = 7;
  std::vector<Record> batch;
  for (int d = 0; d < kDays; ++d) {
    for (int i = 0; i < 300; ++i) {
      std::string msg = "step " + std::string(i % 3 == 0 ? "rare" : "plain");
      if (d == 2 && i < 5) msg += " oddity";
      if (i == 7) msg += " needle";
      batch.push_back(Ev(fmt::format("d{}-{}", d, i), kT0 + d * kMsPerDay + i, msg,
                         {S("day", std::to_string(d))}));
    }
  }
  MustAppend(std::move(batch));
  Counter& helped = metrics_.GetCounter("dashcam_search_helper_partitions_total", "");
  struct Case {
    Node q;
    std::size_t count_limit;
    std::uint64_t total;
    bool exact;
    Names newest;  // the 3 hits; empty: not checked
  };
  std::vector<Case> cases;
  cases.push_back({Msg("step"), 10'000, 300u * kDays, true, {"d6-299", "d6-298", "d6-297"}});
  cases.push_back({Msg("needle"), 10'000, kDays, true, {"d6-7", "d5-7", "d4-7"}});
  // Expanded against each day's vocabulary, once per day for all threads.
  cases.push_back({Term("", "need", false, true), 10'000, kDays, true, {"d6-7", "d5-7", "d4-7"}});
  cases.push_back({Msg("oddity"), 10'000, 5, true, {"d2-4", "d2-3", "d2-2"}});
  cases.push_back({Msg("rare"), 10'000, 100u * kDays, true, {}});
  cases.push_back({Msg("absent"), 10'000, 0, true, {}});
  cases.push_back(
      {And({Msg("rare"), Not(Term("day", "3"))}), 10'000, 100u * (kDays - 1), true, {}});
  cases.push_back({Msg("step"), 1000, 1000, false, {}});
  cases.push_back({Msg("step"), 300u * kDays, 300u * kDays, false, {}});
  cases.push_back({Msg("step"), 300u * kDays + 1, 300u * kDays, true, {}});
  // Helpers join once they wait for work: until they have counted some
  // days, run the cases again (the first rounds may run on this thread).
  for (int round = 0; round < 50 && (round < 3 || helped.value() == 0); ++round) {
    for (const Case& c : cases) {
      SCOPED_TRACE(query::DebugString(c.q) + " count_limit " + std::to_string(c.count_limit));
      SearchRequest req;
      req.query = &c.q;
      req.limit = 3;
      req.count_limit = c.count_limit;
      auto page = store_->Search(req);
      ASSERT_TRUE(page.ok()) << page.status().ToString();
      EXPECT_EQ(page->total, c.total);
      EXPECT_EQ(page->total_exact, c.exact);
      EXPECT_EQ(page->hits.size(), std::min<std::uint64_t>(3, c.total));
      if (!c.newest.empty()) {
        Names got;
        for (const StoredEvent& e : page->hits) got.push_back(e.source);
        EXPECT_EQ(got, c.newest);
      }
    }
  }
  EXPECT_GT(helped.value(), 0u);
  // A later page reads hits below its cursor only; the count still covers
  // the whole range, whichever days the hits read to the end.
  const Node odd = Msg("oddity");
  SearchRequest req;
  req.query = &odd;
  req.limit = 2;
  auto first = store_->Search(req);
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE(first->next.has_value());
  for (std::size_t page = 2; page <= 3; ++page) {
    req.before = *first->next;
    auto next = store_->Search(req);
    ASSERT_TRUE(next.ok()) << next.status().ToString();
    EXPECT_EQ(next->total, 5u) << "page " << page;
    EXPECT_EQ(next->hits.size(), page == 2 ? 2u : 1u);
    if (!next->next) break;
    first = std::move(next);
  }
}

// A day's scan keeps the keys of its first 10 000 matches at most
// (sqlite_store.cpp, kMaxKeyScanRows); past them the day's count goes on
// without keys. The newest day of the range is read newest first, an older
// one oldest first and its hits newest first after. Each must agree with a
// day read whole.
TEST_F(SqliteStoreTest, ADayPastTheKeyScanIsCountedWholeAndPagedNewestFirst) {
  constexpr int kBroad = 12'000;
  std::vector<Record> batch;
  for (int i = 0; i < kBroad; ++i) batch.push_back(Ev(fmt::format("old{}", i), kT0 + i, "broad"));
  for (int i = 0; i < 3; ++i) {
    batch.push_back(Ev(fmt::format("new{}", i), kT0 + kMsPerDay + i, "broad"));
  }
  MustAppend(std::move(batch));
  const Node q = Msg("broad");
  struct Case {
    std::size_t count_limit;
    std::uint64_t total;
    bool exact;
  };
  for (const bool broad_day_newest : {false, true}) {
    SCOPED_TRACE(broad_day_newest ? "the broad day is the newest" : "the broad day is older");
    const int newer = broad_day_newest ? 0 : 3;
    const std::uint64_t all = kBroad + newer;
    Names newest;
    for (int i = newer - 1; i >= 0; --i) newest.push_back(fmt::format("new{}", i));
    for (int i = 1; newest.size() < 5; ++i) newest.push_back(fmt::format("old{}", kBroad - i));
    for (Case c : {Case{20'000, all, true}, Case{all + 1, all, true}, Case{all, all, false},
                   Case{10'001, 10'001, false}}) {
      SCOPED_TRACE(c.count_limit);
      SearchRequest req;
      req.query = &q;
      req.to = broad_day_newest ? (kDay + 1) * kMsPerDay : kMaxEventTime;
      req.limit = 5;
      req.count_limit = c.count_limit;
      auto page = store_->Search(req);
      ASSERT_TRUE(page.ok()) << page.status().ToString();
      EXPECT_EQ(page->total, c.total);
      EXPECT_EQ(page->total_exact, c.exact);
      Names got;
      for (const StoredEvent& e : page->hits) got.push_back(e.source);
      EXPECT_EQ(got, newest);
    }
    // Pages of 1000 from the cursor visit every match once, newest first.
    SearchRequest req;
    req.query = &q;
    req.to = broad_day_newest ? (kDay + 1) * kMsPerDay : kMaxEventTime;
    req.limit = 1000;
    std::vector<EventKey> keys;
    for (int page = 0; page < 20; ++page) {
      auto got = store_->Search(req);
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      EXPECT_EQ(got->total, 10'000u);
      for (const StoredEvent& e : got->hits) keys.push_back(e.key);
      if (!got->next) break;
      req.before = got->next;
    }
    ASSERT_EQ(keys.size(), all);
    EXPECT_TRUE(std::is_sorted(keys.rbegin(), keys.rend()));
    EXPECT_EQ(std::adjacent_find(keys.begin(), keys.end()), keys.end());
  }
}

// A search cuts each day of its range into slices that the helpers read
// side by side (sqlite_store.cpp, SliceDays). Matches spread over a whole
// day, bunched in its first or last slice, or too many in a middle slice
// for its scan to keep their keys (a broad slice, read again newest first)
// must come back as from one statement over the day: the newest first, each
// once across pages, with the same totals and caps, for the whole day and
// for ranges that cut it.
TEST_F(SqliteStoreTest, ADayReadInSlicesGivesTheHitsAndTotalsOfTheWholeDay) {
  constexpr int kEvents = 3000;
  constexpr TimeMs kStep = kMsPerDay / kEvents;
  constexpr int kFlood = 12'000;  // past the key scan's 10 000 rows
  constexpr TimeMs kHour = 3'600'000;
  struct Stored {
    std::string name;
    TimeMs t;
    std::string msg;
  };
  std::vector<Stored> all;
  for (int i = 0; i < kEvents; ++i) {
    std::string msg = "step";
    if (i % 97 == 0) msg += " needle";
    if (i < 125) msg += " dawn flood";
    if (i >= kEvents - 10) msg += " dusk flood";
    all.push_back({fmt::format("a{}", i), DayStart(kDay) + i * kStep, msg});
  }
  for (int i = 0; i < kFlood; ++i) {  // 10:00 to 12:00
    all.push_back({fmt::format("f{}", i), DayStart(kDay) + 10 * kHour + i * 600 + 1, "flood"});
  }
  for (int i = 0; i < 40; ++i) {
    all.push_back({fmt::format("b{}", i), DayStart(kDay + 1) + i * 2'000'000, "step needle"});
  }
  std::vector<Record> batch;
  for (const Stored& e : all) batch.push_back(Ev(e.name, e.t, e.msg));
  MustAppend(std::move(batch));
  std::stable_sort(all.begin(), all.end(),
                   [](const Stored& a, const Stored& b) { return a.t < b.t; });

  struct Range {
    TimeMs from, to;
  };
  const std::vector<Range> ranges = {
      {kMinEventTime, kMaxEventTime},
      {DayStart(kDay), DayStart(kDay + 1)},
      {DayStart(kDay) + kHour, DayStart(kDay) + 20 * kHour},
      {DayStart(kDay) + 23 * kHour, DayStart(kDay + 1) + 5 * kHour},
      {DayStart(kDay) + 1000, DayStart(kDay) + 50'000},  // too short to cut
  };
  // Pages of `limit` from the cursor, at most `pages` of them.
  auto check = [&](const char* word, const Range& r, std::size_t limit, std::size_t count_limit,
                   int pages) {
    SCOPED_TRACE(
        fmt::format("{} in {}..{}, limit {}, count to {}", word, r.from, r.to, limit, count_limit));
    Names want;  // newest first
    for (auto it = all.rbegin(); it != all.rend(); ++it) {
      if (it->t >= r.from && it->t < r.to && it->msg.find(word) != std::string::npos) {
        want.push_back(it->name);
      }
    }
    const Node q = Msg(word);
    SearchRequest req;
    req.query = &q;
    req.from = r.from;
    req.to = r.to;
    req.limit = limit;
    req.count_limit = count_limit;
    Names got;
    bool last_page = false;
    for (int page = 0; page < pages && !last_page; ++page) {
      auto p = store_->Search(req);
      ASSERT_TRUE(p.ok()) << p.status().ToString();
      EXPECT_EQ(p->total, std::min<std::uint64_t>(want.size(), count_limit));
      EXPECT_EQ(p->total_exact, want.size() < count_limit);
      for (const StoredEvent& e : p->hits) got.push_back(e.source);
      last_page = !p->next;
      if (p->next) req.before = p->next;
    }
    if (!last_page) want.resize(std::min(want.size(), got.size()));
    EXPECT_EQ(got, want);
  };
  for (const char* word : {"step", "needle", "dawn", "dusk", "absent"}) {
    for (const Range& r : ranges) {
      for (std::size_t limit : {1, 7, 150}) {
        for (std::size_t count_limit : {10'000, 100}) check(word, r, limit, count_limit, 5000);
      }
    }
  }
  for (const Range& r : ranges) {
    for (std::size_t count_limit : {10'000, 100'000, 100}) {
      check("flood", r, 7, count_limit, 3);
      check("flood", r, 1000, count_limit, 5000);
    }
  }
}

TEST_F(SqliteStoreTest, DaysGoToTheirOwnPartitionFiles) {
  MustAppend({Ev("d0", kT0, "e"), Ev("d2", kT0 + 2 * kMsPerDay, "e"),
              Ev("d1", DayStart(kDay + 1), "e"), Ev("d0late", DayStart(kDay + 1) - 1, "e")});
  const auto parts = store_->Partitions();
  ASSERT_EQ(parts.size(), 3u);
  for (std::size_t i = 0; i < parts.size(); ++i) {
    EXPECT_EQ(parts[i].day, kDay + static_cast<std::int64_t>(i));
    EXPECT_GT(parts[i].bytes, 0u);
  }
  for (const char* name : {"2026-11-29.db", "2026-11-30.db", "2026-12-01.db"}) {
    EXPECT_TRUE(std::filesystem::exists(DataDir() + "/" + name)) << name;
  }
  EXPECT_EQ(Find(Msg("e")), (Names{"d2", "d1", "d0late", "d0"}));
  EXPECT_EQ(Find(Msg("e"), DayStart(kDay + 1), DayStart(kDay + 2)), (Names{"d1"}));
  auto page = Run(Msg("e"), kMinEventTime, kMaxEventTime, 2);  // spans partitions
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page->hits.size(), 2u);
  EXPECT_EQ(page->hits[1].source, "d1");
  EXPECT_EQ(page->total, 4u);
}

TEST_F(SqliteStoreTest, CreateWithDocIdKeepsTheFirst) {
  Record r = Ev("first", kT0, "dup");
  r.doc_id = "doc-1";
  AppendResult a = Append({r});
  ASSERT_TRUE(a.status.ok());
  EXPECT_EQ(a.outcomes, std::vector<RecordOutcome>{RecordOutcome::kCreated});
  EXPECT_EQ(a.ids, Names{"doc-1"});
  r.source = "second";
  r.ts_ms = kT0 + 5;
  AppendResult b = Append({r});
  ASSERT_TRUE(b.status.ok());
  EXPECT_EQ(b.outcomes, std::vector<RecordOutcome>{RecordOutcome::kDuplicate});
  EXPECT_EQ(Find(Msg("dup")), (Names{"first"}));
  Record x = Ev("x1", kT0 + 7, "batched");
  x.doc_id = "doc-4";
  Record y = x;
  y.source = "x2";
  EXPECT_EQ(Append({x, y}).outcomes,
            (std::vector<RecordOutcome>{RecordOutcome::kCreated, RecordOutcome::kDuplicate}));
  EXPECT_EQ(Find(Msg("batched")), (Names{"x1"}));
  auto got = store_->Get("doc-1");
  ASSERT_TRUE(got.ok() && got->has_value());
  EXPECT_EQ((*got)->source, "first");
  EXPECT_EQ((*got)->id, "doc-1");
}

TEST_F(SqliteStoreTest, IndexWithDocIdReplaces) {
  Record r = Ev("old", kT0, "common version1");
  r.doc_id = "doc-2";
  r.op = WriteOp::kIndex;
  ASSERT_EQ(Append({r}).outcomes, std::vector<RecordOutcome>{RecordOutcome::kCreated});
  r.source = "new";
  r.message = "common version2";
  AppendResult b = Append({r});
  ASSERT_TRUE(b.status.ok());
  EXPECT_EQ(b.outcomes, std::vector<RecordOutcome>{RecordOutcome::kUpdated});
  EXPECT_EQ(Find(Msg("version1")), Names{});
  EXPECT_EQ(Find(Msg("common")), (Names{"new"}));
  // Counting through FTS alone, through FTS plus SQL, and by key.
  for (const Node& q :
       {Msg("common"), And({Msg("common"), Or({Msg("x"), Not(Msg("y"))})}), Node::MatchAll()}) {
    auto page = Run(q);
    ASSERT_TRUE(page.ok());
    EXPECT_EQ(page->total, 1u) << query::DebugString(q);
  }
  auto got = store_->Get("doc-2");
  ASSERT_TRUE(got.ok() && got->has_value());
  EXPECT_EQ((*got)->source, "new");

  // Within one batch too: the later record wins.
  Record x = Ev("x1", kT0 + 7, "batched");
  x.doc_id = "doc-3";
  x.op = WriteOp::kIndex;
  Record y = x;
  y.source = "x2";
  EXPECT_EQ(Append({x, y}).outcomes,
            (std::vector<RecordOutcome>{RecordOutcome::kCreated, RecordOutcome::kUpdated}));
  EXPECT_EQ(Find(Msg("batched")), (Names{"x2"}));
}

TEST_F(SqliteStoreTest, GetByKeyAndByDocId) {
  Record with_id = Ev("named", kT0 + 1, "m");
  with_id.doc_id = "my-id";
  AppendResult a = Append({Ev("keyed", kT0, "m"), with_id});
  ASSERT_TRUE(a.status.ok());
  ASSERT_EQ(a.ids.size(), 2u);
  ASSERT_EQ(a.ids[0].size(), 16u);
  EXPECT_EQ(KeyTime(ParseEventKey(a.ids[0]).value_or(0)), kT0);

  auto got = store_->Get(a.ids[0]);
  ASSERT_TRUE(got.ok() && got->has_value());
  EXPECT_EQ((*got)->source, "keyed");
  EXPECT_EQ((*got)->id, a.ids[0]);
  EXPECT_EQ((*got)->ts_ms, kT0);
  EXPECT_EQ((*got)->level, "INFO");
  EXPECT_EQ((*got)->index, "logs");
  got = store_->Get("my-id");
  ASSERT_TRUE(got.ok() && got->has_value());
  EXPECT_EQ((*got)->source, "named");
  for (const char* missing : {"nope", "0000000000000000", "ffffffffffffffff"}) {
    got = store_->Get(missing);
    ASSERT_TRUE(got.ok()) << missing;
    EXPECT_FALSE(got->has_value()) << missing;
  }
}

TEST_F(SqliteStoreTest, ReopenSeesEverything) {
  Record named = Ev("b", kT0 + kMsPerDay, "persisted");
  named.doc_id = "kept";
  MustAppend({Ev("a", kT0, "persisted"), named});
  store_->Close();
  Open();
  EXPECT_EQ(store_->Partitions().size(), 2u);
  EXPECT_EQ(Find(Msg("persisted")), (Names{"b", "a"}));
  auto got = store_->Get("kept");
  ASSERT_TRUE(got.ok() && got->has_value());
  MustAppend({Ev("c", kT0 + 1, "persisted")});
  EXPECT_EQ(Find(Msg("persisted")), (Names{"b", "c", "a"}));
}

TEST_F(SqliteStoreTest, HostileQueryTextIsJustText) {
  MustAppend({Ev("sql", kT0 + 1, "input was '); DROP TABLE events; -- here"),
              Ev("near", kT0 + 2, "NEAR(a b) and message: x"), Ev("plain", kT0 + 3, "ok")});
  struct Case {
    Node q;
    Names want;
  };
  const Case cases[] = {
      {Phrase("'); DROP TABLE events; --"), {"sql"}},
      {Msg("'); DROP TABLE events; --"), {"sql"}},
      {Term("f", "'); DROP TABLE events; --"), {}},
      {Msg("\""), {}},
      {Phrase("\" OR \"ok"), {}},
      {Msg("NEAR("), {"near"}},
      {Phrase("NEAR(a b)"), {"near"}},
      {Msg("*"), {}},
      {Msg("^"), {}},
      {Phrase("message: x"), {"near"}},
      {Term("message: x", "ok"), {}},
      {Not(Msg("')--")), {"plain", "near", "sql"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(query::DebugString(c.q));
    EXPECT_EQ(Find(c.q), c.want);
  }
  MustAppend({Ev("after", kT0 + 4, "ok")});
  EXPECT_EQ(Find(Msg("ok")), (Names{"after", "plain"}));
}

TEST_F(SqliteStoreTest, PastDeadlineIsDeadlineExceeded) {
  std::vector<Record> batch;
  for (int i = 0; i < 20'000; ++i) batch.push_back(Ev("e", kT0 + i, "common words"));
  MustAppend(std::move(batch));
  // Every event contains `common`, so the pure negation scans all of them.
  const Node q = Not(Msg("common"));
  SearchRequest req;
  req.query = &q;
  req.deadline = Clock::now() - std::chrono::seconds(1);
  auto page = store_->Search(req);
  ASSERT_FALSE(page.ok());
  EXPECT_EQ(page.status().code(), StatusCode::kDeadlineExceeded);
  req.deadline = Clock::time_point::max();  // the connection is usable after
  page = store_->Search(req);
  ASSERT_TRUE(page.ok()) << page.status().ToString();
  EXPECT_TRUE(page->hits.empty());
  EXPECT_EQ(Find(Msg("words"), kT0, kT0 + 3).size(), 3u);
}

// A client told its events are stored (the batch's callback) and then
// reading /api/v1/status sees them counted: the count comes first.
TEST_F(SqliteStoreTest, ABatchIsCountedBeforeItsCallbackRuns) {
  std::uint64_t sent = 0;
  for (int batch = 1; batch <= 3; ++batch) {
    std::vector<Record> records;
    for (int i = 0; i < batch * 10; ++i) {
      records.push_back(Ev(fmt::format("b{}-{}", batch, i), kT0 + batch * 1000 + i, "m"));
    }
    sent += records.size();
    std::promise<std::uint64_t> counted;
    store_->Append(std::move(records), [&](AppendResult r) {
      EXPECT_TRUE(r.status.ok()) << r.status.ToString();
      counted.set_value(store_->writer_stats().committed_events);
    });
    EXPECT_EQ(counted.get_future().get(), sent) << "batch " << batch;
  }
}

TEST_F(SqliteStoreTest, FullQueueRefusesAtOnce) {
  WriterOptions w;
  w.max_queue_bytes = 1;
  w.test_commit_delay_ms = 50;
  Open(w);
  // The first batch is always taken; its bytes stay queued until its callback
  // returns, which we hold until the second Append has been refused.
  std::promise<void> release;
  std::promise<AppendResult> first;
  std::future<AppendResult> first_done = first.get_future();
  std::shared_future<void> released = release.get_future().share();
  store_->Append({Ev("one", kT0, "m")}, [&](AppendResult r) {
    released.wait();
    first.set_value(std::move(r));
  });
  const std::size_t queued = store_->queued_bytes();
  bool called = false;
  AppendResult second;
  store_->Append({Ev("two", kT0, "m")}, [&](AppendResult r) {
    called = true;
    second = std::move(r);
  });
  const bool called_before_return = called;
  release.set_value();  // before any assertion can return early
  EXPECT_GT(queued, 0u);
  EXPECT_TRUE(called_before_return);
  EXPECT_EQ(second.status.code(), StatusCode::kOverloaded);
  EXPECT_TRUE(second.outcomes.empty());
  EXPECT_TRUE(first_done.get().status.ok());
  // The writer frees the budget just after the callbacks return.
  for (int i = 0; i < 500 && store_->queued_bytes() > 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  MustAppend({Ev("three", kT0 + 1, "m")});  // drained: accepted again
  EXPECT_EQ(Find(Msg("m")), (Names{"three", "one"}));

  store_->Close();
  AppendResult closed = Append({Ev("four", kT0, "m")});
  EXPECT_EQ(closed.status.code(), StatusCode::kUnavailable);
}

}  // namespace
}  // namespace dashcam::storage
