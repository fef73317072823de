// Tests for api::ParseQuery: what each query text parses to (as
// query::DebugString), the exact position and reason of every error, the
// limits, and that random bytes never crash the parser. Dates resolve
// against kNow (2026-11-29T12:34:56.789Z, a Sunday).
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

constexpr TimeMs kNow = 1795955696789;

ParseLimits Limits() {
  ParseLimits limits;
  limits.now = kNow;
  return limits;
}

// The DebugString of the parse, or "error@<position>: <reason>".
std::string Show(std::string_view text, const ParseLimits& limits = Limits()) {
  auto parsed = ParseQuery(text, limits);
  if (const auto* error = std::get_if<QueryError>(&parsed)) {
    return "error@" + std::to_string(error->position) + ": " + error->reason;
  }
  return query::DebugString(std::get<Node>(parsed));
}

Node MustParse(std::string_view text) {
  auto parsed = ParseQuery(text, Limits());
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
    testing::Values(
        ParseCase{"cuda", "cuda"}, ParseCase{"CUDA", "CUDA"},
        ParseCase{"\"CUDA out of memory\"", "\"CUDA out of memory\""},
        ParseCase{"user:zhangsan", "user:zhangsan"},
        ParseCase{"user:\"zhang san\"", "user:\"zhang san\""},
        ParseCase{"host.name:gpu-01", "host.name:gpu-01"},
        ParseCase{"log.file.path:\"/var/log/syslog\"", "log.file.path:\"/var/log/syslog\""},
        ParseCase{"@timestamp:2024", "@timestamp:[1704067200000 TO 1735689599999]"},
        ParseCase{"kubernetes.pod_name:web-7f9", "kubernetes.pod_name:web-7f9"},
        ParseCase{"message:cuda", "message:cuda"}, ParseCase{"gpu_id:0", "gpu_id:0"},
        ParseCase{"delta:-1", "delta:-1"}, ParseCase{"ratio:-0.5", "ratio:-0.5"},
        ParseCase{"code:\"-1\"", "code:\"-1\""}, ParseCase{"f:a:b", "f:a\\:b"},
        ParseCase{"a-b", "a-b"}, ParseCase{"oops!", "oops!"}, ParseCase{":foo", "\\:foo"},
        ParseCase{"显存不足", "显存不足"}, ParseCase{"user:张三", "user:张三"},
        ParseCase{"\\and \\or \\not", "(AND \\and \\or \\not)"}, ParseCase{"\"and\"", "\"and\""},
        ParseCase{"And", "And"}, ParseCase{"nothing", "nothing"}, ParseCase{"android", "android"},
        ParseCase{"ANDROID", "ANDROID"}, ParseCase{"AND:x", "AND:x"}));

INSTANTIATE_TEST_SUITE_P(
    Prefixes, ParseQueryValid,
    testing::Values(ParseCase{"cud*", "cud*"}, ParseCase{"host.name:gpu*", "host.name:gpu*"},
                    ParseCase{"\"out of mem\"*", "\"out of mem\"*"},
                    ParseCase{"user:\"zhang s\"*", "user:\"zhang s\"*"},
                    ParseCase{"(cud*)", "cud*"}, ParseCase{"cud* OR gpu", "(OR cud* gpu)"},
                    ParseCase{"\"cud*\"", "\"cud*\""}, ParseCase{"AND*", "\\AND*"},
                    ParseCase{"显存*", "显存*"},
                    ParseCase{"cuda^2*", "error@6: expected a space after the boost"}));

