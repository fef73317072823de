// Tests for storage/fts_query_compiler.h and the query-side encodings of
// storage/attrs_codec.h: the exact FTS5 expression and SQL condition a query
// AST compiles to. (Whether these match the right events is tested against a
// real database in sqlite_store_test.cpp.)
#include "storage/fts_query_compiler.h"

#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "storage/attrs_codec.h"

namespace dashcam::storage {
namespace {

using Params = std::vector<std::variant<std::string, std::int64_t, const query::Node*>>;

using query::Node;
using query::NodeKind;

// Markers spelled out, so the expectations below do not depend on the
// constants they test.
const std::string kMsg = "\x01";
const std::string kAttr = "\x02";
const std::string kSep = "\x1f";

Node Term(std::string field, std::string text, bool phrase = false, bool prefix = false) {
  return Node::MakeTerm(query::Term{std::move(field), std::move(text), phrase, prefix}, 0);
}
Node Msg(std::string text) {
  return Term("", std::move(text));
}
Node Not(Node child) {
  return Node::MakeNot(std::move(child), 0);
}
Node Group(NodeKind kind, std::vector<Node> children) {
  return Node{kind, 0, std::move(children), {}};
}
Node And(std::vector<Node> c) {
  return Group(NodeKind::kAnd, std::move(c));
}
Node Or(std::vector<Node> c) {
  return Group(NodeKind::kOr, std::move(c));
}

// The FTS5 string for a message phrase / a field phrase / a field number.
std::string M(const std::string& text) {
  return "\"" + kMsg + text + "\"";
}
std::string FS(const std::string& field, const std::string& text) {
  return "\"" + kAttr + field + kSep + "s" + text + "\"";
}
std::string FN(const std::string& field, const std::string& number) {
  return "\"" + kAttr + field + kSep + "n" + number + "\"";
}
std::string In(int param) {
  return "e.key IN (SELECT rowid FROM fts WHERE fts MATCH ?" + std::to_string(param) + ")";
}

CompiledQuery Compile(const Node& n) {
  auto r = CompileFtsQuery(n);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : CompiledQuery{};
}

struct FtsOnlyCase {
  const char* name;
  Node query;
  std::string fts;
};

TEST(FtsQueryCompilerTest, PositiveQueriesAreOneFtsExpression) {
  const FtsOnlyCase cases[] = {
      {"term", Msg("cuda"), M("cuda")},
      {"term keeps its text; the tokenizer splits it", Msg("cuda:0"), M("cuda:0")},
      {"phrase", Term("", "out of memory", true), M("out of memory")},
      {"message field is the message", Term("message", "oom"), M("oom")},
      {"quotes are doubled", Msg("say\"hi\""), M("say\"\"hi\"\"")},
      {"message prefix names its column", Term("", "cud", false, true),
       "message : " + M("cud") + " *"},
      {"field term", Term("host.name", "gpu-01"), FS("host.name", "gpu-01")},
      {"field phrase", Term("user", "zhang san", true), FS("user", "zhang san")},
      {"field prefix", Term("host.name", "gpu", false, true), FS("host.name", "gpu") + " *"},
      {"numeric prefix has no number form", Term("gpu_id", "1", false, true),
       FS("gpu_id", "1") + " *"},
      {"number: phrase or canonical number", Term("gpu_id", "0"),
       "(" + FS("gpu_id", "0") + " OR " + FN("gpu_id", "0") + ")"},
      {"number canonicalized", Term("loss", "0.50"),
       "(" + FS("loss", "0.50") + " OR " + FN("loss", "0.5") + ")"},
      {"exponent", Term("n", "1e3"), "(" + FS("n", "1e3") + " OR " + FN("n", "1000") + ")"},
      {"negative", Term("delta", "-1"), "(" + FS("delta", "-1") + " OR " + FN("delta", "-1") + ")"},
      {"separators in a field name are replaced",
       Term("a\x1f"
            "b\x1e"
            "c",
            "x"),
       FS("a_b_c", "x")},
      {"and", And({Msg("a"), Msg("b")}), "(" + M("a") + ") AND (" + M("b") + ")"},
      {"or", Or({Msg("a"), Term("f", "b")}), "(" + M("a") + ") OR (" + FS("f", "b") + ")"},
      {"and not", And({Msg("a"), Not(Msg("b"))}), "((" + M("a") + ")) NOT (" + M("b") + ")"},
      {"nested", And({Or({Msg("a"), Msg("b")}), Not(Msg("c")), Msg("d")}),
       "(((" + M("a") + ") OR (" + M("b") + ")) AND (" + M("d") + ")) NOT (" + M("c") + ")"},
  };
  for (const FtsOnlyCase& c : cases) {
    SCOPED_TRACE(c.name);
    const CompiledQuery q = Compile(c.query);
    ASSERT_TRUE(q.fts.has_value());
    EXPECT_EQ(*q.fts, c.fts);
    EXPECT_EQ(q.where, "1");
    EXPECT_TRUE(q.params.empty());
  }
}

TEST(FtsQueryCompilerTest, MatchAllScansByKey) {
  const CompiledQuery q = Compile(Node::MatchAll());
  EXPECT_FALSE(q.fts.has_value());
  EXPECT_EQ(q.where, "1");
  EXPECT_TRUE(q.params.empty());
}

TEST(FtsQueryCompilerTest, PureNegationHasNoDriver) {
  const CompiledQuery q = Compile(Not(Msg("debug")));
  EXPECT_FALSE(q.fts.has_value());
  EXPECT_EQ(q.where, "NOT (" + In(kFirstWhereParam) + ")");
  EXPECT_EQ(q.params, (Params{M("debug")}));
}

TEST(FtsQueryCompilerTest, ConjunctionOfNegations) {
  const CompiledQuery q = Compile(And({Not(Msg("a")), Not(Term("f", "b"))}));
  EXPECT_FALSE(q.fts.has_value());
  EXPECT_EQ(q.where, "(NOT (" + In(10) + ")) AND (NOT (" + In(11) + "))");
  EXPECT_EQ(q.params, (Params{M("a"), FS("f", "b")}));
}

TEST(FtsQueryCompilerTest, OrWithNegationIsAnSqlCondition) {
  const CompiledQuery q = Compile(Or({Msg("a"), Not(Msg("b"))}));
  EXPECT_FALSE(q.fts.has_value());
  EXPECT_EQ(q.where, "(" + In(10) + ") OR (NOT (" + In(11) + "))");
  EXPECT_EQ(q.params, (Params{M("a"), M("b")}));
}

TEST(FtsQueryCompilerTest, PositiveConjunctsDriveTheRestFilters) {
  // a AND (b OR NOT c): FTS5 finds `a`, SQL filters the disjunction.
  const CompiledQuery q = Compile(And({Msg("a"), Or({Msg("b"), Not(Msg("c"))})}));
  ASSERT_TRUE(q.fts.has_value());
  EXPECT_EQ(*q.fts, M("a"));
  EXPECT_EQ(q.where, "((" + In(10) + ") OR (NOT (" + In(11) + ")))");
  EXPECT_EQ(q.params, (Params{M("b"), M("c")}));

  // a AND NOT b AND (c OR NOT d): the driver keeps a's negation.
  const CompiledQuery q2 = Compile(And({Msg("a"), Not(Msg("b")), Or({Msg("c"), Not(Msg("d"))})}));
  ASSERT_TRUE(q2.fts.has_value());
  EXPECT_EQ(*q2.fts, "((" + M("a") + ")) NOT (" + M("b") + ")");
  EXPECT_EQ(q2.params, (Params{M("c"), M("d")}));
}

TEST(FtsQueryCompilerTest, QueryTextNeverReachesTheSql) {
  const std::string hostile[] = {
      "'); DROP TABLE events; --", "\"", "NEAR(a b)", "*", "^x", "message: x", "a\" OR \"b"};
  for (const std::string& text : hostile) {
    SCOPED_TRACE(text);
    const CompiledQuery pos = Compile(Term("", text, true));
    ASSERT_TRUE(pos.fts.has_value());
    std::string quoted = "\"";
    for (char c : kMsg + text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
    EXPECT_EQ(*pos.fts, quoted + "\"");

    const CompiledQuery neg = Compile(Not(Term("f", text)));
    EXPECT_EQ(neg.where, "NOT (" + In(10) + ")");
    ASSERT_EQ(neg.params.size(), 1u);
  }
}

TEST(FtsQueryCompilerTest, QuoteFtsString) {
  EXPECT_EQ(QuoteFtsString(""), "\"\"");
  EXPECT_EQ(QuoteFtsString("abc"), "\"abc\"");
  EXPECT_EQ(QuoteFtsString("a\"b"), "\"a\"\"b\"");
  EXPECT_EQ(QuoteFtsString("\"\""), "\"\"\"\"\"\"");
  EXPECT_EQ(QuoteFtsString("it's *"), "\"it's *\"");
}

TEST(AttrsCodecTest, CanonicalNumberText) {
  struct Case {
    const char* text;
    std::optional<std::string> want;
  };
  const Case cases[] = {
      {"0", "0"},
      {"0.50", "0.5"},
      {"7.0", "7"},
      {"-1", "-1"},
      {"-0", "0"},
      {"-0.0", "0"},
      {"1e3", "1000"},
      {"1.5e-3", "0.0015"},
      {"0.1", "0.1"},
      {"1e20", "1e+20"},
      {"9007199254740993", "9007199254740993"},  // integers stay exact
      {"abc", std::nullopt},
      {"", std::nullopt},
      {"12abc", std::nullopt},
      {" 1", std::nullopt},
      {"+1", std::nullopt},
      {"0x10", std::nullopt},
      {"nan", std::nullopt},
      {"inf", std::nullopt},
      {"1e400", std::nullopt},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    EXPECT_EQ(CanonicalNumberText(c.text), c.want);
  }
}

TEST(AttrsCodecTest, CanonicalFormsOfStoredNumbers) {
  EXPECT_EQ(CanonicalInteger(-3), "-3");
  EXPECT_EQ(CanonicalDouble(0.0), "0");
  EXPECT_EQ(CanonicalDouble(12.0), "12");
  EXPECT_EQ(CanonicalDouble(0.043), "0.043");
  EXPECT_EQ(CanonicalDouble(1e20), "1e+20");
  // A number written in a query and the same number stored agree.
  EXPECT_EQ(CanonicalNumberText("0.0430"), CanonicalDouble(0.043));
}

TEST(AttrsCodecTest, EncodesRecordsWithoutForgeableSeparators) {
  std::vector<Field> fields = {{"host.name", Field::Type::kString, "gpu-01", 0},
                               {"gpu_id", Field::Type::kNumber, "0", 0},
                               {"evil\x1e"
                                "name",
                                Field::Type::kString, "x\x1fy\x1ez", 0}};
  std::string out;
  EncodeAttrs(fields, "logs", out);
  EXPECT_EQ(out, kAttr + "_index" + kSep + "slogs" + "\x1e" + "host.name" + kSep + "sgpu-01" +
                     "\x1e" + "gpu_id" + kSep + "n0" + "\x1e" + "evil_name" + kSep + "sx y z");

  std::string msg;
  EncodeMessage("hello", msg);
  EXPECT_EQ(msg, kMsg + "hello");
  EXPECT_EQ(EncodeFieldPhrase("a\x1f"
                              "b",
                              "v\x1e"),
            kAttr + "a_b" + kSep + "sv ");
  EXPECT_EQ(EncodeFieldNumber("n", "1.5"), kAttr + "n" + kSep + "n1.5");
}

}  // namespace
}  // namespace dashcam::storage
