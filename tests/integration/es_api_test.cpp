// The Elasticsearch-compatible API against the real binary: Filebeat's
// connect sequence, and _search/_count with the Query DSL subset,
// aggregations and search_after paging.
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <boost/json.hpp>

#include "tests/common/http_client.h"
#include "tests/common/test_server.h"

namespace dashcam::testing::es_api_test {
namespace {

namespace json = boost::json;

class EsApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = std::make_unique<TestServer>(dir_.path() + "/data",
                                           std::vector<std::string>{"--es-version", "8.19.2"});
    ASSERT_TRUE(server_->Start()) << server_->ReadLog();
    client_ = std::make_unique<HttpClient>("127.0.0.1", server_->port());
  }
  void TearDown() override { EXPECT_EQ(server_->Stop(), 0); }

  // Ten events a minute apart: even ones by alice with "cuda out of memory".
  void Seed() {
    std::string body;
    for (int i = 0; i < 10; ++i) {
      const char* user = i % 2 == 0 ? "alice" : "bob";
      const char* msg = i % 2 == 0 ? "RuntimeError: CUDA out of memory" : "epoch 1 step 10";
      body += R"({"create":{"_index":")" + std::string(i < 5 ? "filebeat-a" : "other-b") + "\"}}\n";
      body += "{\"@timestamp\":\"2026-11-29T10:0" + std::to_string(i) +
              ":00.000Z\",\"message\":\"" + msg + "\",\"user\":\"" + user +
              "\",\"gpu_id\":" + std::to_string(i % 3) + "}\n";
    }
    auto res = client_->Post("/_bulk", body, {{"Content-Type", "application/x-ndjson"}});
    ASSERT_EQ(res.status, 200) << res.body;
    ASSERT_FALSE(json::parse(res.body).at("errors").as_bool());
  }

  json::value SearchJson(const std::string& target, const std::string& body, int want = 200) {
    auto res = client_->Request(
        body.empty() ? "GET" : "POST", target, body,
        {{"Content-Type", "application/vnd.elasticsearch+json; compatible-with=8"}});
    EXPECT_EQ(res.status, want) << res.body;
    EXPECT_EQ(res.headers["x-elastic-product"], "Elasticsearch");
    EXPECT_NE(res.headers["content-type"].find("application/json"), std::string::npos);
    return json::parse(res.body);
  }

  static std::vector<std::string> Users(const json::value& v) {
    std::vector<std::string> out;
    for (const auto& hit : v.at("hits").at("hits").as_array()) {
      out.emplace_back(hit.at("_source").at("user").as_string());
    }
    return out;
  }

  TempDir dir_;
  std::unique_ptr<TestServer> server_;
  std::unique_ptr<HttpClient> client_;
};

TEST_F(EsApiTest, FilebeatConnectSequenceSucceedsWithIndexManagementOnAndOff) {
  auto info = client_->Request("GET", "/", {}, {{"Accept", "application/json"}});
  ASSERT_EQ(info.status, 200);
  auto v = json::parse(info.body);
  EXPECT_EQ(v.at("version").at("number").as_string(), "8.19.2");
  EXPECT_EQ(v.at("version").at("build_flavor").as_string(), "default");
  EXPECT_EQ(client_->Request("HEAD", "/").status, 200);
  auto lic = client_->Get("/_license?human=false");
  ASSERT_EQ(lic.status, 200);
  EXPECT_EQ(json::parse(lic.body).at("license").at("status").as_string(), "active");
  EXPECT_EQ(client_->Get("/_ilm/policy/filebeat").status, 200);
  EXPECT_EQ(client_->Request("HEAD", "/_index_template/filebeat-8.19.2").status, 200);
  EXPECT_EQ(client_->Request("PUT", "/_index_template/filebeat-8.19.2", "{}").status, 200);
  EXPECT_EQ(client_->Request("PUT", "/_ilm/policy/filebeat", "{}").status, 200);
  EXPECT_EQ(client_->Get("/_data_stream/filebeat-8.19.2").status, 200);
  EXPECT_EQ(client_->Request("PUT", "/_data_stream/filebeat-8.19.2").status, 200);
  EXPECT_EQ(client_->Get("/_ingest/pipeline/filebeat-8.19.2-system-syslog").status, 200);
  auto health = client_->Get("/_cluster/health");
  EXPECT_EQ(json::parse(health.body).at("status").as_string(), "green");
  EXPECT_EQ(client_->Post("/filebeat-a/_refresh", "").status, 200);
}