INSTANTIATE_TEST_SUITE_P(
    Escapes, ParseQueryValid,
    testing::Values(
        ParseCase{"cud\\*", "cud\\*"}, ParseCase{"cud\\**", "cud\\ *"}, ParseCase{"a\\:b", "a\\:b"},
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

INSTANTIATE_TEST_SUITE_P(
    OperatorSpellings, ParseQueryValid,
    testing::Values(ParseCase{"a && b", "(AND a b)"}, ParseCase{"a || b", "(OR a b)"},
                    ParseCase{"a &&b", "(AND a b)"}, ParseCase{"a ||b", "(OR a b)"},
                    ParseCase{"!a", "(NOT a)"}, ParseCase{"! a", "(NOT a)"},
                    ParseCase{"!!a", "(NOT (NOT a))"}, ParseCase{"a and b", "(AND a b)"},
                    ParseCase{"a or b and c", "(OR a (AND b c))"}, ParseCase{"not a", "(NOT a)"},
                    ParseCase{"a && !b || c", "(OR (AND a (NOT b)) c)"}, ParseCase{"a&&b", "a&&b"},
                    ParseCase{"oops!", "oops!"}, ParseCase{"a AND not b", "(AND a (NOT b))"}));

INSTANTIATE_TEST_SUITE_P(
    Marks, ParseQueryValid,
    testing::Values(
        ParseCase{"+a -b c", "(AND a (NOT b) c)"}, ParseCase{"-a", "(NOT a)"}, ParseCase{"+a", "a"},
        ParseCase{"-a -b", "(AND (NOT a) (NOT b))"}, ParseCase{"a OR -b", "(AND a (NOT b))"},
        ParseCase{"a OR +b", "b"}, ParseCase{"a OR +b OR -c", "(AND b (NOT c))"},
        ParseCase{"a OR b OR -c", "(AND (OR a b) (NOT c))"},
        ParseCase{"-a OR NOT b", "(AND (NOT b) (NOT a))"},
        ParseCase{"a OR NOT b", "(OR a (NOT b))"}, ParseCase{"-(a b)", "(NOT (AND a b))"},
        ParseCase{"-\"a b\"", "(NOT \"a b\")"}, ParseCase{"+(a OR b) c", "(AND (OR a b) c)"},
        ParseCase{"(+a) OR b", "(OR a b)"}, ParseCase{"(a OR -b) OR c", "(OR (AND a (NOT b)) c)"},
        ParseCase{"-user:bob", "(NOT user:bob)"}, ParseCase{"delta:-1", "delta:-1"},
        ParseCase{"a-b", "a-b"}, ParseCase{"-NOT a", "(NOT (NOT a))"},
        ParseCase{"+-1", "error@1: expected a term right after '+'"}));

TEST(ParseQueryTest, MarksFollowLuceneWithDefaultOperatorOr) {
  ParseLimits any = Limits();
  any.default_operator_or = true;
  EXPECT_EQ(Show("+a b -c", any), "(AND a (NOT c))");
  EXPECT_EQ(Show("a b -c", any), "(AND (OR a b) (NOT c))");
  EXPECT_EQ(Show("-a -b", any), "(AND (NOT a) (NOT b))");
  EXPECT_EQ(Show("a b", any), "(OR a b)");
  EXPECT_EQ(Show("a b AND c", any), "(OR a (AND b c))");
  EXPECT_EQ(Show("+a AND b c", any), "(OR (AND a b) c)");
}

TEST(ParseQueryTest, LowercaseOperatorsCanBeWords) {
  ParseLimits lucene = Limits();
  lucene.lowercase_operators = false;
  // DebugString escapes them so that its text parses back with the default.
  EXPECT_EQ(Show("a and b or not c", lucene), "(AND a \\and b \\or \\not c)");
  EXPECT_EQ(Show("a AND b", lucene), "(AND a b)");
  EXPECT_EQ(Show("a and b"), "(AND a b)");
}

INSTANTIATE_TEST_SUITE_P(
    FieldGroups, ParseQueryValid,
    testing::Values(ParseCase{"level:(ERROR OR WARN)", "(OR level:ERROR level:WARN)"},
                    ParseCase{"user:(alice bob)", "(AND user:alice user:bob)"},
                    ParseCase{"user:(alice -bob)", "(AND user:alice (NOT user:bob))"},
                    ParseCase{"level:(ERROR OR (WARN AND NOT x))",
                              "(OR level:ERROR (AND level:WARN (NOT level:x)))"},
                    ParseCase{"f:(\"a b\" OR c*)", "(OR f:\"a b\" f:c*)"},
                    ParseCase{"f:(*)", "_exists_:f"},
                    ParseCase{"f:(>5 OR [1 TO 2])", "(OR f:{5 TO *] f:[1 TO 2])"},
                    ParseCase{"f:(/a.b/ OR c?d)", "(OR f:/a.b/ f:c?d)"},
                    ParseCase{"f:(zhang~1)", "f:zhang~1"}, ParseCase{"f:(a)^2 b", "(AND f:a b)"},
                    ParseCase{"(f:(a) b)", "(AND f:a b)"},
                    ParseCase{"f:(a) OR g:(b)", "(OR f:a g:b)"},
                    ParseCase{"@timestamp:(2026-11-29 OR 2026-11-30)",
                              "(OR @timestamp:[1795910400000 TO 1795996799999] "
                              "@timestamp:[1795996800000 TO 1796083199999])"}));

INSTANTIATE_TEST_SUITE_P(
    Wildcards, ParseQueryValid,
    testing::Values(ParseCase{"cud?", "cud?"}, ParseCase{"*memory", "*memory"},
                    ParseCase{"c*a", "c*a"}, ParseCase{"?", "?"}, ParseCase{"c?d*", "c?d*"},
                    ParseCase{"host.name:gpu-node-*", "host.name:gpu-node-*"},
                    ParseCase{"_index:filebeat-*", "_index:filebeat-*"},
                    ParseCase{"cud\\?*", "cud\\ *"}, ParseCase{"a\\*b?", "a\\ b?"},
                    ParseCase{"**", "*"}, ParseCase{"f:**", "_exists_:f"}, ParseCase{"显*", "显*"},
                    ParseCase{"显?", "显?"}, ParseCase{"NOT *mem* OR x", "(OR (NOT *mem*) x)"}));

INSTANTIATE_TEST_SUITE_P(
    Regexes, ParseQueryValid,
    testing::Values(ParseCase{"/cu.a/", "/cu.a/"},
                    ParseCase{"message:/CUDA error: (out of memory|illegal memory access)/",
                              "message:/CUDA error: (out of memory|illegal memory access)/"},
                    ParseCase{"f:/a\\/b/", "f:/a\\/b/"}, ParseCase{"/a\\.b\\\\/", "/a\\.b\\\\/"},
                    ParseCase{"//", "//"}, ParseCase{"/(?i)oom/^2 x", "(AND /(?i)oom/ x)"},
                    ParseCase{"(/a/)", "/a/"}, ParseCase{"/显存/", "/显存/"}));

INSTANTIATE_TEST_SUITE_P(
    FuzzyAndNear, ParseQueryValid,
    testing::Values(ParseCase{"memroy~1", "memroy~1"}, ParseCase{"memroy~", "memroy~2"},
                    ParseCase{"memroy~0", "memroy~0"}, ParseCase{"user:zhang~1", "user:zhang~1"},
                    ParseCase{"memroy~1^2", "memroy~1"}, ParseCase{"显存~1", "显存~1"},
                    ParseCase{"\"cuda memory\"~3", "\"cuda memory\"~3"},
                    ParseCase{"message:\"a b\"~0", "message:\"a b\"~0"},
                    ParseCase{"\"a b\"~1000^2", "\"a b\"~1000"}));

INSTANTIATE_TEST_SUITE_P(
    Boosts, ParseQueryValid,
    testing::Values(ParseCase{"cuda^2", "cuda"}, ParseCase{"cuda^0.5 x", "(AND cuda x)"},
                    ParseCase{"\"a b\"^2", "\"a b\""}, ParseCase{"(a b)^3", "(AND a b)"},
                    ParseCase{"f:[1 TO 2]^2", "f:[1 TO 2]"}, ParseCase{"cuda\\^2", "cuda\\^2"}));

INSTANTIATE_TEST_SUITE_P(Ranges, ParseQueryValid,
                         testing::Values(ParseCase{"gpu_mem_mb:>10000", "gpu_mem_mb:{10000 TO *]"},
                                         ParseCase{"f:>=5", "f:[5 TO *]"},
                                         ParseCase{"f:<5", "f:[* TO 5}"},
                                         ParseCase{"f:<=-5.5", "f:[* TO -5.5]"},
                                         ParseCase{"loss:[0.5 TO 2]", "loss:[0.5 TO 2]"},
                                         ParseCase{"step:{100 TO *]", "step:{100 TO *]"},
                                         ParseCase{"level:[a TO m}", "level:[a TO m}"},
                                         ParseCase{"f:[  1   TO   2  ]", "f:[1 TO 2]"},
                                         ParseCase{"f:[* TO *]", "f:[* TO *]"},
                                         ParseCase{"f:[\"a b\" TO c\\]]", "f:[a b TO c]]"},
                                         ParseCase{"f:[1 TO 2] x", "(AND f:[1 TO 2] x)"},
                                         ParseCase{"f:>5 AND g:<a", "(AND f:{5 TO *] g:[* TO a})"},
                                         ParseCase{"f:>\"a b\"", "f:{a b TO *]"}));

INSTANTIATE_TEST_SUITE_P(
    ExistsAndMeta, ParseQueryValid,
    testing::Values(ParseCase{"_exists_:gpu_id", "_exists_:gpu_id"},
                    ParseCase{"gpu_id:*", "_exists_:gpu_id"},
                    ParseCase{"NOT _exists_:gpu_id", "(NOT _exists_:gpu_id)"},
                    ParseCase{"_exists_:host.name x", "(AND _exists_:host.name x)"},
                    ParseCase{"_id:0019a1c2b3d4e5f6", "_id:0019a1c2b3d4e5f6"},
                    ParseCase{"_id:\"a b\"", "_id:\"a b\""}, ParseCase{"_id:-", "_id:-"},
                    ParseCase{"_index:filebeat", "_index:filebeat"}));

INSTANTIATE_TEST_SUITE_P(
    Dates, ParseQueryValid,
    testing::Values(
        ParseCase{"@timestamp:[2026-11-29T10:00 TO 2026-11-29T11:00}",
                  "@timestamp:[1795946400000 TO 1795950000000}"},
        ParseCase{"@timestamp:>now-1h", "@timestamp:{1795952096789 TO *]"},
        ParseCase{"@timestamp:>=now-1h", "@timestamp:[1795952096789 TO *]"},
        ParseCase{"@timestamp:[now/d TO now/d]", "@timestamp:[1795910400000 TO 1795996799999]"},
        ParseCase{"@timestamp:[now/d TO now/d}", "@timestamp:[1795910400000 TO 1795910400000}"},
        ParseCase{"@timestamp:2026-11-29", "@timestamp:[1795910400000 TO 1795996799999]"},
        ParseCase{"@timestamp:\"2026-11-29T10:00:00+01:00\"",
                  "@timestamp:[1795942800000 TO 1795942800999]"},
        ParseCase{"@timestamp:{2026-11-29 TO *]", "@timestamp:{1795996799999 TO *]"},
        ParseCase{"@timestamp:<2026-11", "@timestamp:[* TO 1793491200000}"},
        ParseCase{"@timestamp:<=2026-11", "@timestamp:[* TO 1796083199999]"},
        ParseCase{"@timestamp:[2026 TO 2026]", "@timestamp:[1767225600000 TO 1798761599999]"},
        ParseCase{"@timestamp:[2026-11-29||+1M TO *]", "@timestamp:[1798502400000 TO *]"},
        ParseCase{"@timestamp:[now/w TO *]", "@timestamp:[1795392000000 TO *]"},
        ParseCase{"@timestamp:[now-1d/d TO now/d}", "@timestamp:[1795824000000 TO 1795910400000}"},
        ParseCase{"@timestamp:[2026-11-29T10 TO *]", "@timestamp:[1795946400000 TO *]"},
        ParseCase{"@timestamp:[1795946400000 TO 1795946400001]",
                  "@timestamp:[1795946400000 TO 1795946400001]"},
        ParseCase{"@timestamp:now", "@timestamp:[1795955696789 TO 1795955696789]"}));

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
                                         ErrorCase{"a &&", 4, "expected a term after &&"},
                                         ErrorCase{"a || ", 5, "expected a term after ||"},
                                         ErrorCase{"|| a", 0, "expected a term before ||"},
                                         ErrorCase{"a and", 5, "expected a term after and"},
                                         ErrorCase{"or a", 0, "expected a term before or"},
                                         ErrorCase{"a not", 5, "expected a term after not"},
                                         ErrorCase{"!", 1, "expected a term after !"},
                                         ErrorCase{"a ! )", 4, "expected a term after !"},
                                         ErrorCase{"+", 1, "expected a term right after '+'"},
                                         ErrorCase{"a - b", 3, "expected a term right after '-'"},
                                         ErrorCase{"(a -)", 4, "expected a term right after '-'"},
                                         ErrorCase{"--a", 1, "expected a term right after '-'"},
                                         ErrorCase{"+AND a", 1, "expected a term right after '+'"},
                                         ErrorCase{"a ^2", 2, "a boost (^) must directly follow"},
                                         ErrorCase{"^2", 0, "a boost (^) must directly follow"},
                                         ErrorCase{"(^2)", 1, "a boost (^) must directly follow"},
                                         ErrorCase{"NOT ^2", 4,
                                                   "a boost (^) must directly follow"}));

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
    FieldGroups, ParseQueryError,
    testing::Values(ErrorCase{"level:(a OR b", 13, "expected ')' to close the '(' at byte 6"},
                    ErrorCase{"level:(user:x)", 7, "cannot contain another field"},
                    ErrorCase{"level:(a (b user:x))", 12, "cannot contain another field"},
                    ErrorCase{"level:(_exists_:x)", 7, "cannot contain another field"},
                    ErrorCase{"level:()", 7, "expected a term after '('"},
                    ErrorCase{"level:(a)^", 10, "expected a number after '^'"}));

