// Integration tests of authentication against the real binary (issue 6 §2):
// each role against each endpoint (ES-compatible and ingest paths included),
// every Authorization form, 401's challenge, the failure rate limit, the
// refusal to open a non-loopback listener without auth, and a read key's row
// filter on every read endpoint (search, histogram, fields, context,
// export, tail, _search, _count with aggregations).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <boost/json.hpp>

#include "tests/common/api_keys.h"
#include "tests/common/http_client.h"
#include "tests/common/stream_client.h"
#include "tests/common/test_server.h"

namespace dashcam::testing::auth_test {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;
using Headers = std::map<std::string, std::string>;

std::string WriteKeysFile(const TempDir& dir) {
  const std::string path = dir.path() + "/keys.yml";
  std::ofstream f(path);
  f << "keys:\n"
    << HashKeyEntry("ingester", "ingest", "ingest-secret-1")
    << HashKeyEntry("reader", "read", "read-secret-2")
    << HashKeyEntry("alice", "read", "alice-secret-3", "user:alice")
    << HashKeyEntry("root", "admin", "admin-secret-4");
  return path;
}

TEST(HashKeyEntryTest, HoldsTheKeysHashNotTheKey) {
  const std::string entry = HashKeyEntry("ingester", "ingest", "ingest-secret-1");
  ASSERT_FALSE(entry.empty());
  EXPECT_NE(entry.find("ingester"), std::string::npos) << entry;
  EXPECT_EQ(entry.find("ingest-secret-1"), std::string::npos) << entry;
  EXPECT_EQ(Base64("reader:read-secret-2"), "cmVhZGVyOnJlYWQtc2VjcmV0LTI=");
}

enum Who { kNone, kBadKey, kIngest, kRead, kAlice, kAdmin, kWhoCount };
const char* const kWhoNames[] = {"no key", "bad key", "ingest", "read", "read+filter", "admin"};

Headers AuthFor(Who who) {
  switch (who) {
    case kNone:
      return {};
    case kBadKey:
      return {{"Authorization", "ApiKey " + Base64("reader:not-the-key")}};
    case kIngest:
      return {{"Authorization", "ApiKey " + Base64("ingester:ingest-secret-1")}};
    case kRead:
      return {{"Authorization", "Basic " + Base64("reader:read-secret-2")}};
    case kAlice:
      return {{"Authorization", "Bearer alice:alice-secret-3"}};
    default:
      return {{"Authorization", "ApiKey " + Base64("root:admin-secret-4")}};
  }
}

// Fixed times, a day in the past, so that `now` does not matter.
constexpr std::int64_t kBaseMs = 1'764'324'000'000;  // 2025-11-28T10:00:00Z
constexpr int kPerUser = 12;

std::string BulkOf(const std::vector<std::string>& docs, const std::string& index = "train") {
  std::string body;
  for (const auto& d : docs) body += R"({"create":{"_index":")" + index + "\"}}\n" + d + "\n";
  return body;
}

std::string Event(std::int64_t ts, const std::string& user, int step) {
  json::object o;
  o["@timestamp"] = ts;
  o["user"] = user;
  o["message"] = user == "bob" ? "step " + std::to_string(step) + " bobsecret loss"
                               : "step " + std::to_string(step) + " loss";
  o["host"] = json::object{{"name", "gpu-node-01"}};
  o["log"] = json::object{{"file", json::object{{"path", "/var/log/train.log"}}}};
  return json::serialize(o);
}

class AuthTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    const std::string keys = WriteKeysFile(*dir_);
    server_ = new TestServer(dir_->path() + "/data", {"--auth-file", keys, "--auth-failure-burst",
                                                      "100000"});  // limits: their own test
    ASSERT_TRUE(server_->Start()) << server_->error() << server_->ReadLog();
    // Alice's and Bob's events interleaved in one file of one host, so that
    // every unfiltered answer (context's neighbours included) mixes them.
    std::vector<std::string> docs;
    for (int i = 0; i < 2 * kPerUser; ++i) {
      docs.push_back(Event(kBaseMs + i * 1000, i % 2 == 0 ? "alice" : "bob", i));
    }
    HttpClient c("127.0.0.1", server_->port());
    auto r = c.Request("POST", "/_bulk", BulkOf(docs), AuthFor(kAdmin));
    ASSERT_EQ(r.status, 200) << r.body;
    ASSERT_EQ(r.body.find("\"errors\":true"), std::string::npos) << r.body;
  }
  static void TearDownTestSuite() {
    delete server_;
    delete dir_;
  }

  static HttpResult As(Who who, std::string_view method, std::string_view target,
                       std::string_view body = {}, Headers extra = {}) {
    HttpClient c("127.0.0.1", server_->port());
    Headers h = AuthFor(who);
    h.insert(extra.begin(), extra.end());
    return c.Request(method, target, body, h);
  }
  static json::value JsonAs(Who who, std::string_view method, std::string_view target,
                            std::string_view body = {}) {
    auto r = As(who, method, target, body, {{"Content-Type", "application/json"}});
    EXPECT_EQ(r.status, 200) << target << " " << r.body;
    return r.status == 200 ? json::parse(r.body) : json::value();
  }

  static TempDir* dir_;
  static TestServer* server_;
};
TempDir* AuthTest::dir_ = nullptr;
TestServer* AuthTest::server_ = nullptr;

struct EndpointCase {
  const char* method;
  const char* target;
  const char* body;
  Headers headers;
  int expect[kWhoCount];  // by Who
  bool stream = false;    // read only the status (tail never ends)
};

TEST_F(AuthTest, EachRoleAgainstEachEndpoint) {
  const std::string doc = R"({"@timestamp":"2025-11-27T10:00:00Z","message":"m","user":"t"})";
  const std::string bulk = "{\"create\":{}}\n" + doc + "\n";
  const std::string ndjson = doc + "\n";
  const Headers html = {{"Accept", "text/html"}};
  const Headers js = {{"Accept", "application/json"}};
  const Headers nd = {{"Content-Type", "application/x-ndjson"}};
  const Headers cj = {{"Content-Type", "application/json"}};
  const std::vector<EndpointCase> cases = {
      // Open: the page, its assets, liveness.
      {"GET", "/", "", html, {200, 200, 200, 200, 200, 200}},
      {"GET", "/app.js", "", {}, {200, 200, 200, 200, 200, 200}},
      {"GET", "/healthz", "", {}, {200, 200, 200, 200, 200, 200}},
      // Elasticsearch connect-time endpoints: any key.
      {"GET", "/", "", js, {401, 401, 200, 200, 200, 200}},
      {"GET", "/_license", "", {}, {401, 401, 200, 200, 200, 200}},
      {"GET", "/_cluster/health", "", {}, {401, 401, 200, 200, 200, 200}},
      // Ingest, and what Filebeat writes when it connects.
      {"POST", "/_bulk", bulk.c_str(), nd, {401, 401, 200, 403, 403, 200}},
      {"POST", "/other/_bulk", bulk.c_str(), nd, {401, 401, 200, 403, 403, 200}},
      {"POST", "/api/v1/ingest", ndjson.c_str(), nd, {401, 401, 200, 403, 403, 200}},
      {"PUT", "/_index_template/dashcam", "{}", cj, {401, 401, 200, 403, 403, 200}},
      {"PUT", "/_ilm/policy/dashcam", "{}", cj, {401, 401, 200, 403, 403, 200}},
      {"POST", "/_refresh", "", {}, {401, 401, 200, 403, 403, 200}},
      // Reads.
      {"GET", "/api/v1/search?q=loss", "", {}, {401, 401, 403, 200, 200, 200}},
      {"GET", "/api/v1/histogram", "", {}, {401, 401, 403, 200, 200, 200}},
      {"GET", "/api/v1/fields", "", {}, {401, 401, 403, 200, 200, 200}},
      {"GET", "/api/v1/context?id=0000000000000001", "", {}, {401, 401, 403, 404, 404, 404}},
      {"GET", "/api/v1/export", "", {}, {401, 401, 403, 200, 200, 200}},
      {"GET", "/api/v1/tail", "", {}, {401, 401, 403, 200, 200, 200}, true},
      {"GET", "/api/v1/redaction/rules", "", {}, {401, 401, 403, 200, 200, 200}},
      {"GET", "/_search", "", {}, {401, 401, 403, 200, 200, 200}},
      {"POST",
       "/train/_search",
       R"({"query":{"match_all":{}}})",
       cj,
       {401, 401, 403, 200, 200, 200}},
      {"GET", "/_count", "", {}, {401, 401, 403, 200, 200, 200}},
      // Fleet-wide counts: not for a filtered key.
      {"GET", "/metrics", "", {}, {401, 401, 403, 200, 403, 200}},
      // Anything else: admin only (who then learns it does not exist).
      {"GET", "/no/such/endpoint", "", {}, {401, 401, 403, 403, 403, 404}},
  };
  for (const auto& c : cases) {
    for (int who = 0; who < kWhoCount; ++who) {
      SCOPED_TRACE(std::string(c.method) + " " + c.target + " as " + kWhoNames[who]);
      int status = 0;
      std::string body;
      if (c.stream) {
        StreamClient s(server_->port());
        std::string extra;
        for (const auto& [k, v] : AuthFor(Who(who))) extra += k + ": " + v + "\r\n";
        ASSERT_TRUE(s.SendGet(c.target, extra));
        ASSERT_TRUE(s.ReadHeader(10s));
        status = s.status();
      } else {
        Headers h = c.headers;
        for (const auto& kv : AuthFor(Who(who))) h.insert(kv);
        HttpClient client("127.0.0.1", server_->port());
        auto r = client.Request(c.method, c.target, c.body, h);
        status = r.status;
        body = r.body;
        if (status == 401) {
          EXPECT_NE(r.headers["www-authenticate"].find("ApiKey"), std::string::npos);
          EXPECT_NE(r.headers["www-authenticate"].find("Basic realm="), std::string::npos);
        }
        if (status == 401 || status == 403) {
          auto v = json::parse(r.body);
          EXPECT_EQ(v.at("error").at("type").as_string(), "security_exception") << r.body;
        }
      }
      EXPECT_EQ(status, c.expect[who]) << body.substr(0, 300);
    }
  }
}

