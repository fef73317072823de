// Tests for api::ParseQuery: what each query text parses to (as
// query::DebugString), the exact position and reason of every error, the
// limits, and that random bytes never crash the parser.
#include "api/query_parser.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "storage/query_ast.h"

namespace dashcam::api {
namespace {

using query::Node;
using query::NodeKind;

// The DebugString of the parse, or "error@<position>: <reason>".
std::string Show(std::string_view text, const ParseLimits& limits = {}) {
  auto parsed = ParseQuery(text, limits);
  if (const auto* error = std::get_if<QueryError>(&parsed)) {
    return "error@" + std::to_string(error->position) + ": " + error->reason;
  }
  return query::DebugString(std::get<Node>(parsed));
}

Node MustParse(std::string_view text) {
  auto parsed = ParseQuery(text);
  if (const auto* error = std::get_if<QueryError>(&parsed)) {
    ADD_FAILURE() << "parse of `" << text << "` failed: " << error->reason;
    return Node::MatchAll();
  }
  return std::get<Node>(std::move(parsed));
}

struct ParseCase {
  const char* text;
  const char* expected;  // DebugString
};

class ParseQueryValid : public testing::TestWithParam<ParseCase> {};

TEST_P(ParseQueryValid, GivesExpectedTree) {
  EXPECT_EQ(Show(GetParam().text), GetParam().expected) << "query: " << GetParam().text;
}

INSTANTIATE_TEST_SUITE_P(MatchAll, ParseQueryValid,
                         testing::Values(ParseCase{"", "*"}, ParseCase{"   \t\n ", "*"},
                                         ParseCase{"*", "*"}, ParseCase{"*:*", "*"},
                                         ParseCase{"  *  ", "*"},
                                         ParseCase{"* cuda", "(AND * cuda)"}));

INSTANTIATE_TEST_SUITE_P(
    Terms, ParseQueryValid,
    testing::Values(ParseCase{"cuda", "cuda"}, ParseCase{"CUDA", "CUDA"},
                    ParseCase{"\"CUDA out of memory\"", "\"CUDA out of memory\""},
                    ParseCase{"user:zhangsan", "user:zhangsan"},
                    ParseCase{"user:\"zhang san\"", "user:\"zhang san\""},
                    ParseCase{"host.name:gpu-01", "host.name:gpu-01"},
                    ParseCase{"log.file.path:\"/var/log/syslog\"",
                              "log.file.path:\"/var/log/syslog\""},
                    ParseCase{"@timestamp:2024", "@timestamp:2024"},
                    ParseCase{"kubernetes.pod_name:web-7f9", "kubernetes.pod_name:web-7f9"},
                    ParseCase{"message:cuda", "message:cuda"}, ParseCase{"gpu_id:0", "gpu_id:0"},
                    ParseCase{"delta:-1", "delta:-1"}, ParseCase{"ratio:-0.5", "ratio:-0.5"},
                    ParseCase{"code:\"-1\"", "code:\"-1\""}, ParseCase{"f:a:b", "f:a\\:b"},
                    ParseCase{"a-b", "a-b"}, ParseCase{"oops!", "oops!"},
                    ParseCase{":foo", "\\:foo"}, ParseCase{"显存不足", "显存不足"},
                    ParseCase{"user:张三", "user:张三"},
                    ParseCase{"and or not", "(AND and or not)"}, ParseCase{"And", "And"},
                    ParseCase{"ANDROID", "ANDROID"}, ParseCase{"AND:x", "AND:x"}));

INSTANTIATE_TEST_SUITE_P(
    Prefixes, ParseQueryValid,
    testing::Values(ParseCase{"cud*", "cud*"}, ParseCase{"host.name:gpu*", "host.name:gpu*"},
                    ParseCase{"\"out of mem\"*", "\"out of mem\"*"},
                    ParseCase{"user:\"zhang s\"*", "user:\"zhang s\"*"},
                    ParseCase{"(cud*)", "cud*"}, ParseCase{"cud* OR gpu", "(OR cud* gpu)"},
                    ParseCase{"\"cud*\"", "\"cud*\""}, ParseCase{"AND*", "\\AND*"}));

INSTANTIATE_TEST_SUITE_P(
    Escapes, ParseQueryValid,
    testing::Values(
        ParseCase{"cud\\*", "cud\\*"}, ParseCase{"cud\\**", "cud\\**"}, ParseCase{"a\\:b", "a\\:b"},
        ParseCase{"a\\ b", "a\\ b"}, ParseCase{"\\(a\\)", "\\(a\\)"}, ParseCase{"a\\\"b", "a\\\"b"},
        ParseCase{"a\\\\b", "a\\\\b"}, ParseCase{"\\AND", "\\AND"}, ParseCase{"\\-cuda", "\\-cuda"},
        ParseCase{"\\/var/log", "\\/var/log"}, ParseCase{"path:\\/var/log", "path:\\/var/log"},
        ParseCase{"cu\\?a", "cu\\?a"}, ParseCase{"\\[1\\]", "\\[1\\]"}, ParseCase{"\\x", "x"},
        ParseCase{"\"say \\\"hi\\\"\"", "\"say \\\"hi\\\"\""},
        ParseCase{"\"back\\\\slash\"", "\"back\\\\slash\""}, ParseCase{"\"a\\b\"", "\"ab\""},
        ParseCase{"user:\\\"x\\\"", "user:\\\"x\\\""}));

INSTANTIATE_TEST_SUITE_P(
    Operators, ParseQueryValid,
    testing::Values(ParseCase{"message:\"CUDA out of memory\" AND user:zhangsan",
                              "(AND message:\"CUDA out of memory\" user:zhangsan)"},
                    ParseCase{"\"cuda\" user:\"zhangsan\"", "(AND \"cuda\" user:\"zhangsan\")"},
                    ParseCase{"a b", "(AND a b)"}, ParseCase{"a AND b", "(AND a b)"},
                    ParseCase{"a OR b", "(OR a b)"}, ParseCase{"NOT a", "(NOT a)"},
                    ParseCase{"a  \t AND\n b", "(AND a b)"}, ParseCase{"a\u3000b", "(AND a b)"},
                    ParseCase{"a\u00A0b", "(AND a b)"}, ParseCase{"a(b)", "(AND a b)"},
                    ParseCase{"a\"b c\"", "(AND a \"b c\")"},
                    ParseCase{"\"a\"\"b\"", "(AND \"a\" \"b\")"},
                    ParseCase{"\"a\"b", "(AND \"a\" b)"}, ParseCase{"NOT(a)", "(NOT a)"},
                    ParseCase{"NOT\"a b\"", "(NOT \"a b\")"},
                    ParseCase{"a AND b AND c", "(AND a b c)"}));

INSTANTIATE_TEST_SUITE_P(Precedence, ParseQueryValid,
                         testing::Values(ParseCase{"a OR b AND c", "(OR a (AND b c))"},
                                         ParseCase{"a AND b OR c", "(OR (AND a b) c)"},
                                         ParseCase{"a OR b c OR d", "(OR a (AND b c) d)"},
                                         ParseCase{"NOT a b", "(AND (NOT a) b)"},
                                         ParseCase{"NOT a OR b", "(OR (NOT a) b)"},
                                         ParseCase{"a OR NOT b c", "(OR a (AND (NOT b) c))"},
                                         ParseCase{"NOT NOT a", "(NOT (NOT a))"},
                                         ParseCase{"NOT (a OR b)", "(NOT (OR a b))"},
                                         ParseCase{"(a OR b) c", "(AND (OR a b) c)"},
                                         ParseCase{"x (a OR b) AND y", "(AND x (OR a b) y)"},
                                         ParseCase{"a AND NOT b", "(AND a (NOT b))"}));

INSTANTIATE_TEST_SUITE_P(Grouping, ParseQueryValid,
                         testing::Values(ParseCase{"(a)", "a"}, ParseCase{"((a))", "a"},
                                         ParseCase{"( a )", "a"},
                                         ParseCase{"a AND (b AND c)", "(AND a b c)"},
                                         ParseCase{"(a b) (c d)", "(AND a b c d)"},
                                         ParseCase{"a OR (b OR (c OR d))", "(OR a b c d)"},
                                         ParseCase{"(a OR b) OR (c AND d)", "(OR a b (AND c d))"},
                                         ParseCase{"a (b OR c) d", "(AND a (OR b c) d)"},
                                         ParseCase{"NOT (a b) c", "(AND (NOT (AND a b)) c)"}));

struct ErrorCase {
  const char* text;
  std::size_t position;
  const char* reason;  // a substring of QueryError::reason
};

class ParseQueryError : public testing::TestWithParam<ErrorCase> {};

TEST_P(ParseQueryError, ReportsPositionAndReason) {
  const ErrorCase& c = GetParam();
  auto parsed = ParseQuery(c.text);
  const auto* error = std::get_if<QueryError>(&parsed);
  ASSERT_NE(error, nullptr) << "query: " << c.text << " parsed as " << Show(c.text);
  EXPECT_EQ(error->position, c.position) << "query: " << c.text << " reason: " << error->reason;
  EXPECT_NE(error->reason.find(c.reason), std::string::npos)
      << "query: " << c.text << " reason: " << error->reason;
}

INSTANTIATE_TEST_SUITE_P(
    Parentheses, ParseQueryError,
    testing::Values(ErrorCase{"(a", 2, "expected ')' to close the '(' at byte 0"},
                    ErrorCase{"(a OR b", 7, "expected ')'"}, ErrorCase{"((a)", 4, "expected ')'"},
                    ErrorCase{"x (a ", 5, "expected ')' to close the '(' at byte 2"},
                    ErrorCase{"a)", 1, "unexpected ')'"}, ErrorCase{")", 0, "unexpected ')'"},
                    ErrorCase{"(a))", 3, "unexpected ')'"}, ErrorCase{") a", 0, "unexpected ')'"},
                    ErrorCase{"()", 1, "expected a term after '('"},
                    ErrorCase{"(", 1, "expected a term after '('"}));

INSTANTIATE_TEST_SUITE_P(DanglingOperators, ParseQueryError,
                         testing::Values(ErrorCase{"a AND", 5, "expected a term after AND"},
                                         ErrorCase{"a AND ", 6, "expected a term after AND"},
                                         ErrorCase{"a OR", 4, "expected a term after OR"},
                                         ErrorCase{"NOT", 3, "expected a term after NOT"},
                                         ErrorCase{"a NOT", 5, "expected a term after NOT"},
                                         ErrorCase{"a AND OR b", 6, "expected a term after AND"},
                                         ErrorCase{"a OR AND b", 5, "expected a term after OR"},
                                         ErrorCase{"a AND )", 6, "expected a term after AND"},
                                         ErrorCase{"(a AND)", 6, "expected a term after AND"},
                                         ErrorCase{"NOT )", 4, "expected a term after NOT"},
                                         ErrorCase{"AND a", 0, "expected a term before AND"},
                                         ErrorCase{"OR a", 0, "expected a term before OR"},
                                         ErrorCase{"(AND a)", 1, "expected a term before AND"},
                                         ErrorCase{"a && b", 2, "'&&' is not supported; write AND"},
                                         ErrorCase{"a || b", 2,
                                                   "'||' is not supported; write OR"}));

INSTANTIATE_TEST_SUITE_P(
    Values, ParseQueryError,
    testing::Values(ErrorCase{"user:", 5, "expected a value after 'user:'"},
                    ErrorCase{"user: zhang", 5, "expected a value after 'user:'"},
                    ErrorCase{"(host.name:)", 11, "expected a value after 'host.name:'"},
                    ErrorCase{"\"abc", 4, "unterminated phrase: expected '\"'"},
                    ErrorCase{"user:\"abc", 9,
                              "unterminated phrase: expected '\"' to close the one at byte 5"},
                    ErrorCase{"\"a\\\"", 4, "unterminated phrase"},
                    ErrorCase{"a\\", 1, "trailing backslash"},
                    ErrorCase{"\"a\\", 2, "trailing backslash"},
                    ErrorCase{"user:\\", 5, "trailing backslash"}));

INSTANTIATE_TEST_SUITE_P(
    NoTokens, ParseQueryError,
    testing::Values(ErrorCase{"\"!!\"", 0, "term has no letters or digits to search"},
                    ErrorCase{":-)", 0, "term has no letters or digits to search"},
                    ErrorCase{"a \"!!\"", 2, "term has no letters or digits to search"},
                    ErrorCase{"user:\"!!\"", 0, "term has no letters or digits to search"},
                    ErrorCase{"a user:...", 2, "term has no letters or digits to search"},
                    ErrorCase{"x:\\-", 0, "term has no letters or digits to search"},
                    ErrorCase{"\"\"", 0, "term has no letters or digits to search"},
                    ErrorCase{"...", 0, "term has no letters or digits to search"},
                    ErrorCase{"\\*", 0, "term has no letters or digits to search"}));

INSTANTIATE_TEST_SUITE_P(
    Unsupported, ParseQueryError,
    testing::Values(
        ErrorCase{"[1 TO 5]", 0, "range queries are not supported yet"},
        ErrorCase{"size:[1 TO 5]", 5, "range queries"},
        ErrorCase{"size:{1 TO 5}", 5, "range queries"}, ErrorCase{"{a TO b}", 0, "range queries"},
        ErrorCase{"age:>5", 4, "range queries"}, ErrorCase{"age:<=5", 4, "range queries"},
        ErrorCase{">5", 0, "range queries"}, ErrorCase{"arr[0]", 3, "range queries"},
        ErrorCase{"/cu.a/", 0, "regular expressions (/.../) are not supported yet"},
        ErrorCase{"path:/var/log", 5, "regular expressions"},
        ErrorCase{"cuda~", 4, "fuzzy and proximity queries (~) are not supported yet"},
        ErrorCase{"cuda~2", 4, "fuzzy and proximity"},
        ErrorCase{"\"a b\"~3", 5, "fuzzy and proximity"},
        ErrorCase{"cuda^2", 4, "boosts (^) are not supported yet"},
        ErrorCase{"\"a b\"^2", 5, "boosts"}, ErrorCase{"cu?a", 2, "wildcard queries"},
        ErrorCase{"cu*a", 2, "wildcard queries"}, ErrorCase{"*cuda", 0, "wildcard queries"},
        ErrorCase{"**", 0, "wildcard queries"},
        ErrorCase{"user:*", 0, "existence queries (field:*) are not supported yet"},
        ErrorCase{"a OR user:*", 5, "existence queries (field:*) are not supported yet"},
        ErrorCase{"_exists_:user", 0, "existence queries (_exists_:field)"},
        ErrorCase{"a AND _exists_:user", 6, "existence queries"},
        ErrorCase{"user:(a b)", 5, "field groups (field:(a b)) are not supported yet"},
        ErrorCase{"-cuda", 0, "the prefix operator '-' is not supported yet"},
        ErrorCase{"a +cuda", 2, "the prefix operator '+'"},
        ErrorCase{"!cuda", 0, "the prefix operator '!'"}));

TEST(ParseQueryTest, PositionsAreWhereClausesStart) {
  const std::string text = "message:\"CUDA out of memory\" AND NOT user:zhangsan";
  const Node root = MustParse(text);
  ASSERT_EQ(root.kind, NodeKind::kAnd);
  ASSERT_EQ(root.children.size(), 2u);
  EXPECT_EQ(root.position, 0u);
  EXPECT_EQ(root.children[0].position, 0u);
  const Node& negation = root.children[1];
  ASSERT_EQ(negation.kind, NodeKind::kNot);
  EXPECT_EQ(negation.position, text.find("NOT"));
  EXPECT_EQ(negation.children[0].position, text.find("user"));
}

TEST(ParseQueryTest, TermFieldsAreUnescaped) {
  const Node phrase = MustParse("message:\"CUDA out of \\\"memory\\\"\"");
  ASSERT_EQ(phrase.kind, NodeKind::kTerm);
  EXPECT_EQ(phrase.term.field, "message");
  EXPECT_EQ(phrase.term.text, "CUDA out of \"memory\"");
  EXPECT_TRUE(phrase.term.phrase);
  EXPECT_FALSE(phrase.term.prefix);

  const Node prefix = MustParse("cud*");
  EXPECT_EQ(prefix.term.field, "");
  EXPECT_EQ(prefix.term.text, "cud");
  EXPECT_TRUE(prefix.term.prefix);
  EXPECT_FALSE(prefix.term.phrase);

  EXPECT_EQ(MustParse("a\\:b\\*").term.text, "a:b*");
}

TEST(ParseQueryTest, RejectsTextOverMaxBytes) {
  EXPECT_EQ(Show(std::string(16384, 'a')), std::string(16384, 'a'));
  EXPECT_EQ(Show(std::string(16385, 'a')), "error@16384: query is longer than 16384 bytes");
  EXPECT_EQ(Show("cuda gpu", ParseLimits{.max_bytes = 4}), "error@4: query is longer than 4 bytes");
}

TEST(ParseQueryTest, RejectsNestingOverMaxDepth) {
  auto nested = [](int depth) { return std::string(depth, '(') + "a" + std::string(depth, ')'); };
  EXPECT_EQ(Show(nested(64)), "a");
  EXPECT_EQ(Show(nested(65)), "error@64: query nests deeper than 64 levels");

  std::string nots;
  for (int i = 0; i < 65; ++i) nots += "NOT ";
  EXPECT_EQ(Show(nots + "a"), "error@256: query nests deeper than 64 levels");

  const ParseLimits shallow{.max_depth = 2};
  EXPECT_EQ(Show("NOT (a)", shallow), "(NOT a)");
  EXPECT_EQ(Show("NOT (NOT a)", shallow), "error@5: query nests deeper than 2 levels");
  EXPECT_EQ(Show("(a) (b) NOT (c)", shallow), "(AND a b (NOT c))");
}

TEST(ParseQueryTest, HugeLimitsAreCapped) {
  const ParseLimits huge{.max_bytes = 1 << 20, .max_depth = 1 << 20};
  EXPECT_EQ(Show(std::string(100000, '('), huge), "error@256: query nests deeper than 256 levels");
}

// DebugString of a Term is query text that parses back to the same Term.
TEST(DebugStringTest, TermFormParsesBack) {
  for (const char* text : {"a\\ b\\:c", "\\AND", "\\-1", "f:\\/x", "\"q\\\"\\\\\"*", "x\\*\\*",
                           "a\\\u3000b", "\\&&x", "message:x\\(", "\\:-\\)1"}) {
    const Node first = MustParse(text);
    ASSERT_EQ(first.kind, NodeKind::kTerm) << text;
    const Node second = MustParse(query::DebugString(first));
    ASSERT_EQ(second.kind, NodeKind::kTerm) << text;
    EXPECT_EQ(second.term.field, first.term.field) << text;
    EXPECT_EQ(second.term.text, first.term.text) << text;
    EXPECT_EQ(second.term.phrase, first.term.phrase) << text;
    EXPECT_EQ(second.term.prefix, first.term.prefix) << text;
  }
}

TEST(DebugStringTest, ShowsEveryKind) {
  Node root{NodeKind::kOr, 0, {}, {}};
  root.children.push_back(Node::MatchAll());
  root.children.push_back(Node::MakeNot(Node::MakeTerm({"", "a b", false, true}, 0), 0));
  root.children.push_back(Node::MakeTerm({"user", "x \"y\"", true, false}, 0));
  EXPECT_EQ(query::DebugString(root), "(OR * (NOT a\\ b*) user:\"x \\\"y\\\"\")");
}

// Checks the shape promised by query_ast.h and that every Term round-trips
// through DebugString.
void ExpectWellFormed(const Node& node, std::string_view text) {
  switch (node.kind) {
    case NodeKind::kMatchAll:
      EXPECT_TRUE(node.children.empty()) << text;
      break;
    case NodeKind::kRange:
      ADD_FAILURE() << "the query language has no ranges yet: " << text;
      break;
    case NodeKind::kNot:
      EXPECT_EQ(node.children.size(), 1u) << text;
      break;
    case NodeKind::kAnd:
    case NodeKind::kOr:
      EXPECT_GE(node.children.size(), 2u) << text;
      for (const Node& child : node.children) EXPECT_NE(child.kind, node.kind) << text;
      break;
    case NodeKind::kTerm: {
      EXPECT_TRUE(node.children.empty()) << text;
      const Node again = MustParse(query::DebugString(node));
      EXPECT_EQ(again.kind, NodeKind::kTerm) << text;
      EXPECT_EQ(again.term.text, node.term.text) << text;
      EXPECT_EQ(again.term.field, node.term.field) << text;
      break;
    }
  }
  EXPECT_LE(node.position, text.size()) << text;
  for (const Node& child : node.children) ExpectWellFormed(child, text);
}

// Mostly query syntax, sometimes any byte, so the fuzz reaches deep paths.
std::string RandomQuery(std::mt19937& rng) {
  static constexpr std::string_view kPieces[] = {"a",
                                                 "cuda",
                                                 "AND",
                                                 "OR",
                                                 "NOT",
                                                 "(",
                                                 ")",
                                                 "\"",
                                                 "\\",
                                                 ":",
                                                 "*",
                                                 "?",
                                                 "~",
                                                 "^",
                                                 "[",
                                                 "]",
                                                 "{",
                                                 "}",
                                                 "/",
                                                 "<",
                                                 ">",
                                                 "-",
                                                 "+",
                                                 "!",
                                                 "&&",
                                                 " ",
                                                 "host.",
                                                 "@ts:",
                                                 "1",
                                                 "\t",
                                                 "显",
                                                 "\xE3\x80\x80",
                                                 "\xC2",
                                                 "\xA0",
                                                 "_exists_:",
                                                 "*:*",
                                                 std::string_view("\0", 1)};
  std::uniform_int_distribution<int> length(0, 24);
  std::uniform_int_distribution<std::size_t> piece(0, std::size(kPieces) - 1);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_int_distribution<int> coin(0, 9);
  std::string out;
  for (int n = length(rng); n > 0; --n) {
    if (coin(rng) == 0) {
      out += static_cast<char>(byte(rng));
    } else {
      out += kPieces[piece(rng)];
    }
  }
  return out;
}

TEST(ParseQueryFuzzTest, RandomInputNeverCrashes) {
  std::mt19937 rng(20240601);  // fixed: failures must reproduce
  std::uniform_int_distribution<int> byte(0, 255);
  for (int i = 0; i < 4000; ++i) {
    std::string text = RandomQuery(rng);
    if (i % 4 == 0) {  // raw bytes too
      text.clear();
      for (int n = i % 97; n > 0; --n) text += static_cast<char>(byte(rng));
    }
    const ParseLimits limits{.max_bytes = 16 * 1024, .max_depth = i % 2 == 0 ? 64u : 3u};
    auto parsed = ParseQuery(text, limits);
    if (const auto* error = std::get_if<QueryError>(&parsed)) {
      EXPECT_LE(error->position, text.size()) << text;
      EXPECT_FALSE(error->reason.empty()) << text;
    } else {
      ExpectWellFormed(std::get<Node>(parsed), text);
    }
  }
}

}  // namespace
}  // namespace dashcam::api