INSTANTIATE_TEST_SUITE_P(
    Ranges, ParseQueryError,
    testing::Values(ErrorCase{"[1 TO 5]", 0, "a range needs a field: write field:[a TO b]"},
                    ErrorCase{"{a TO b}", 0, "a range needs a field"},
                    ErrorCase{"size:[1 TO 5", 12,
                              "expected ']' or '}' to close the range opened at byte 5"},
                    ErrorCase{"size:[1 TO 5 x", 13, "expected ']' or '}'"},
                    ErrorCase{"size:[1 5]", 8, "expected 'TO' after the range's lower bound"},
                    ErrorCase{"size:[1 to 5]", 8, "expected 'TO'"},
                    ErrorCase{"size:[1TO 5]", 10, "expected 'TO'"},
                    ErrorCase{"size:[1 TO ]", 11, "expected an upper bound after TO"},
                    ErrorCase{"size:[1 TO", 10, "expected an upper bound after TO"},
                    ErrorCase{"size:[]", 6, "expected a lower bound after '['"},
                    ErrorCase{"size:{", 6, "expected a lower bound after '{'"},
                    ErrorCase{"size:[\"\" TO 1]", 6, "expected a non-empty bound"},
                    ErrorCase{"size:[1 TO \\", 11, "trailing backslash"},
                    ErrorCase{"age:>", 5, "expected a value right after '>'"},
                    ErrorCase{"age:>= 5", 6, "expected a value right after '>='"},
                    ErrorCase{"age:<=*", 6, "expected a value right after '<=', not '*'"},
                    ErrorCase{">5", 0, "a comparison needs a field"},
                    ErrorCase{"a <=5", 2, "a comparison needs a field"},
                    ErrorCase{"arr[0]", 3, "'[' belongs to a range (field:[a TO b]); escape it"},
                    ErrorCase{"a}", 1, "'}' belongs to a range"},
                    ErrorCase{"]", 0, "']' closes no range"},
                    ErrorCase{"_id:[a TO b]", 4, "_id takes an exact id, not a range"},
                    ErrorCase{"_id:>a", 4, "_id takes an exact id"}));