TEST_F(AuthTest, EveryHeaderFormIsAccepted) {
  const std::vector<std::string> good = {
      "ApiKey " + Base64("reader:read-secret-2"),
      "apikey " + Base64("reader:read-secret-2"),  // schemes are case-insensitive
      "Basic " + Base64("reader:read-secret-2"),  "Bearer reader:read-secret-2",
      "Bearer " + Base64("reader:read-secret-2"),
  };
  for (const auto& h : good) {
    auto r = As(kNone, "GET", "/api/v1/search?q=loss", {}, {{"Authorization", h}});
    EXPECT_EQ(r.status, 200) << h << " " << r.body;
  }
  const std::vector<std::string> bad = {
      "Token reader:read-secret-2",
      "Basic !!!not-base64!!!",
      "Basic " + Base64("reader-read-secret-2"),  // no ':'
      "Basic " + Base64("reader:"),
      "Bearer reader:read-secret-3",
      "Bearer",
      "ApiKey " + Base64("nobody:read-secret-2"),
      "ApiKey " + Base64("reader:read-secret-2x"),
  };
  for (const auto& h : bad) {
    auto r = As(kNone, "GET", "/api/v1/search?q=loss", {}, {{"Authorization", h}});
    EXPECT_EQ(r.status, 401) << h << " " << r.body;
    EXPECT_NE(r.headers["www-authenticate"].find("Basic realm=\"dashcam\""), std::string::npos);
    EXPECT_EQ(json::parse(r.body).at("error").at("type").as_string(), "security_exception");
  }
}

// A Basic challenge makes browsers open their own credentials dialog, even
// for fetch(); the page's requests (X-Dashcam-Client: web) get only ApiKey's.
TEST_F(AuthTest, PageRequestsGetNoBasicChallenge) {
  const Headers page = {{"X-Dashcam-Client", "web"}};
  const std::vector<Headers> refused = {
      page,
      {{"X-Dashcam-Client", "web"}, {"Authorization", "ApiKey " + Base64("reader:wrong")}},
      {{"X-Dashcam-Client", "web"}, {"Authorization", "Basic !!!"}},
  };
  for (const auto& h : refused) {
    auto r = As(kNone, "GET", "/api/v1/search?q=loss", {}, h);
    EXPECT_EQ(r.status, 401) << r.body;
    EXPECT_EQ(r.headers["www-authenticate"], R"(ApiKey realm="dashcam")");
    EXPECT_EQ(json::parse(r.body).at("error").at("type").as_string(), "security_exception");
  }
  // Everyone else, another value of the header included, keeps all three.
  for (const Headers& h : {Headers{}, Headers{{"X-Dashcam-Client", "curl"}}}) {
    auto r = As(kNone, "GET", "/api/v1/search?q=loss", {}, h);
    EXPECT_EQ(r.status, 401) << r.body;
    const std::string challenge = r.headers["www-authenticate"];
    for (const char* scheme : {"ApiKey realm=", "Basic realm=", "Bearer realm="}) {
      EXPECT_NE(challenge.find(scheme), std::string::npos) << challenge;
    }
  }
  // The header changes nothing else: a good key passes, a wrong role is 403.
  EXPECT_EQ(As(kRead, "GET", "/api/v1/search?q=loss", {}, page).status, 200);
  EXPECT_EQ(As(kIngest, "GET", "/api/v1/search?q=loss", {}, page).status, 403);
}

