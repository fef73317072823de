// Tests for storage/fts_query_compiler.h and the query-side encodings of
// storage/attrs_codec.h: the exact FTS5 expression and SQL condition a query
// AST compiles to. (Whether these match the right events is tested against a
// real database in sqlite_store_test.cpp.)
#include "storage/fts_query_compiler.h"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "storage/attrs_codec.h"
#include "storage/text_tokenizer.h"

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

// Whether the event is among the matches of ?param (fts_membership.h), on
// a day whose rowids are keys.
std::string In(int param) {
  const std::string all = "SELECT fts.rowid FROM fts WHERE fts MATCH ?1";
  return "dc_fts_has(e.key, ?" + std::to_string(param) + ", '" + all +
         " AND fts.rowid <= ?2 ORDER BY fts.rowid DESC', '" + all +
         " AND fts.rowid >= ?2 ORDER BY fts.rowid', '" + all + "')";
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
      {"field term", Term("hostname", "gpu-01"), FS("hostname", "gpu-01")},
      {"field phrase", Term("user", "zhang san", true), FS("user", "zhang san")},
      {"field prefix", Term("hostname", "gpu", false, true), FS("hostname", "gpu") + " *"},
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

// fts_prefix tells the store that every statement merges a prefix's
// doclists: only a `*` outside quotes is one.
TEST(FtsQueryCompilerTest, PrefixTermsAreFlagged) {
  struct Case {
    const char* name;
    Node query;
    bool prefix;
  };
  const Case cases[] = {
      {"message prefix", Term("", "cud", false, true), true},
      {"field prefix in a conjunction", And({Msg("a"), Term("host", "gpu", false, true)}), true},
      {"term", Msg("cuda"), false},
      {"a star inside a term", Msg("a*b"), false},
      {"a star after a doubled quote", Msg("x\"*"), false},
      {"phrase", Term("", "out of memory", true), false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const CompiledQuery q = Compile(c.query);
    ASSERT_TRUE(q.fts.has_value());
    EXPECT_EQ(q.fts_prefix, c.prefix) << *q.fts;
  }
  EXPECT_FALSE(Compile(Node::MatchAll()).fts_prefix);
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

// A fixed vocabulary; records what was asked.
class FakeTerms : public TermSource {
 public:
  explicit FakeTerms(std::vector<std::string> terms) : terms_(std::move(terms)) {
    std::sort(terms_.begin(), terms_.end());
  }
  Result<std::vector<std::string>> Terms(const TermRange& range, std::size_t max_terms) override {
    asked.push_back({range.first, range.limit});
    std::vector<std::string> out;
    for (const std::string& t : terms_) {
      if (t < range.first || (!range.limit.empty() && t >= range.limit)) continue;
      if (range.accept(t)) out.push_back(t);
      if (out.size() > max_terms) break;
    }
    return out;
  }
  std::vector<std::pair<std::string, std::string>> asked;

 private:
  std::vector<std::string> terms_;
};

Node Leaf(NodeKind kind, std::string field, std::string text, unsigned distance = 0) {
  query::Term t;
  t.field = std::move(field);
  t.text = std::move(text);
  t.distance = distance;
  return Node::MakeLeaf(kind, std::move(t), 7);
}
// The FTS5 string of a raw index term, and of a raw field term.
std::string R(const std::string& term) {
  return "\"\x03" + term + "\"";
}
std::string RF(const std::string& term) {
  return "\"\x04" + term + "\"";
}
std::string Check(int param) {
  return "dc_match(dc_source(e.source), dc_name(e.idx), ?" + std::to_string(param) + ")";
}

CompiledQuery CompileWith(const Node& n, TermSource& terms, CompileOptions options = {}) {
  auto r = CompileFtsQuery(n, &terms, options);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : CompiledQuery{};
}

const std::vector<std::string> kVocabulary = {"cuda",
                                              "cudnn",
                                              "cudax",
                                              "memory",
                                              "outofmemory",
                                              "mem",
                                              "显存",
                                              "hostname\x1fgpu",
                                              "hostname\x1fnode",
                                              "hostname\x1f"
                                              "07",
                                              "hostname\x1f"
                                              "08",
                                              "hostname\x1f"
                                              "cpu",
                                              "user\x1f"
                                              "alice",
                                              "user\x1f"
                                              "alicia",
                                              "cuda.version\x1f"
                                              "12"};

TEST(FtsQueryCompilerTest, OnePositionWildcardIsAnOrOfTerms) {
  FakeTerms terms(kVocabulary);
  CompiledQuery q = CompileWith(Leaf(NodeKind::kWildcard, "", "cud?"), terms);
  EXPECT_EQ(q.fts, R("cuda"));  // `?` is one character: not cudax
  EXPECT_EQ(q.where, "1");
  // The literal prefix bounds the vocabulary range read.
  EXPECT_EQ(terms.asked.back(), (std::pair<std::string, std::string>{"cud", "cue"}));

  // A leading wildcard reads the whole vocabulary; field terms are skipped.
  q = CompileWith(Leaf(NodeKind::kWildcard, "", "*MEMORY"), terms);
  EXPECT_EQ(q.fts, "(" + R("memory") + " OR " + R("outofmemory") + ")");
  EXPECT_EQ(terms.asked.back(), (std::pair<std::string, std::string>{"", ""}));

  q = CompileWith(Leaf(NodeKind::kWildcard, "user", "ali*"), terms);
  EXPECT_EQ(q.fts, "(" +
                       R("user\x1f"
                         "alice") +
                       " OR " +
                       R("user\x1f"
                         "alicia") +
                       ")");
  EXPECT_EQ(terms.asked.back(), (std::pair<std::string, std::string>{"user\x1f"
                                                                     "ali",
                                                                     "user\x1f"
                                                                     "alj"}));

  q = CompileWith(Leaf(NodeKind::kWildcard, "", "显*"), terms);
  EXPECT_EQ(q.fts, R("显存"));
}

TEST(FtsQueryCompilerTest, WildcardWithoutTermsMatchesNothing) {
  FakeTerms terms(kVocabulary);
  const CompiledQuery q = CompileWith(Leaf(NodeKind::kWildcard, "", "zz*z"), terms);
  EXPECT_EQ(q.fts, NeverMatchingFts());
  EXPECT_EQ(NeverMatchingFts(), "\"\x03\x1f\"");
  // No source at all is an empty vocabulary.
  auto none = CompileFtsQuery(Leaf(NodeKind::kWildcard, "", "cud?"));
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->fts, NeverMatchingFts());
}

TEST(FtsQueryCompilerTest, TooManyExpansionsNameTheLimitAndPosition) {
  FakeTerms terms(kVocabulary);
  auto r = CompileFtsQuery(Leaf(NodeKind::kWildcard, "", "*m*"), &terms,
                           CompileOptions{.max_expansions = 2});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(),
            "`*m*` at byte 7 matches more than 2 distinct terms in one day's events; make it more "
            "specific");
}

TEST(FtsQueryCompilerTest, SeveralPositionsArePhrasesOrCandidates) {
  FakeTerms terms(kVocabulary);
  // Few combinations: every one as a phrase, exactly.
  CompiledQuery q = CompileWith(Leaf(NodeKind::kWildcard, "hostname", "gpu-node-0?"), terms);
  const std::string gpu = R("hostname\x1fgpu"), node = R("hostname\x1fnode");
  EXPECT_EQ(q.fts, "(" + gpu + " + " + node + " + " +
                       R("hostname\x1f"
                         "07") +
                       ") OR (" + gpu + " + " + node + " + " +
                       R("hostname\x1f"
                         "08") +
                       ")");
  EXPECT_EQ(q.where, "1");
  // `*` alone is any token: known when the field has few terms...
  const Node any = Leaf(NodeKind::kWildcard, "hostname", "gpu-node-*");
  q = CompileWith(any, terms);
  EXPECT_EQ(q.where, "1");
  EXPECT_NE(q.fts->find(gpu + " + " + node + " + " +
                        R("hostname\x1f"
                          "cpu") +
                        ")"),
            std::string::npos)
      << *q.fts;
  // ... else the literal run finds candidates and the row check decides.
  const CompileOptions few{.max_expansions = 2};
  q = CompileWith(any, terms, few);
  EXPECT_EQ(q.fts, gpu + " + " + node);
  EXPECT_EQ(q.where, Check(10));
  EXPECT_EQ(q.params, (Params{&any}));
  // Inside an OR the candidates guard the row check.
  const Node either = Or({Msg("x"), any});
  q = CompileWith(either, terms, few);
  EXPECT_EQ(q.fts, "(" + M("x") + ") OR (" + gpu + " + " + node + ")");
  EXPECT_EQ(q.where, "(" + In(10) + ") OR ((" + In(11) + " AND " + Check(12) + "))");
  EXPECT_EQ(q.params, (Params{M("x"), gpu + " + " + node, &either.children[1]}));
}

TEST(FtsQueryCompilerTest, ARegexOfOneWordAsksTheVocabularyForTheTermsHoldingIt) {
  // The word may sit inside a longer token (libnccl2), and a token longer
  // than the index keeps may hold it past the cut.
  const std::string cut(TextTokenizer::kMaxTokenBytes - 2, 'f');
  FakeTerms terms({"nccl", "libnccl2", "cuda", "warn", cut, "hostname\x1fnccl1",
                   "hostname\x1f"
                   "bob"});
  const Node nccl = Leaf(NodeKind::kRegex, "", "NCCL");
  CompiledQuery q = CompileWith(nccl, terms);
  EXPECT_EQ(q.fts, "(" + R(cut) + " OR " + R("libnccl2") + " OR " + R("nccl") + ")");
  EXPECT_EQ(q.where, Check(10));
  // A field's regex: the field's own terms.
  q = CompileWith(Leaf(NodeKind::kRegex, "hostname", "ncc.*"), terms);
  EXPECT_EQ(q.fts, R("hostname\x1fnccl1"));
  q = CompileWith(Leaf(NodeKind::kRegex, "hostname", "warn"), terms);
  EXPECT_EQ(q.fts, NeverMatchingFts());  // no hostname term holds it
  // Each literal of an AND.
  q = CompileWith(Leaf(NodeKind::kRegex, "", "CUDA.+NCCL"), terms);
  EXPECT_EQ(q.fts, "((" + R("cuda") + " OR " + R(cut) + ")) AND ((" + R(cut) + " OR " +
                       R("libnccl2") + " OR " + R("nccl") + "))");
  // Past max_expansions, or a word too short: the rows are read.
  q = CompileWith(nccl, terms, CompileOptions{.max_expansions = 2});
  EXPECT_FALSE(q.fts.has_value());
  EXPECT_FALSE(CompileWith(Leaf(NodeKind::kRegex, "", "cu"), terms).fts.has_value());
  // No vocabulary: nothing is known.
  EXPECT_FALSE(Compile(nccl).fts.has_value());
}

// Each one-word literal of a regex would read the day's vocabulary once;
// they share one read, and the expression is what each read alone gives.
TEST(FtsQueryCompilerTest, ARegexsOneWordLiteralsShareOneReadOfTheVocabulary) {
  const std::string cut(TextTokenizer::kMaxTokenBytes - 2, 'f');
  const std::vector<std::string> vocabulary = {"nccl", "libnccl2", "cuda", "warn", cut};
  auto alone = [&](const char* word) {
    FakeTerms terms(vocabulary);
    return *CompileWith(Leaf(NodeKind::kRegex, "", word), terms).fts;
  };
  FakeTerms terms(vocabulary);
  CompiledQuery q = CompileWith(Leaf(NodeKind::kRegex, "", "(NCCL|CUDA|warn)"), terms);
  EXPECT_EQ(q.fts, "(" + alone("NCCL") + ") OR (" + alone("CUDA") + ") OR (" + alone("warn") + ")");
  EXPECT_EQ(terms.asked.size(), 1u);
  terms.asked.clear();
  q = CompileWith(Leaf(NodeKind::kRegex, "", "CUDA.+NCCL"), terms);
  EXPECT_EQ(q.fts, "(" + alone("CUDA") + ") AND (" + alone("NCCL") + ")");
  EXPECT_EQ(terms.asked.size(), 1u);
  // A word past max_expansions alone narrows nothing, read together or not.
  terms.asked.clear();
  q = CompileWith(Leaf(NodeKind::kRegex, "", "(NCCL|CUDA)"), terms,
                  CompileOptions{.max_expansions = 2});
  EXPECT_FALSE(q.fts.has_value());
  EXPECT_EQ(terms.asked.size(), 1u);
  // A shared listing past its own limit: each word reads on its own (here
  // CUDA's would not: NCCL's narrows nothing, and so the OR).
  terms.asked.clear();
  q = CompileWith(Leaf(NodeKind::kRegex, "", "(NCCL|CUDA)"), terms,
                  CompileOptions{.max_expansions = 1});
  EXPECT_FALSE(q.fts.has_value());
  EXPECT_EQ(terms.asked.size(), 2u);
}

TEST(FtsQueryCompilerTest, FuzzyTermsExpandByEditDistance) {
  FakeTerms terms(kVocabulary);
  EXPECT_EQ(CompileWith(Leaf(NodeKind::kFuzzy, "", "memroy", 1), terms).fts, R("memory"));
  EXPECT_EQ(CompileWith(Leaf(NodeKind::kFuzzy, "", "CUDA", 1), terms).fts,
            "(" + R("cuda") + " OR " + R("cudax") + ")");
  EXPECT_EQ(CompileWith(Leaf(NodeKind::kFuzzy, "user", "alise", 1), terms).fts, R("user\x1f"
                                                                                  "alice"));
  EXPECT_EQ(CompileWith(Leaf(NodeKind::kFuzzy, "user", "alic", 2), terms).fts, "(" +
                                                                                   R("user\x1f"
                                                                                     "alice") +
                                                                                   " OR " +
                                                                                   R("user\x1f"
                                                                                     "alicia") +
                                                                                   ")");
  EXPECT_EQ(CompileWith(Leaf(NodeKind::kFuzzy, "", "cuda", 0), terms).fts, R("cuda"));
  auto two_words = CompileFtsQuery(Leaf(NodeKind::kFuzzy, "", "a b", 1), &terms);
  EXPECT_EQ(two_words.status().code(), StatusCode::kInvalidArgument);
}

TEST(FtsQueryCompilerTest, RegexesCheckRowsBehindTheirLiterals) {
  const Node oom = Leaf(NodeKind::kRegex, "", "CUDA error: (out of memory|illegal memory)");
  CompiledQuery q = Compile(oom);
  // The first word may be the end of a longer token; the last one a prefix.
  const std::string literals = "(message : " + R("error") + " + " + R("out") + " + " + R("of") +
                               " + " + R("memory") + " *) OR (message : " + R("error") + " + " +
                               R("illegal") + " + " + R("memory") + " *)";
  EXPECT_EQ(q.fts, literals);
  EXPECT_EQ(q.where, Check(10));
  EXPECT_EQ(q.params, (Params{&oom}));

  // ^ and $ are token boundaries: both words are whole.
  EXPECT_EQ(Compile(Leaf(NodeKind::kRegex, "user", "^zhang san$")).fts,
            R("user\x1fzhang") + " + " + R("user\x1fsan"));
  EXPECT_EQ(Compile(Leaf(NodeKind::kRegex, "user", "zhang san")).fts, R("user\x1fsan") + " *");

  // Nothing to narrow by: every row in the time range is checked.
  const Node scan = Leaf(NodeKind::kRegex, "", "[a-z]+\\d");
  q = Compile(scan);
  EXPECT_FALSE(q.fts.has_value());
  EXPECT_EQ(q.where, Check(10));

  // Under AND the candidates join the driver.
  const Node both = And({Msg("gpu"), oom});
  q = Compile(both);
  EXPECT_EQ(q.fts, "(" + M("gpu") + ") AND (" + literals + ")");
  EXPECT_EQ(q.where, "(" + Check(10) + ")");
}

TEST(FtsQueryCompilerTest, ProximityIsNear) {
  EXPECT_EQ(Compile(Leaf(NodeKind::kNear, "", "cuda memory", 3)).fts,
            "NEAR(" + M("cuda") + " " + M("memory") + ", 3)");
  EXPECT_EQ(Compile(Leaf(NodeKind::kNear, "message", "out-of  memory", 0)).fts,
            "NEAR(" + M("out-of") + " " + M("memory") + ", 0)");
  EXPECT_EQ(Compile(Leaf(NodeKind::kNear, "", "cuda ...", 5)).fts, M("cuda"));
  auto field = CompileFtsQuery(Leaf(NodeKind::kNear, "user", "a b", 1));
  EXPECT_EQ(field.status().code(), StatusCode::kInvalidArgument);
}

// A numbered day's index without positions (rowid_layout.h) takes no
// phrase, NEAR or column filter: FTS5 finds the events holding every token,
// the row check decides; a single token stays exact.
TEST(FtsQueryCompilerTest, WithoutPositionsPhrasesAreTheirTermsThenARowCheck) {
  FakeTerms terms(kVocabulary);
  CompileOptions options;
  options.rowids = ParseRowidLayout(DocnosMeta(1000, 1, true, /*positions=*/false));
  ASSERT_FALSE(options.rowids.positions);
  auto all_of = [](std::vector<std::string> parts) {
    std::string e;
    for (const std::string& p : parts) e += (e.empty() ? "(" : " AND (") + p + ")";
    return e;
  };
  const Node phrase = Term("", "out of memory", true);
  CompiledQuery q = CompileWith(phrase, terms, options);
  EXPECT_EQ(q.fts, all_of({M("out"), M("of"), M("memory")}));
  EXPECT_EQ(q.where, Check(10));
  EXPECT_EQ(q.params, (Params{&phrase}));

  const Node near = Leaf(NodeKind::kNear, "", "cuda out-of", 3);
  q = CompileWith(near, terms, options);
  EXPECT_EQ(q.fts, all_of({M("cuda"), M("out"), M("of")}));
  EXPECT_EQ(q.where, Check(10));

  const Node text = Term("error.message", "/home/bob/train.log");
  q = CompileWith(text, terms, options);
  EXPECT_EQ(q.fts, "(" +
                       all_of({FS("error.message", "home"), FS("error.message", "bob"),
                               FS("error.message", "train"), FS("error.message", "log")}) +
                       ")");
  EXPECT_EQ(q.where, Check(10));

  // A number's text is several tokens, its value one term.
  q = CompileWith(Term("loss", "0.6298"), terms, options);
  EXPECT_EQ(q.fts, "(((" + FS("loss", "0") + ") AND (" + FS("loss", "6298") + ")) OR " +
                       FN("loss", "0.6298") + ")");
  EXPECT_EQ(q.where, Check(10));

  // A prefix: the last token's; no column filter.
  q = CompileWith(Term("", "out of mem", true, true), terms, options);
  EXPECT_EQ(q.fts, all_of({M("out"), M("of"), M("mem") + " *"}));
  q = CompileWith(Term("", "cud", false, true), terms, options);
  EXPECT_EQ(q.fts, M("cud") + " *");
  EXPECT_EQ(q.where, "1");

  // One token: exact, as with positions.
  q = CompileWith(Term("", "memory", true), terms, options);
  EXPECT_EQ(q.fts, M("memory"));
  EXPECT_EQ(q.where, "1");

  // A regex's literals, and a wildcard of several positions.
  // (The first word may be the end of a longer token.)
  q = CompileWith(Leaf(NodeKind::kRegex, "", "error: out of memory"), terms, options);
  EXPECT_EQ(q.fts, R("out") + " AND " + R("of") + " AND " + R("memory") + " *");
  EXPECT_EQ(q.where, Check(10));
  q = CompileWith(Leaf(NodeKind::kWildcard, "hostname", "gpu-node-0?"), terms, options);
  EXPECT_EQ(q.fts,
            all_of({R("hostname\x1fgpu") + " AND " + R("hostname\x1fnode"), "(" +
                                                                                R("hostname\x1f"
                                                                                  "07") +
                                                                                " OR " +
                                                                                R("hostname\x1f"
                                                                                  "08") +
                                                                                ")"}));
  EXPECT_EQ(q.where, Check(10));
}

TEST(FtsQueryCompilerTest, IdsAreExactSql) {
  CompiledQuery q = Compile(Term("_id", "my-doc"));
  EXPECT_FALSE(q.fts.has_value());
  EXPECT_EQ(q.where, "e.key IN (SELECT key FROM events WHERE doc_id = ?10)");
  EXPECT_EQ(q.params, (Params{"my-doc"}));
  // An event-key spelling may also be an event without a doc_id.
  q = Compile(Not(Term("_id", "1a22499f80100000")));
  EXPECT_EQ(q.where,
            "NOT ((e.key IN (SELECT key FROM events WHERE doc_id = ?10) OR (e.key = ?11 AND "
            "e.doc_id IS NULL)))");
  EXPECT_EQ(q.params, (Params{"1a22499f80100000", std::int64_t{0x1a22499f80100000}}));
}

// train.* is not in the index (attrs_codec.h): every leaf on it reads rows,
// and it drives nothing, so an indexed conjunct still does.
TEST(FtsQueryCompilerTest, UnindexedFieldsCheckRows) {
  const std::string row = "dc_match(dc_source(e.source), dc_name(e.idx), ?10)";
  for (const Node& n :
       {Term("train.loss", "0.5"), Term("train.loss", "0.5", false, /*prefix=*/true),
        Node{NodeKind::kWildcard, 0, {}, {"train.step", "1?", false, false, 0}},
        Node{NodeKind::kRegex, 0, {}, {"train.step", "1[0-9]", false, false, 0}},
        Node{NodeKind::kFuzzy, 0, {}, {"train.note", "warm", false, false, 1}}}) {
    const CompiledQuery q = Compile(n);
    EXPECT_FALSE(q.fts.has_value()) << n.term.text;
    EXPECT_EQ(q.where, row) << n.term.text;
  }
  const CompiledQuery q = Compile(And({Term("train.loss", "0.5"), Term("host", "gpu")}));
  ASSERT_TRUE(q.fts.has_value());
  EXPECT_EQ(*q.fts, FS("host", "gpu"));
  EXPECT_EQ(q.where, "(" + row + ")");
  // A field that merely starts with "train" is indexed.
  EXPECT_EQ(*Compile(Term("trainer", "x")).fts, FS("trainer", "x"));
}

// run.id is a keyword field: one index term per value, matched whole.
TEST(FtsQueryCompilerTest, KeywordFieldsAreOneTermPerValue) {
  const std::string kw = "run.id\x1f=";
  const std::string long_value(300, 'x');
  FakeTerms terms({kw + "R-42", kw + "r-42", kw + "r-42-b", kw + "r-7",
                   kw + long_value.substr(0, 256), "run.id\x1fr",
                   "run.id\x1f"
                   "42"});
  // A term, a prefix: the value's term, exactly.
  CompiledQuery q = CompileWith(Term("run.id", "r-42"), terms);
  EXPECT_EQ(q.fts, R(kw + "r-42"));
  EXPECT_EQ(q.where, "1");
  // A prefix: the values in the vocabulary that start with it, exactly (an
  // FTS5 prefix query merges their doclists in memory first).
  q = CompileWith(Term("run.id", "r-4", false, /*prefix=*/true), terms);
  EXPECT_EQ(q.fts, "(" + R(kw + "r-42") + " OR " + R(kw + "r-42-b") + ")");
  EXPECT_EQ(q.where, "1");
  EXPECT_EQ(terms.asked.back(), (std::pair<std::string, std::string>{kw + "r-4", kw + "r-5"}));
  q = CompileWith(Term("run.id", "q", false, /*prefix=*/true), terms);
  EXPECT_EQ(q.fts, NeverMatchingFts());
  // Past the expansion limit, or without a vocabulary: the FTS5 prefix.
  CompileOptions one;
  one.max_expansions = 1;
  q = CompileWith(Term("run.id", "r-4", false, /*prefix=*/true), terms, one);
  EXPECT_EQ(q.fts, R(kw + "r-4") + " *");
  EXPECT_EQ(*Compile(Term("run.id", "r-4", false, /*prefix=*/true)).fts, R(kw + "r-4") + " *");
  // A number is also the number term.
  q = CompileWith(Term("run.id", "42"), terms);
  EXPECT_EQ(q.fts, "(" + R(kw + "42") + " OR " + FN("run.id", "42") + ")");
  // Wildcard, fuzzy, regex: the whole values in the vocabulary, case kept.
  q = CompileWith(Leaf(NodeKind::kWildcard, "run.id", "r-4?"), terms);
  EXPECT_EQ(q.fts, R(kw + "r-42"));
  EXPECT_EQ(terms.asked.back(), (std::pair<std::string, std::string>{kw + "r-4", kw + "r-5"}));
  q = CompileWith(Leaf(NodeKind::kFuzzy, "run.id", "r-43", 1), terms);
  EXPECT_EQ(q.fts, R(kw + "r-42"));
  // A regex might match a value cut in its index term: that one is checked.
  q = CompileWith(Leaf(NodeKind::kRegex, "run.id", "^r-[0-9]+$"), terms);
  EXPECT_EQ(q.fts, "(" + R(kw + "r-42") + " OR " + R(kw + "r-7") + " OR " +
                       R(kw + long_value.substr(0, 256)) + ")");
  EXPECT_EQ(q.where, Check(10));
  FakeTerms short_terms({kw + "r-42", kw + "r-42-b", kw + "r-7"});
  q = CompileWith(Leaf(NodeKind::kRegex, "run.id", "^r-[0-9]+$"), short_terms);
  EXPECT_EQ(q.fts, "(" + R(kw + "r-42") + " OR " + R(kw + "r-7") + ")");
  EXPECT_EQ(q.where, "1");
  // A value longer than a term holds: the terms starting like it, and the row check.
  q = CompileWith(Term("run.id", long_value), terms);
  EXPECT_EQ(q.fts, R(kw + long_value.substr(0, kWholeKeywordBytes)) + " *");
  EXPECT_EQ(q.where, Check(10));
  q = CompileWith(Leaf(NodeKind::kWildcard, "run.id", "*x"), terms);
  EXPECT_EQ(q.fts, R(kw + long_value.substr(0, 256)));
  EXPECT_EQ(q.where, Check(10));
  // A partition from before keyword fields: either form as candidates, then the row check.
  CompileOptions legacy;
  legacy.indexed_keywords = "_index,log.file.path";  // not run.id
  q = CompileWith(Term("run.id", "r-42"), terms, legacy);
  EXPECT_EQ(q.fts, "(" + R(kw + "r-42") + " OR " + FS("run.id", "r-42") + ")");
  EXPECT_EQ(q.where, Check(10));
  q = CompileWith(Leaf(NodeKind::kWildcard, "run.id", "r-4?"), terms, legacy);
  EXPECT_EQ(q.fts, "((" + R(kw + "r-42") + ") OR (" + FS("run.id", "r-4") + " *))");
  EXPECT_EQ(q.where, Check(10));
  q = CompileWith(Leaf(NodeKind::kFuzzy, "run.id", "r-43", 1), terms, legacy);
  EXPECT_FALSE(q.fts.has_value());  // no candidates for older events: every row is read
  EXPECT_EQ(q.where, Check(10));
  // Only the fields the file's list lacks are read both ways: host.name
  // became a keyword after run.id.
  const std::string host = KeywordTerm("host.name", "gpu-node-07");
  q = CompileWith(Term("host.name", "gpu-node-07"), terms, legacy);
  EXPECT_EQ(q.fts, "(" + R(host) + " OR " + FS("host.name", "gpu-node-07") + ")");
  EXPECT_EQ(q.where, Check(10));
  CompileOptions before_host;
  before_host.indexed_keywords = "_index,log.file.path,run.id";
  q = CompileWith(Term("host.name", "gpu-node-07"), terms, before_host);
  EXPECT_EQ(q.fts, "(" + R(host) + " OR " + FS("host.name", "gpu-node-07") + ")");
  q = CompileWith(Term("run.id", "r-42"), terms, before_host);
  EXPECT_EQ(q.fts, R(kw + "r-42"));
  EXPECT_EQ(q.where, "1");
  q = CompileWith(Term("host.name", "gpu-node-07"), terms);
  EXPECT_EQ(q.fts, R(host));
  EXPECT_EQ(q.where, "1");
  // A value with a space may stand for one with 0x1F: the row check decides.
  q = CompileWith(Term("run.id", "job 7"), terms);
  EXPECT_EQ(q.fts, R(kw + "job 7"));
  EXPECT_EQ(q.where, Check(10));
  // More matching values than the limit: candidates by the literal start, no error.
  CompileOptions small;
  small.max_expansions = 2;
  q = CompileWith(Leaf(NodeKind::kWildcard, "run.id", "r-*"), terms, small);
  EXPECT_EQ(q.fts, R(kw + "r-") + " *");
  EXPECT_EQ(q.where, Check(10));
  q = CompileWith(Leaf(NodeKind::kWildcard, "run.id", "*2"), terms, small);
  EXPECT_FALSE(q.fts.has_value());
  EXPECT_EQ(q.where, Check(10));
  // Other fields are unchanged.
  EXPECT_EQ(*Compile(Term("run_id", "r-42")).fts, FS("run_id", "r-42"));
}

// A partition whose sample says how common every field is.
class FakeShares : public FakeTerms {
 public:
  explicit FakeShares(double share) : FakeTerms({}), share_(share) {}
  Result<std::optional<bool>> ShareBelow(const Node& n, double share) override {
    asked_fields.push_back(n.term.field);
    return std::optional<bool>(share_ < share);
  }
  Result<std::optional<EventCounts>> Events(TimeMs, TimeMs) override {
    return std::optional<EventCounts>(EventCounts{1'000'000, 1'000'000});
  }
  std::vector<std::string> asked_fields;

 private:
  double share_;
};

// Exists reads the index only where every value left a term (the option)
// and the field is rare in the partition; otherwise it reads rows.
TEST(FtsQueryCompilerTest, ExistsOfARareFieldIsAnsweredByTheIndex) {
  const Node exists = Node::MakeExists("insight.xid", 0);
  const std::string terms = "(" + RF("insight.xid\x1f") + " * OR " + RF("insight.xid.") + " *)";
  CompileOptions with_terms;
  with_terms.field_terms = true;
  FakeShares rare(0.01), common(0.5);
  auto q = CompileWith(exists, rare, with_terms);
  EXPECT_EQ(q.fts, terms);
  EXPECT_EQ(q.where, "1");
  EXPECT_EQ(rare.asked_fields, std::vector<std::string>{"insight.xid"});
  q = CompileWith(exists, common, with_terms);
  EXPECT_FALSE(q.fts.has_value());
  EXPECT_EQ(q.where, Check(10));
  FakeShares unasked(0.01);
  q = CompileWith(exists, unasked);  // a file from before field_terms
  EXPECT_FALSE(q.fts.has_value());
  EXPECT_TRUE(unasked.asked_fields.empty());
  // Fields whose existence no term tells: an object holding unindexed
  // fields, an unindexed one, the meta fields and the message.
  for (const char* field :
       {"train", "log", "train.loss", "log.offset", "_index", "_id", "@timestamp", "message"}) {
    q = CompileWith(Node::MakeExists(field, 0), rare, with_terms);
    EXPECT_FALSE(q.fts.has_value()) << field;
  }
  q = CompileWith(Node::MakeExists("log.level", 0), rare, with_terms);
  EXPECT_TRUE(q.fts.has_value());
  // NOT _exists_ needs no row check where the terms tell existence.
  const Node missing = Node::MakeNot(Node::MakeExists("gpu_id", 0), 0);
  q = CompileWith(missing, common, with_terms);
  EXPECT_EQ(q.where.find("dc_match"), std::string::npos) << q.where;
  // Walked in step like any other expression (dc_fts_has spares a prefix's
  // seeks itself).
  EXPECT_EQ(q.where,
            "NOT dc_fts_has(e.key, ?10, 'SELECT fts.rowid FROM fts WHERE fts MATCH ?1 AND "
            "fts.rowid <= ?2 ORDER BY fts.rowid DESC', 'SELECT fts.rowid FROM fts WHERE fts "
            "MATCH ?1 AND fts.rowid >= ?2 ORDER BY fts.rowid', 'SELECT fts.rowid FROM fts WHERE "
            "fts MATCH ?1')");
  q = CompileWith(missing, common);
  EXPECT_NE(q.where.find("dc_match"), std::string::npos) << q.where;
}

// The index costs per event with the field in the whole partition; rows
// per event of the range, until the caller has what it reads.
TEST(FtsQueryCompilerTest, ExistsReadsTheIndexWhenItCostsLessThanRows) {
  const double day = 2'000'000;
  // A search's page and capped count over the whole day: rare fields only.
  EXPECT_GT(ExistsIndexShare(day, day, 10'100), 0.05);
  EXPECT_LT(ExistsIndexShare(day, day, 10'100), 0.5);
  // A histogram reads every match: the index over the day whatever the
  // share, rows over an hour of it unless the field is rare.
  EXPECT_GE(ExistsIndexShare(day, day, 0), 1);
  EXPECT_LT(ExistsIndexShare(day, day / 24, 0), 0.98);
  EXPECT_GT(ExistsIndexShare(day, day / 24, 0), 0.1);
  // An export's statements of 2 000 events each merge the terms again.
  EXPECT_GT(ExistsIndexShare(day, day, 2'000), 0.02);
  EXPECT_LT(ExistsIndexShare(day, day, 2'000), 0.15);
  EXPECT_EQ(ExistsIndexShare(0, 0, 0), 0);
}

TEST(FtsQueryCompilerTest, HostilePatternsStayInsideStrings) {
  FakeTerms terms({"drop", "table", "near"});
  for (const std::string text : {"'); DROP TABLE*", "NEAR(*", "\"*\"", "col:*umn", "^*", "*"}) {
    SCOPED_TRACE(text);
    for (NodeKind kind : {NodeKind::kWildcard, NodeKind::kRegex, NodeKind::kFuzzy}) {
      auto q = CompileFtsQuery(Leaf(kind, "", text, 1), &terms);
      if (!q.ok()) continue;  // a fuzzy text of two words
      EXPECT_EQ(q->where.find(text), std::string::npos) << q->where;
      if (q->fts) {
        // Every byte of user text is inside an FTS5 string: outside them
        // only the compiler's operators remain.
        std::string outside;
        bool in = false;
        for (char c : *q->fts) {
          if (c == '"')
            in = !in;
          else if (!in)
            outside += c;
        }
        EXPECT_EQ(outside.find_first_not_of("() ORANDNOT+*:messagE"), std::string::npos) << *q->fts;
      }
    }
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
  std::vector<Field> fields = {{"hostname", Field::Type::kString, "gpu-01", 0},
                               {"gpu_id", Field::Type::kNumber, "0", 0},
                               {"evil\x1e"
                                "name",
                                Field::Type::kString, "x\x1fy\x1ez", 0}};
  std::string out;
  EncodeAttrs(fields, "logs", out);
  EXPECT_EQ(out, kAttr + "_index" + kSep + "klogs" + "\x1e" + "hostname" + kSep + "sgpu-01" +
                     "\x1e" + "gpu_id" + kSep + "n0" + "\x1e" + "evil_name" + kSep + "sx y z");

  // train.* is left out of the index.
  out.clear();
  EncodeAttrs(
      {{"train.loss", Field::Type::kNumber, "0.5", 0.5}, {"trainer", Field::Type::kString, "a", 0}},
      "", out);
  EXPECT_EQ(out, kAttr + "trainer" + kSep + "sa");
  EXPECT_FALSE(IsIndexedField("train.loss"));
  EXPECT_TRUE(IsIndexedField("train"));

  // So is log.offset, but not the rest of log.
  out.clear();
  EncodeAttrs({{"log.offset", Field::Type::kNumber, "81234", 81234},
               {"log.offsets", Field::Type::kNumber, "1", 1}},
              "", out);
  EXPECT_EQ(out, kAttr + "log.offsets" + kSep + "n1");
  EXPECT_FALSE(IsIndexedField("log.offset"));
  EXPECT_TRUE(IsIndexedField("log.file.path"));

  std::string msg;
  EncodeMessage("hello", msg);
  EXPECT_EQ(msg, kMsg + "hello");
  EXPECT_EQ(EncodeFieldPhrase("a\x1f"
                              "b",
                              "v\x1e"),
            kAttr + "a_b" + kSep + "sv ");
  EXPECT_EQ(EncodeFieldNumber("n", "1.5"), kAttr + "n" + kSep + "n1.5");
}

// A @timestamp range that holds the whole range a query is run on is true
// of every event it reads: no row condition, so FTS5 alone answers.
TEST(FtsQueryCompilerTest, ATimestampRangeHoldingTheReadRangeIsLeftOut) {
  const TimeMs t0 = 1'795'910'400'000;
  const Node range = Node::MakeRange(
      query::Range{"@timestamp", std::to_string(t0), std::to_string(t0 + 3'600'000), true, false},
      0);
  const Node q = And({Msg("epoch"), range});
  CompileOptions inside;
  inside.from = t0 + 60'000;
  inside.to = t0 + 3'600'000;
  auto narrow = CompileFtsQuery(q, nullptr, inside);
  ASSERT_TRUE(narrow.ok());
  EXPECT_EQ(narrow->fts, M("epoch"));
  EXPECT_EQ(narrow->where, "1");
  CompileOptions wider = inside;
  wider.to = t0 + 3'600'001;  // one ms past the range's end
  auto wide = CompileFtsQuery(q, nullptr, wider);
  ASSERT_TRUE(wide.ok());
  EXPECT_EQ(wide->fts, M("epoch"));
  EXPECT_NE(wide->where.find("e.key BETWEEN"), std::string::npos) << wide->where;
  // So is one nested in ANDs, whose terms all drive FTS5.
  const Node nested = And({Term("user", "bob"), And({And({Msg("a"), Msg("b")}), range})});
  auto flat = CompileFtsQuery(nested, nullptr, inside);
  ASSERT_TRUE(flat.ok());
  EXPECT_EQ(flat->where, "1");
  EXPECT_NE(flat->fts->find(M("a")), std::string::npos) << *flat->fts;
  EXPECT_NE(flat->fts->find(M("b")), std::string::npos) << *flat->fts;
  // Negated, it is false of every event read.
  auto negated = CompileFtsQuery(And({Msg("epoch"), Not(range)}), nullptr, inside);
  ASSERT_TRUE(negated.ok());
  EXPECT_EQ(negated->where, "(NOT (1))");
}

TEST(FtsQueryCompilerTest, TimestampRangesEveryMatchLiesInNarrowTheReadRange) {
  const auto range = [](std::string lo, std::string hi, bool inc_lo = true, bool inc_hi = true) {
    return Node::MakeRange(query::Range{"@timestamp", std::move(lo), std::move(hi), inc_lo, inc_hi},
                           0);
  };
  const auto narrowed = [](const Node& q) {
    TimeMs from = 0, to = 10'000;
    NarrowToTimestampRanges(q, from, to);
    return std::pair{from, to};
  };
  using Span = std::pair<TimeMs, TimeMs>;
  EXPECT_EQ(narrowed(range("100", "200")), (Span{100, 201}));
  EXPECT_EQ(narrowed(range("100", "200", false, false)), (Span{101, 200}));
  EXPECT_EQ(narrowed(range("100", "")), (Span{100, 10'000}));
  EXPECT_EQ(narrowed(range("", "20000")), (Span{0, 10'000}));
  EXPECT_EQ(narrowed(And({Msg("a"), range("100", "900"), range("300", "")})), (Span{300, 901}));
  // A scope filter around an Elasticsearch bool around a query_string.
  EXPECT_EQ(
      narrowed(And({Term("user", "bob"), And({And({Msg("a"), Msg("b")}), range("100", "200")})})),
      (Span{100, 201}));
  // Not every match lies in it: nothing narrows.
  EXPECT_EQ(narrowed(Or({Msg("a"), range("100", "200")})), (Span{0, 10'000}));
  EXPECT_EQ(narrowed(And({Msg("a"), Not(range("100", "200"))})), (Span{0, 10'000}));
  EXPECT_EQ(narrowed(And({Msg("a"), Or({range("1", "2"), Msg("b")})})), (Span{0, 10'000}));
  EXPECT_EQ(narrowed(range("x", "200")), (Span{0, 10'000}));  // unreadable: the compiler says so
  EXPECT_EQ(narrowed(Term("gpu_id", "3")), (Span{0, 10'000}));
}

}  // namespace
}  // namespace dashcam::storage