INSTANTIATE_TEST_SUITE_P(
    Dates, ParseQueryError,
    testing::Values(
        ErrorCase{"@timestamp:[yesterday TO now]", 12, "expected a date (2026-11-29"},
        ErrorCase{"@timestamp:[now TO 2026-13-01]", 19, "expected a date"},
        ErrorCase{"@timestamp:>now-1x", 17, "expected a unit (y M w d h m s) in date math"},
        ErrorCase{"@timestamp:>now-h", 16, "expected a number after '+' or '-' in date math"},
        ErrorCase{"@timestamp:<now/q", 16, "expected a unit (y M w d h m s) after '/'"},
        ErrorCase{"@timestamp:<nowish", 15, "expected +<n><unit>, -<n><unit> or /<unit>"},
        ErrorCase{"@timestamp:<2026-11-29||*", 24, "expected +<n><unit>"},
        ErrorCase{"@timestamp:<now-99999999d", 16, "date math amount is too large"},
        ErrorCase{"@timestamp:<now+9000y", 15, "date math goes past the years 1 to 9999"},
        ErrorCase{"@timestamp:2026-11-29T25:00", 11, "expected a date"},
        ErrorCase{"@timestamp:\"2026-11-32\"", 12, "expected a date"},
        ErrorCase{"@timestamp:(now OR x)", 19, "expected a date"},
        ErrorCase{"@timestamp:2026*", 11, "wildcards (* ?) are not supported on @timestamp"},
        ErrorCase{"@timestamp:20?6", 11, "wildcards (* ?) are not supported on @timestamp"},
        ErrorCase{"@timestamp:/2026/", 11, "regular expressions are not supported on @timestamp"},
        ErrorCase{"@timestamp:2026~1", 15, "fuzzy (~) is not supported on @timestamp"}));