TEST_F(AuthTest, RowFilterLeaksNothingOnAnyReadEndpoint) {
  // The data is there: an unfiltered reader sees both users.
  auto all = JsonAs(kRead, "GET", "/api/v1/search?track_total_hits=true&q=loss");
  ASSERT_EQ(all.at("total").as_int64(), 2 * kPerUser);

  // Search, whatever the query tries.
  for (const char* q :
       {"loss", "user:bob", "bobsecret", "user:bob%20OR%20user:alice", "NOT%20user:alice", "*"}) {
    SCOPED_TRACE(q);
    auto r =
        As(kAlice, "GET", std::string("/api/v1/search?limit=100&track_total_hits=true&q=") + q);
    if (r.status == 400) continue;  // a query the language rejects leaks nothing either
    ASSERT_EQ(r.status, 200) << r.body;
    auto v = json::parse(r.body);
    for (const auto& hit : v.at("hits").as_array()) {
      EXPECT_EQ(hit.at("_source").at("user").as_string(), "alice");
    }
    const std::string qs = q;
    const bool alice_visible = qs == "loss" || qs.find("alice") != std::string::npos || qs == "*";
    EXPECT_EQ(v.at("total").as_int64(),
              alice_visible && qs.find("NOT") == std::string::npos ? kPerUser : 0);
  }

  // Histogram totals.
  const std::string range =
      "from=" + std::to_string(kBaseMs - 1000) + "&to=" + std::to_string(kBaseMs + 60'000);
  auto h = JsonAs(kAlice, "GET", "/api/v1/histogram?interval=1s&" + range);
  EXPECT_EQ(h.at("total").as_int64(), kPerUser);
  std::int64_t sum = 0;
  for (const auto& b : h.at("buckets").as_array()) sum += b.at("count").as_int64();
  EXPECT_EQ(sum, kPerUser);
  auto hall = JsonAs(kRead, "GET", "/api/v1/histogram?interval=1s&" + range);
  EXPECT_EQ(hall.at("total").as_int64(), 2 * kPerUser);
  // The auto range comes from the extent of what the key may see.
  auto hauto = JsonAs(kAlice, "GET", "/api/v1/histogram");
  EXPECT_EQ(hauto.at("total").as_int64(), kPerUser);

  // Fields: counts and values.
  auto f = JsonAs(kAlice, "GET", "/api/v1/fields?q=loss");
  EXPECT_EQ(f.at("sample_size").as_int64(), kPerUser);
  bool saw_user = false;
  for (const auto& field : f.at("fields").as_array()) {
    if (field.at("field").as_string() != "user") continue;
    saw_user = true;
    EXPECT_EQ(field.at("count").as_int64(), kPerUser);
    ASSERT_EQ(field.at("top").as_array().size(), 1u);
    EXPECT_EQ(field.at("top").as_array()[0].at("value").as_string(), "alice");
  }
  EXPECT_TRUE(saw_user);

  // Context: Bob's event cannot be an anchor; Alice's has only Alice around.
  auto ids = JsonAs(kRead, "GET", "/api/v1/search?limit=100&q=loss");
  std::string alice_id, bob_id;
  for (const auto& hit : ids.at("hits").as_array()) {
    const bool bob = hit.at("_source").at("user").as_string() == "bob";
    (bob ? bob_id : alice_id) = std::string(hit.at("_id").as_string());
  }
  ASSERT_FALSE(alice_id.empty());
  ASSERT_FALSE(bob_id.empty());
  EXPECT_EQ(As(kAlice, "GET", "/api/v1/context?id=" + bob_id).status, 404);
  EXPECT_EQ(As(kRead, "GET", "/api/v1/context?id=" + bob_id).status, 200);
  auto ctx = JsonAs(kAlice, "GET", "/api/v1/context?before=50&after=50&id=" + alice_id);
  EXPECT_EQ(ctx.at("events").as_array().size(), static_cast<std::size_t>(kPerUser));
  for (const auto& e : ctx.at("events").as_array()) {
    EXPECT_EQ(e.at("_source").at("user").as_string(), "alice");
  }

  // Export.
  auto ex = As(kAlice, "GET", "/api/v1/export?q=loss");
  ASSERT_EQ(ex.status, 200);
  EXPECT_EQ(ex.body.find("bobsecret"), std::string::npos);
  std::size_t lines = 0;
  for (char c : ex.body) lines += c == '\n';
  EXPECT_EQ(lines, static_cast<std::size_t>(kPerUser));

  // Elasticsearch _search with aggregations, and _count.
  auto es = JsonAs(kAlice, "POST", "/train/_search",
                   R"({"size":100,"track_total_hits":true,"query":{"match":{"message":"loss"}},
                       "aggs":{"users":{"terms":{"field":"user"}},
                               "t":{"date_histogram":{"field":"@timestamp","fixed_interval":"1m"}}}})");
  EXPECT_EQ(es.at("hits").at("total").at("value").as_int64(), kPerUser);
  for (const auto& hit : es.at("hits").at("hits").as_array()) {
    EXPECT_EQ(hit.at("_source").at("user").as_string(), "alice");
  }
  const auto& buckets = es.at("aggregations").at("users").at("buckets").as_array();
  ASSERT_EQ(buckets.size(), 1u);
  EXPECT_EQ(buckets[0].at("key").as_string(), "alice");
  std::int64_t dsum = 0;
  for (const auto& b : es.at("aggregations").at("t").at("buckets").as_array()) {
    dsum += b.at("doc_count").as_int64();
  }
  EXPECT_EQ(dsum, kPerUser);
  EXPECT_EQ(JsonAs(kAlice, "GET", "/_count?q=loss").at("count").as_int64(), kPerUser);
  EXPECT_EQ(JsonAs(kAlice, "POST", "/_count", R"({"query":{"term":{"user":"bob"}}})")
                .at("count")
                .as_int64(),
            0);
  EXPECT_EQ(JsonAs(kRead, "POST", "/_count", R"({"query":{"term":{"user":"bob"}}})")
                .at("count")
                .as_int64(),
            kPerUser);
}