TEST_F(EsApiTest, SearchWithQueryDslUrlQueryAndIndexPatterns) {
  Seed();
  auto v = SearchJson("/_search",
                      R"({"query":{"match_phrase":{"message":"CUDA out of memory"}},"size":100})");
  EXPECT_EQ(Users(v), (std::vector<std::string>(5, "alice")));
  EXPECT_EQ(v.at("hits").at("total").at("value").as_int64(), 5);
  EXPECT_EQ(v.at("hits").at("total").at("relation").as_string(), "eq");

  // URL q with Elasticsearch's default operator OR, and an index pattern.
  v = SearchJson("/filebeat-*/_search?q=" + UrlEncode("user:bob cuda") + "&size=100", "");
  EXPECT_EQ(v.at("hits").at("total").at("value").as_int64(), 5);  // indices a: events 0..4
  v = SearchJson(
      "/filebeat-*/_search?q=" + UrlEncode("user:bob cuda") + "&default_operator=AND&size=100", "");
  EXPECT_EQ(v.at("hits").at("total").at("value").as_int64(), 0);

  v = SearchJson("/_search", R"({"query":{"bool":{"must":[{"term":{"user.keyword":"alice"}}],
      "must_not":[{"terms":{"gpu_id":[0]}}],
      "filter":[{"range":{"@timestamp":{"gte":"2026-11-29T10:01:00Z","lt":1795946940000}}}]}}})");
  // alice at minutes 0,2,4,6,8; gpu_id = i%3 -> minute 2 (2), 4 (1), 8 (2); before 10:09.
  EXPECT_EQ(v.at("hits").at("total").at("value").as_int64(), 3);

  // exists and a numeric range on a field: gpu_id = i % 3 -> i in {1,2,4,5,7,8}.
  v = SearchJson("/_count", R"({"query":{"bool":{"filter":[{"exists":{"field":"gpu_id"}},
      {"range":{"gpu_id":{"gte":1}}}]}}})");
  EXPECT_EQ(v.at("count").as_int64(), 6);
  v = SearchJson("/_count", R"({"query":{"exists":{"field":"no_such_field"}}})");
  EXPECT_EQ(v.at("count").as_int64(), 0);

  // Epoch-ms bounds past any event time, even past int64 (found by the
  // es_query fuzzer: 2.1e36 was cast to an int64), select what the nearest
  // possible time would.
  v = SearchJson("/_count", R"({"query":{"range":{"@timestamp":{"gte":2.1e36}}}})");
  EXPECT_EQ(v.at("count").as_int64(), 0);
  v = SearchJson("/_count", R"({"query":{"range":{"@timestamp":{"gt":-1e300,"lt":1e300}}}})");
  EXPECT_EQ(v.at("count").as_int64(), 10);
  v = SearchJson("/_count",
                 R"({"query":{"range":{"@timestamp":{"lte":18446744073709551615,
                     "gte":-9223372036854775808}}}})");
  EXPECT_EQ(v.at("count").as_int64(), 10);
  v = SearchJson("/_count", R"({"query":{"range":{"@timestamp":{"lt":-5}}}})");
  EXPECT_EQ(v.at("count").as_int64(), 0);

  v = SearchJson("/_count", R"({"query":{"match":{"message":"cuda epoch"}}})");
  EXPECT_EQ(v.at("count").as_int64(), 10);
  v = SearchJson("/_count",
                 R"({"query":{"match":{"message":{"query":"cuda epoch","operator":"and"}}}})");
  EXPECT_EQ(v.at("count").as_int64(), 0);
}