INSTANTIATE_TEST_SUITE_P(
    Leaves, ParseQueryError,
    testing::Values(
        ErrorCase{"/cu(a/", 0, "invalid regular expression: missing )"},
        ErrorCase{"msg:/a**/", 4, "invalid regular expression: bad repetition operator"},
        ErrorCase{"/abc", 4,
                  "unterminated regular expression: expected '/' to close the one at "
                  "byte 0"},
        ErrorCase{"/ab\\/", 5, "unterminated regular expression"},
        ErrorCase{"/ab\\", 3, "trailing backslash"},
        ErrorCase{"path:/var/log", 10,
                  "expected a space or an operator after the regular expression that ends at byte "
                  "9; to search for a path, quote it or escape each '/' (\\/)"},
        ErrorCase{"_id:/a/", 4, "regular expressions are not supported on _id"},
        ErrorCase{"cuda~3", 5, "expected an edit distance of 0, 1 or 2 after '~'"},
        ErrorCase{"cuda~12", 5, "expected an edit distance of 0, 1 or 2"},
        ErrorCase{"cuda~0.5", 5, "expected an edit distance of 0, 1 or 2"},
        ErrorCase{"cuda~1x", 6, "expected an edit distance of 0, 1 or 2 after '~', then a space"},
        ErrorCase{"cu*a~1", 4, "fuzzy (~) cannot be combined with wildcards"},
        ErrorCase{"cuda-0~1", 0, "fuzzy (~) takes a single word"},
        ErrorCase{"显存不足~1", 0, "fuzzy (~) takes a single word"},
        ErrorCase{"_id:x~1", 5, "fuzzy (~) is not supported on _id"},
        ErrorCase{"\"a b\"~", 6, "expected a distance from 0 to 1000 after '~'"},
        ErrorCase{"\"a b\"~1001", 6, "expected a distance from 0 to 1000"},
        ErrorCase{"\"a b\"~x", 6, "expected a distance from 0 to 1000"},
        ErrorCase{"user:\"a b\"~2", 10, "proximity (\"a b\"~N) is supported on the message only"},
        ErrorCase{"\"!! ..\"~2", 0, "term has no letters or digits"},
        ErrorCase{"cuda^", 5, "expected a number after '^' (a boost)"},
        ErrorCase{"cuda^x", 5, "expected a number after '^'"},
        ErrorCase{"cuda^2x", 6, "expected a space after the boost"},
        ErrorCase{"~a", 0, "expected a term before '~'"},
        ErrorCase{"user:^2", 5, "expected a term before '^'"},
        ErrorCase{"a*:b", 2, "field names cannot contain wildcards"},
        ErrorCase{"_id:a*", 4, "wildcards (* ?) are not supported on _id"},
        ErrorCase{"_id:?", 4, "wildcards (* ?) are not supported on _id"},
        ErrorCase{"_id:\"\"", 4, "expected an id after '_id:'"},
        ErrorCase{"_exists_:", 9, "expected a field name after '_exists_:'"},
        ErrorCase{"_exists_:\"a\"", 9, "expected a field name after '_exists_:'"},
        ErrorCase{"_exists_:a:b", 10, "expected a field name after '_exists_:'"}));

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