TEST_F(AuthTest, RowFilterAppliesToLiveTail) {
  // Two tails with the same query text: the filtered one must not share the
  // unfiltered one's evaluation.
  auto open = [&](Who who) {
    auto s = std::make_unique<StreamClient>(server_->port());
    std::string extra;
    for (const auto& [k, v] : AuthFor(who)) extra += k + ": " + v + "\r\n";
    EXPECT_TRUE(s->SendGet("/api/v1/tail?q=live&format=text", extra));
    EXPECT_TRUE(s->ReadHeader(10s));
    EXPECT_EQ(s->status(), 200);
    return s;
  };
  auto alice = open(kAlice);
  auto reader = open(kRead);
  const std::int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                               std::chrono::system_clock::now().time_since_epoch())
                               .count();
  std::vector<std::string> docs;
  for (int i = 0; i < 6; ++i) {
    json::object o;
    o["@timestamp"] = now + i;
    o["user"] = i % 2 == 0 ? "alice" : "bob";
    o["message"] =
        std::string("live ") + (i % 2 == 0 ? "alicemark" : "bobsecret") + " " + std::to_string(i);
    docs.push_back(json::serialize(o));
  }
  auto r = As(kIngest, "POST", "/_bulk", BulkOf(docs, "live"),
              {{"Content-Type", "application/x-ndjson"}});
  ASSERT_EQ(r.status, 200) << r.body;
  auto count = [](const std::string& body, std::string_view what) {
    std::size_t n = 0;
    for (std::size_t at = 0; (at = body.find(what, at)) != std::string::npos; at += what.size()) {
      ++n;
    }
    return n;
  };
  EXPECT_TRUE(reader->ReadUntil(
      [&](const std::string& b) { return count(b, "alicemark") + count(b, "bobsecret") == 6; },
      10s))
      << reader->body();
  EXPECT_TRUE(
      alice->ReadUntil([&](const std::string& b) { return count(b, "alicemark") == 3; }, 10s))
      << alice->body();
  alice->ReadSome(300ms);  // anything more that was on its way
  EXPECT_EQ(alice->body().find("bobsecret"), std::string::npos) << alice->body();
}