TEST_F(EsApiTest, SearchAfterPagesNewestFirstWithoutDuplicates) {
  Seed();
  std::set<std::string> ids;
  std::vector<std::int64_t> times;
  json::value after;
  for (int page = 0; page < 10; ++page) {
    std::string body = R"({"size":3,"sort":[{"@timestamp":{"order":"desc"}}])";
    if (!after.is_null()) body += ",\"search_after\":" + json::serialize(after);
    body += "}";
    auto v = SearchJson("/_search", body);
    const auto& hits = v.at("hits").at("hits").as_array();
    if (hits.empty()) break;
    for (const auto& h : hits) {
      EXPECT_TRUE(ids.insert(std::string(h.at("_id").as_string())).second);
      times.push_back(h.at("sort").as_array()[0].as_int64());
    }
    after = hits.back().at("sort");
  }
  EXPECT_EQ(ids.size(), 10u);
  EXPECT_TRUE(std::is_sorted(times.rbegin(), times.rend()));
}

TEST_F(EsApiTest, DateHistogramAndTermsAggregations) {
  Seed();
  auto v = SearchJson("/_search", R"({"size":0,"aggs":{
      "t":{"date_histogram":{"field":"@timestamp","fixed_interval":"2m"}},
      "u":{"terms":{"field":"user.keyword","size":1}}}})");
  const auto& buckets = v.at("aggregations").at("t").at("buckets").as_array();
  ASSERT_EQ(buckets.size(), 5u);
  EXPECT_EQ(buckets[0].at("key_as_string").as_string(), "2026-11-29T10:00:00.000Z");
  for (const auto& b : buckets) EXPECT_EQ(b.at("doc_count").as_int64(), 2);
  const auto& u = v.at("aggregations").at("u");
  ASSERT_EQ(u.at("buckets").as_array().size(), 1u);
  EXPECT_EQ(u.at("buckets").as_array()[0].at("doc_count").as_int64(), 5);
  EXPECT_EQ(u.at("sum_other_doc_count").as_int64(), 5);
}