// DebugString of a leaf is query text that parses back to the same leaf.
void ExpectRoundTrip(const Node& first, std::string_view text) {
  const std::string shown = query::DebugString(first);
  auto parsed = ParseQuery(shown, Limits());
  const auto* second = std::get_if<Node>(&parsed);
  ASSERT_NE(second, nullptr) << "`" << text << "` shows as `" << shown
                             << "`, which does not parse: " << std::get<QueryError>(parsed).reason;
  EXPECT_EQ(second->kind, first.kind) << text;
  EXPECT_EQ(second->term.field, first.term.field) << text;
  EXPECT_EQ(second->term.text, first.term.text) << text;
  EXPECT_EQ(second->term.phrase, first.term.phrase) << text;
  EXPECT_EQ(second->term.prefix, first.term.prefix) << text;
  EXPECT_EQ(second->term.distance, first.term.distance) << text;
}

TEST(DebugStringTest, LeafFormParsesBack) {
  for (const char* text :
       {"a\\ b\\:c",    "\\AND",       "\\and",   "\\-1",         "f:\\/x",   "\"q\\\"\\\\\"*",
        "x\\*\\*",      "a\\\u3000b",  "\\&&x",   "message:x\\(", "\\:-\\)1", "c?d*",
        "x:a\\ b*c",    "/a\\/b\\\\/", "f:/x y/", "memroy~1",     "f:\\:x~0", "\"a \\\"b\\\"\"~4",
        "_exists_:a.b", "\\!a",        "\\|\\|a"}) {
    ExpectRoundTrip(MustParse(text), text);
  }
}