// The failure limit gets its own server: every test connects from 127.0.0.1.
TEST(AuthRateLimitTest, FailuresPerAddressAreLimited) {
  TempDir dir;
  const std::string keys = WriteKeysFile(dir);
  TestServer server(dir.path() + "/data", {"--auth-file", keys, "--auth-failure-burst", "3",
                                           "--auth-failure-refill-ms", "600000"});
  ASSERT_TRUE(server.Start()) << server.error();
  HttpClient c("127.0.0.1", server.port());
  const Headers admin = AuthFor(kAdmin);
  const Headers wrong = {{"Authorization", "Bearer root:guess"}};
  ASSERT_EQ(c.Request("GET", "/metrics", {}, admin).status, 200);  // verified: now cached
  for (int i = 0; i < 3; ++i) EXPECT_EQ(c.Request("GET", "/_search", {}, wrong).status, 401);
  auto limited = c.Request("GET", "/_search", {}, wrong);
  EXPECT_EQ(limited.status, 429) << limited.body;
  int retry_after = 0;
  ASSERT_TRUE(limited.headers.count("retry-after"));
  retry_after = std::stoi(limited.headers["retry-after"]);
  EXPECT_GE(retry_after, 1);
  EXPECT_LE(retry_after, 600);
  EXPECT_EQ(json::parse(limited.body).at("error").at("type").as_string(), "too_many_requests");
  // A correct key not verified recently waits too (it could be a guess)...
  EXPECT_EQ(c.Request("GET", "/_search", {}, AuthFor(kRead)).status, 429);
  // ... a key verified before the lockout still works (a neighbour behind
  // the same NAT), and requests without a key are plain 401s.
  auto metrics = c.Request("GET", "/metrics", {}, admin);
  ASSERT_EQ(metrics.status, 200);
  EXPECT_EQ(c.Request("GET", "/_search").status, 401);
  EXPECT_NE(metrics.body.find("dashcam_auth_failures_total{reason=\"bad_key\"} 3"),
            std::string::npos)
      << metrics.body;
  EXPECT_NE(metrics.body.find("dashcam_auth_failures_total{reason=\"rate_limited\"} 2"),
            std::string::npos)
      << metrics.body;
}

