// Tests for what the ClickHouse backend writes and asks without a server
// (storage/clickhouse/ch_row.h, ch_query_compiler.h): the search columns'
// encoding, ids and keys, and the leaves the compiler refuses. Whether the
// compiled SQL finds what it should is the differential query test's job,
// against a real cluster (tests/integration/query_differential_test.cpp).
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "storage/clickhouse/ch_query_compiler.h"
#include "storage/clickhouse/ch_row.h"

namespace dashcam::storage::clickhouse {
namespace {

namespace json = boost::json;

Record MakeRecord(std::string source, TimeMs ts = 1795903200123) {
  Record r;
  r.ts_ms = ts;
  r.index = "logs";
  r.level = "ERROR";
  r.source = std::move(source);
  return r;
}

json::object Row(const Record& r, std::string_view id = "ev-1") {
  ChRowEncoder encoder;
  std::string out;
  const Status s = encoder.Append(r, id, 7, 1795903300000, out);
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(out.back(), '\n');
  return json::parse(out).as_object();
}

std::vector<std::string> Strings(const json::value& v) {
  std::vector<std::string> out;
  for (const json::value& e : v.as_array()) out.emplace_back(e.as_string());
  return out;
}

TEST(ChRowTest, MessageTokensAreSpaceDelimitedForWholeTokenSearch) {
  const json::object row = Row(
      MakeRecord(R"({"message":"CUDA error: out of memory on GPU-3 显存不足","user":"zhangsan"})"));
  EXPECT_EQ(row.at("tokens").as_string(), " cuda error out of memory on gpu 3 显存 存不 不足 ");
  EXPECT_EQ(row.at("message").as_string(), "CUDA error: out of memory on GPU-3 显存不足");
  EXPECT_EQ(row.at("has_msg").to_number<int>(), 1);
  EXPECT_EQ(row.at("ts").as_string(), "2026-11-28 22:00:00");
  EXPECT_EQ(row.at("ms").to_number<int>(), 123);
  EXPECT_EQ(row.at("seq").to_number<std::uint32_t>(), 7u);
  EXPECT_EQ(row.at("ins").to_number<std::int64_t>(), 1795903300000);
  EXPECT_EQ(row.at("idx").as_string(), "logs");
  EXPECT_EQ(row.at("level").as_string(), "ERROR");
}

// The runs rollup (ClickHouseStore::Groups) reads these two columns.
TEST(ChRowTest, TheGroupAndWhetherTheEventClosesItAreColumns) {
  Record r = MakeRecord(R"({"message":"training finished"})");
  EXPECT_EQ(Row(r).at("grp").as_string(), "");
  EXPECT_EQ(Row(r).at("grp_end").to_number<int>(), 0);
  r.group = "gpu-7:/logs/train.log";
  r.group_end = true;
  EXPECT_EQ(Row(r).at("grp").as_string(), "gpu-7:/logs/train.log");
  EXPECT_EQ(Row(r).at("grp_end").to_number<int>(), 1);
}

TEST(ChRowTest, FieldValuesAreSegmentsAndArraysByType) {
  const json::object row = Row(MakeRecord(
      R"({"message":"m","tags":["a b","c"],"gpu":3,"ok":true,"port":"8080","run":{"id":"r 42"},"x":null})"));
  // One segment per value, so a phrase cannot span two array elements.
  EXPECT_EQ(row.at("ftokens").as_string(),
            "\x1e tags\x1f"
            "a tags\x1f"
            "b \x1e tags\x1f"
            "c \x1e ok\x1ftrue \x1e port\x1f"
            "8080 \x1e");
  // run.id and _index are keyword fields: whole values only, no tokens.
  // The message is there too, under a name no field has, for ranges.
  EXPECT_EQ(
      Strings(row.at("str_names")),
      (std::vector<std::string>{kChMessageName, "_index", "tags", "tags", "ok", "port", "run.id"}));
  EXPECT_EQ(Strings(row.at("str_values")),
            (std::vector<std::string>{"m", "logs", "a b", "c", "true", "8080", "r 42"}));
  EXPECT_EQ(Strings(row.at("num_names")), std::vector<std::string>{"gpu"});
  EXPECT_EQ(row.at("num_values").as_array().at(0).to_number<double>(), 3.0);
  // A string that is a number also takes part in numeric ranges.
  EXPECT_EQ(Strings(row.at("snum_names")), std::vector<std::string>{"port"});
  EXPECT_EQ(row.at("snum_values").as_array().at(0).to_number<double>(), 8080.0);
  EXPECT_EQ(row.at("tokens").as_string(), " m ");
}

TEST(ChRowTest, NamesCannotForgeAnotherFieldsTokens) {
  EXPECT_EQ(ChTokenName("a b\x1f"
                        "c\x1e"),
            "a\x1d"
            "b\x1d"
            "c\x1d");
  const json::object row = Row(MakeRecord(R"({"a b":"x"})"));
  EXPECT_EQ(row.at("ftokens").as_string(),
            "\x1e a\x1d"
            "b\x1fx \x1e");
}

TEST(ChRowTest, RefusesWhatTheTableCannotHold) {
  ChRowEncoder encoder;
  std::string out;
  EXPECT_EQ(encoder.Append(MakeRecord("{}", 4294967296000), "id", 1, 0, out).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(encoder.Append(MakeRecord("[1]"), "id", 1, 0, out).code(),
            StatusCode::kInvalidArgument);
  EXPECT_TRUE(out.empty());
}

TEST(ChRowTest, FieldsIngestDerivedBesideTheDocumentAreSearchableToo) {
  // run.id derived from run_id while the client's own `run` object stays as
  // sent: the SQLite index has it, so the row must too; a field the
  // document has is not added twice.
  Record r = MakeRecord(R"({"message":"x","run_id":"abc","run":{"rank":0}})");
  r.fields.push_back(Field{"run.id", Field::Type::kString, "abc", 0});
  r.fields.push_back(Field{"run.rank", Field::Type::kNumber, "0", 0});
  const json::object row = Row(r);
  EXPECT_EQ(Strings(row.at("str_names")),
            (std::vector<std::string>{kChMessageName, "_index", "run_id", "run.id"}));
  EXPECT_EQ(Strings(row.at("num_names")), std::vector<std::string>{"run.rank"});
}

TEST(ChRowTest, KeysFollowTimeThenTheSequence) {
  EXPECT_LT(ChEventKey(1000, 0xFFFFF), ChEventKey(1001, 0));
  EXPECT_EQ(ChEventKey(1000, 5) >> 20, 1000);
  EXPECT_EQ(ChEventKey(1000, 0x100005), ChEventKey(1000, 5));  // 20 bits of it
}

query::Node Leaf(query::NodeKind kind, std::string field, std::string text, unsigned distance) {
  query::Term t;
  t.field = std::move(field);
  t.text = std::move(text);
  t.distance = distance;
  return query::Node::MakeLeaf(kind, std::move(t), 17);
}

// What the proximity SQL asks is checked against a real server by the
// differential test; here, its shape: each word's phrase is a cheap
// position() test, and one word alone is just that phrase.
TEST(ChQueryCompilerTest, ProximityTestsEachPhraseThenTheirPositions) {
  auto one = CompileChQuery(Leaf(query::NodeKind::kNear, "", "  CUDA-error ", 3));
  ASSERT_TRUE(one.ok()) << one.status().message();
  EXPECT_EQ(*one, "(position(tokens, ' cuda error ') > 0)");
  auto none = CompileChQuery(Leaf(query::NodeKind::kNear, "", " -- ", 3));
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(*none, "0");
  auto two = CompileChQuery(Leaf(query::NodeKind::kNear, "", "cuda\tout-of memory", 2));
  ASSERT_TRUE(two.ok());
  EXPECT_NE(two->find("position(tokens, ' cuda ') > 0 AND position(tokens, ' out of ') > 0 AND "
                      "position(tokens, ' memory ') > 0"),
            std::string::npos)
      << *two;
  // Three phrases, each tried as the latest start; "out of memory" is three
  // tokens long, so it may start up to 3 + 2 positions before.
  auto three = CompileChQuery(Leaf(query::NodeKind::kNear, "", "a out-of-memory b", 2));
  ASSERT_TRUE(three.ok());
  EXPECT_NE(three->find("y + 5 >= x"), std::string::npos) << *three;
  EXPECT_NE(three->find("y + 3 >= x"), std::string::npos) << *three;
}

// An OR's one-token terms on one token column become one set lookup, and
// its plain keyword terms on one field one IN: a long OR of position()
// calls took ClickHouse 18.16 time quadratic in its length. What cannot be
// a set element (a phrase, a prefix, a number on a field) stays a clause.
TEST(ChQueryCompilerTest, AnOrOfTermsIsASetLookupPerColumn) {
  using query::NodeKind;
  std::vector<query::Node> any;
  any.push_back(Leaf(NodeKind::kTerm, "", "CUDA", 0));
  any.push_back(Leaf(NodeKind::kTerm, "", "out of", 0));
  any.push_back(Leaf(NodeKind::kTerm, "", "NCCL", 0));
  any.push_back(Leaf(NodeKind::kTerm, "run.id", "r-1", 0));
  any.push_back(Leaf(NodeKind::kTerm, "run.id", "r-2", 0));
  any.push_back(Leaf(NodeKind::kTerm, "gpu_id", "3", 0));
  any.push_back(Leaf(NodeKind::kTerm, "user", "alice", 0));
  query::Term prefix;
  prefix.text = "epo";
  prefix.prefix = true;
  any.push_back(query::Node::MakeTerm(prefix, 0));
  auto sql = CompileChQuery(query::Node{NodeKind::kOr, 0, std::move(any), {}, {}});
  ASSERT_TRUE(sql.ok()) << sql.status().message();
  EXPECT_NE(sql->find("arrayExists(x -> x IN ('cuda', 'nccl'), splitByChar(' ', tokens))"),
            std::string::npos)
      << *sql;
  EXPECT_NE(sql->find("position(tokens, ' out of ') > 0"), std::string::npos) << *sql;
  EXPECT_NE(sql->find("position(tokens, ' epo') > 0"), std::string::npos) << *sql;
  EXPECT_NE(sql->find("v IN ('r-1', 'r-2')"), std::string::npos) << *sql;
  EXPECT_NE(sql->find("splitByChar(' ', ftokens)"), std::string::npos) << *sql;  // user:alice
  EXPECT_NE(sql->find("num_values"), std::string::npos) << *sql;  // gpu_id:3, also numeric
}

TEST(ChQueryCompilerTest, RefusesWhatItCannotCompileWithThePosition) {
  // A fuzzy leaf needs the stored tokens; on text it must be one word.
  auto fuzzy = CompileChQuery(Leaf(query::NodeKind::kFuzzy, "", "memroy", 1));
  EXPECT_EQ(fuzzy.status().code(), StatusCode::kInvalidArgument);
  bool asked = false;
  auto two_words = CompileChQuery(
      Leaf(query::NodeKind::kFuzzy, "", "out of", 1),
      [&](const query::Node&, const std::string&) -> Result<std::vector<std::string>> {
        asked = true;
        return std::vector<std::string>{};
      });
  EXPECT_EQ(two_words.status().code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(asked);
}

TEST(ChQueryCompilerTest, FuzzyAsksForTheFoldedWordAndMatchesWhatComesBack) {
  std::string word_asked;
  auto sql = CompileChQuery(
      Leaf(query::NodeKind::kFuzzy, "", "MEMROY", 1),
      [&](const query::Node&, const std::string& word) -> Result<std::vector<std::string>> {
        word_asked = word;
        return std::vector<std::string>{"memory", "memroy"};
      });
  ASSERT_TRUE(sql.ok()) << sql.status().ToString();
  EXPECT_EQ(word_asked, "memroy");
  EXPECT_NE(sql->find("memory|memroy"), std::string::npos) << *sql;
  // Nothing within the distance: matches nothing.
  auto none = CompileChQuery(
      Leaf(query::NodeKind::kFuzzy, "", "zzz", 1),
      [](const query::Node&, const std::string&) -> Result<std::vector<std::string>> {
        return std::vector<std::string>{};
      });
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(*none, "0");
}

TEST(ChQueryCompilerTest, RangesOnTheMessageUseItsOwnName) {
  query::Range r;
  r.lower = "a";
  r.upper = "m";
  auto sql = CompileChQuery(query::Node::MakeRange(r, 0));
  ASSERT_TRUE(sql.ok());
  EXPECT_NE(sql->find("n = '\\x1Dmessage'"), std::string::npos) << *sql;
}

TEST(ChQueryCompilerTest, AnOpenQuoteInARegexIsClosedBeforeTheWrapper) {
  auto sql = CompileChQuery(Leaf(query::NodeKind::kRegex, "", "\\Qa.b", 0));
  ASSERT_TRUE(sql.ok());
  EXPECT_NE(sql->find("(?-s:\\\\Qa.b\\\\E)"), std::string::npos) << *sql;
  auto closed = CompileChQuery(Leaf(query::NodeKind::kRegex, "", "\\Qa\\E.b", 0));
  ASSERT_TRUE(closed.ok());
  EXPECT_NE(closed->find("(?-s:\\\\Qa\\\\E.b)"), std::string::npos) << *closed;
}

}  // namespace
}  // namespace dashcam::storage::clickhouse