TEST_F(EsApiTest, UnsupportedFeaturesAre400sThatNameThem) {
  Seed();
  auto reason = [&](const std::string& body) {
    auto v = SearchJson("/_search", body, 400);
    EXPECT_EQ(v.at("status").as_int64(), 400);
    return std::string(v.at("error").at("reason").as_string());
  };
  EXPECT_NE(reason(R"({"query":{"fuzzy":{"user":"alice"}}})").find("fuzzy"), std::string::npos);
  EXPECT_NE(reason(R"({"sort":[{"user":"asc"}]})").find("user"), std::string::npos);
  EXPECT_NE(reason(R"({"aggs":{"x":{"avg":{"field":"gpu_id"}}}})").find("avg"), std::string::npos);
  EXPECT_NE(reason(R"({"from":9995,"size":10})").find("Result window"), std::string::npos);
  EXPECT_NE(reason(R"({"query":{"query_string":{"query":"(cuda"}}})").find("position"),
            std::string::npos);
  EXPECT_NE(reason("{not json").find("JSON"), std::string::npos);
}

// Every value of a terms query, word of a match and leaf of a query_string is
// an index lookup in each day searched: past 4096 of them the query is a 400
// naming the limit, before it is built (a million values once held a query
// thread for minutes); the limit itself still searches.
TEST_F(EsApiTest, QueriesPastTheClauseLimitAre400sThatNameIt) {
  Seed();
  auto terms = [](std::size_t n) {
    std::string values = R"("alice")";
    for (std::size_t i = 1; i < n; ++i) values += ",\"user" + std::to_string(i) + "\"";
    return values;
  };
  auto at_limit = SearchJson(
      "/_search", R"({"size":10,"query":{"terms":{"user.keyword":[)" + terms(4096) + "]}}}");
  EXPECT_EQ(at_limit.at("hits").at("total").at("value").as_int64(), 5);

  auto reason = [&](const std::string& body) {
    auto v = SearchJson("/_search", body, 400);
    return std::string(v.at("error").at("reason").as_string());
  };
  const std::string limit = "more than 4096 clauses";
  EXPECT_NE(reason(R"({"query":{"terms":{"user":[)" + terms(4097) + "]}}}").find(limit),
            std::string::npos);
  EXPECT_NE(reason(R"({"query":{"terms":{"user":[)" + terms(60000) + "]}}}").find(limit),
            std::string::npos);
  // Clauses add up across a bool query.
  std::string words;
  for (int i = 0; i < 2000; ++i) words += " w" + std::to_string(i);
  EXPECT_NE(reason(R"({"query":{"bool":{"should":[{"match":{"message":")" + words +
                   R"("}},{"match_phrase":{"message":")" + words + R"("}},{"terms":{"user":[)" +
                   terms(97) + "]}}]}}}")
                .find(limit),
            std::string::npos);
  std::string letters;
  for (int i = 0; i < 4097; ++i) letters += "a ";
  EXPECT_NE(reason(R"({"query":{"query_string":{"query":")" + letters + R"("}}})").find(limit),
            std::string::npos);
  auto count = SearchJson("/_count", R"({"query":{"terms":{"user":[)" + terms(3) + "]}}}");
  EXPECT_EQ(count.at("count").as_int64(), 5);
}

// A _search body is parsed whole into JSON (a 50 MB one took the server to
// 1.2 GB), so it is held to --max-search-body-bytes (1 MiB by default), not
// to the ingest bodies' --max-body-bytes.
TEST_F(EsApiTest, SearchBodiesPastTheSearchBodyLimitGet413AndBulkBodiesDoNot) {
  Seed();
  const std::string pad(1'100'000, 'x');
  auto too_big = client_->Post("/_search", R"({"query":{"match_all":{}},"pad":")" + pad + "\"}",
                               {{"Content-Type", "application/json"}});
  EXPECT_EQ(too_big.status, 413) << too_big.body;
  EXPECT_NE(too_big.body.find("--max-search-body-bytes"), std::string::npos) << too_big.body;
  auto count =
      client_->Post("/_count", R"({"pad":")" + pad + "\"}", {{"Content-Type", "application/json"}});
  EXPECT_EQ(count.status, 413) << count.body;
  // A client that writes its whole body before it reads (as this one does)
  // gets the 413 too, not a reset: the server reads and drops what comes
  // before it closes.
  const std::string huge(16'000'000, ' ');
  EXPECT_EQ(client_->Post("/_search", "{}" + huge, {{"Content-Type", "application/json"}}).status,
            413);

  // Under the limit the body is read and parsed: its unknown key is named.
  auto under = SearchJson("/_search", R"({"pad":")" + pad.substr(0, 1'000'000) + "\"}", 400);
  EXPECT_NE(under.at("error").at("reason").as_string().find("[pad]"), std::string::npos);

  std::string bulk;
  for (int i = 0; bulk.size() < 2'000'000; ++i) {
    bulk += "{\"create\":{\"_index\":\"big\"}}\n{\"message\":\"line " + std::to_string(i) + " " +
            pad.substr(0, 1000) + "\"}\n";
  }
  auto stored = client_->Post("/_bulk", bulk, {{"Content-Type", "application/x-ndjson"}});
  ASSERT_EQ(stored.status, 200) << stored.body.substr(0, 300);
  EXPECT_FALSE(json::parse(stored.body).at("errors").as_bool());
}

}  // namespace
}  // namespace dashcam::testing::es_api_test