// Guesses sent at once count as failures before they are judged, so a
// burst of parallel connections gets no more tries than a sequential one.
TEST(AuthRateLimitTest, ParallelGuessesAreChargedBeforeTheyAreChecked) {
  TempDir dir;
  const std::string path = dir.path() + "/keys.yml";
  std::ofstream(path) << "keys:\n" << HashKeyEntry("root", "admin", "admin-secret-4");
  TestServer server(dir.path() + "/data", {"--auth-file", path, "--auth-failure-burst", "3",
                                           "--auth-failure-refill-ms", "600000"});
  ASSERT_TRUE(server.Start()) << server.error();
  constexpr int kGuesses = 12;
  std::vector<int> status(kGuesses);
  std::vector<std::thread> threads;
  for (int i = 0; i < kGuesses; ++i) {
    threads.emplace_back([&, i] {
      HttpClient c("127.0.0.1", server.port());
      const Headers guess = {{"Authorization", "Bearer root:guess-" + std::to_string(i)}};
      status[i] = c.Request("GET", "/_search", {}, guess).status;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(std::count(status.begin(), status.end(), 401), 3);
  EXPECT_EQ(std::count(status.begin(), status.end(), 429), kGuesses - 3);
  // The right key, checked after the lockout began, waits like a guess.
  HttpClient c("127.0.0.1", server.port());
  EXPECT_EQ(c.Request("GET", "/_search", {}, AuthFor(kAdmin)).status, 429);
}

// A filter's date math means each request's now: a "last hour" key keeps
// seeing the last hour (with now taken at startup, or as 0, it would not).
TEST(AuthFilterTest, DateMathInAFilterIsResolvedPerRequest) {
  TempDir dir;
  const std::string path = dir.path() + "/keys.yml";
  std::ofstream(path) << "keys:\n"
                      << HashKeyEntry("root", "admin", "admin-secret-4")
                      << HashKeyEntry("recent", "read", "recent-secret-5", "@timestamp:>=now-1h");
  TestServer server(dir.path() + "/data", {"--auth-file", path});
  ASSERT_TRUE(server.Start()) << server.error();
  const std::int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                               std::chrono::system_clock::now().time_since_epoch())
                               .count();
  HttpClient c("127.0.0.1", server.port());
  auto r = c.Request(
      "POST", "/_bulk",
      BulkOf({Event(now - 30 * 60'000, "alice", 1), Event(now - 2 * 3'600'000, "alice", 2),
              Event(now + 3'600'000, "alice", 3)}),
      AuthFor(kAdmin));
  ASSERT_EQ(r.status, 200) << r.body;
  const Headers recent = {{"Authorization", "Bearer recent:recent-secret-5"}};
  auto search = c.Request("GET", "/api/v1/search?q=user:alice&track_total_hits=true", {}, recent);
  ASSERT_EQ(search.status, 200) << search.body;
  // The event of 30 minutes ago and the one an hour ahead; not 2 hours ago.
  EXPECT_EQ(json::parse(search.body).at("total").as_int64(), 2) << search.body;
}

TEST(AuthStartupTest, NonLoopbackListenersNeedAuthOrAnExplicitOptOut) {
  TempDir dir;
  const std::string keys = WriteKeysFile(dir);
  struct Case {
    std::vector<std::string> args;
    bool starts;
    const char* log_says;
  };
  const std::vector<Case> cases = {
      {{"--listen", "0.0.0.0:0"}, false, "without --auth-file"},
      {{"--listen", "[::]:0"}, false, "without --auth-file"},
      {{"--listen", "0.0.0.0:0", "--auth-file", keys}, true, "\"event\":\"auth\""},
      {{"--listen", "localhost:0"}, true, "\"event\":\"listening\""},
      {{"--auth-file", keys, "--beats-listen", "0.0.0.0:0"}, false, "mutual TLS"},
      {{"--beats-listen", "0.0.0.0:0"}, false, "mutual TLS"},
      {{"--listen", "0.0.0.0:0", "--insecure-allow-open"}, true, "insecure_open"},
  };
  int n = 0;
  for (const auto& c : cases) {
    SCOPED_TRACE(::testing::PrintToString(c.args));
    TestServer server(dir.path() + "/data" + std::to_string(n++), c.args);
    const bool started = server.Start();
    EXPECT_EQ(started, c.starts) << server.ReadLog();
    if (!started) {
      ASSERT_TRUE(server.exit_status().has_value());
      EXPECT_EQ(server.exit_status()->value, 2);
      EXPECT_NE(server.ReadLog().find("bad_config"), std::string::npos);
    }
    EXPECT_NE(server.ReadLog().find(c.log_says), std::string::npos) << server.ReadLog();
  }
}

TEST(AuthStartupTest, ABadKeysFileStopsStartup) {
  TempDir dir;
  const std::vector<std::pair<std::string, std::string>> files = {
      {"keys: [", "auth file"},
      {"keys: []\n", "no keys"},
      {"keys:\n- id: a\n  role: reader\n  iterations: 1000\n  salt: AAAAAAAAAAA=\n  hash: x\n",
       "role must be"},
      {HashKeyEntry("x", "read", "x-secret-value"), "mapping with a list 'keys'"},
      {"keys:\n" + HashKeyEntry("x", "read", "x-secret-value") + "  filtre: user:x\n",
       "unknown field"},
      {"keys:\n" + HashKeyEntry("x", "read", "x-secret-value") + "  filter: 'user:(x'\n",
       "filter:"},
      {"keys:\n" + HashKeyEntry("x", "ingest", "x-secret-value") + "  filter: 'user:x'\n",
       "only a read key may have a filter"},
  };
  int n = 0;
  for (const auto& [text, reason] : files) {
    const std::string path = dir.path() + "/k" + std::to_string(n) + ".yml";
    std::ofstream(path) << text;
    TestServer server(dir.path() + "/data" + std::to_string(n++), {"--auth-file", path});
    EXPECT_FALSE(server.Start()) << text;
    ASSERT_TRUE(server.exit_status().has_value());
    EXPECT_EQ(server.exit_status()->value, 2);
    EXPECT_NE(server.ReadLog().find(reason), std::string::npos) << server.ReadLog();
  }
}

}  // namespace
}  // namespace dashcam::testing::auth_test