TEST(DebugStringTest, ShowsEveryKind) {
  Node root{NodeKind::kOr, 0, {}, {}};
  root.children.push_back(Node::MatchAll());
  root.children.push_back(Node::MakeNot(Node::MakeTerm({"", "a b", false, true}, 0), 0));
  root.children.push_back(Node::MakeTerm({"user", "x \"y\"", true, false}, 0));
  root.children.push_back(Node::MakeLeaf(NodeKind::kWildcard, {"", "a b*", false, false}, 0));
  root.children.push_back(Node::MakeLeaf(NodeKind::kRegex, {"f", "a/b", false, false}, 0));
  root.children.push_back(Node::MakeLeaf(NodeKind::kNear, {"", "a b", true, false, 3}, 0));
  root.children.push_back(Node::MakeLeaf(NodeKind::kFuzzy, {"", "ab", false, false, 1}, 0));
  root.children.push_back(Node::MakeExists("g", 0));
  root.children.push_back(Node::MakeRange({"h", "1", "", false, true}, 0));
  EXPECT_EQ(query::DebugString(root),
            "(OR * (NOT a\\ b*) user:\"x \\\"y\\\"\" a\\ b* f:/a\\/b/ \"a b\"~3 ab~1 _exists_:g "
            "h:{1 TO *])");
}

// Checks the shape promised by query_ast.h and that every leaf round-trips
// through DebugString.
void ExpectWellFormed(const Node& node, std::string_view text) {
  switch (node.kind) {
    case NodeKind::kMatchAll:
      EXPECT_TRUE(node.children.empty()) << text;
      break;
    case NodeKind::kRange:
      EXPECT_FALSE(node.range.field.empty()) << text;
      break;
    case NodeKind::kNot:
      EXPECT_EQ(node.children.size(), 1u) << text;
      break;
    case NodeKind::kAnd:
    case NodeKind::kOr:
      EXPECT_GE(node.children.size(), 2u) << text;
      for (const Node& child : node.children) EXPECT_NE(child.kind, node.kind) << text;
      break;
    case NodeKind::kFuzzy:
      EXPECT_LE(node.term.distance, 2u) << text;
      [[fallthrough]];
    case NodeKind::kTerm:
    case NodeKind::kWildcard:
    case NodeKind::kRegex:
    case NodeKind::kNear:
    case NodeKind::kExists:
      EXPECT_TRUE(node.children.empty()) << text;
      ExpectRoundTrip(node, text);
      break;
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
                                                 "and",
                                                 "||",
                                                 "~1",
                                                 "/a.b/",
                                                 "[1 TO 2]",
                                                 "{a TO *]",
                                                 "@timestamp:",
                                                 "now-1h/d",
                                                 "2026-11-29T10:00",
                                                 "level:(",
                                                 "_id:",
                                                 "_index:",
                                                 "^2",
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
    ParseLimits limits = Limits();
    limits.max_depth = i % 2 == 0 ? 64u : 3u;
    limits.default_operator_or = i % 3 == 0;
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
