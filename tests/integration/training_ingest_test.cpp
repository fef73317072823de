// Training metrics, run identity and the numeric anomalies at ingest
// (ingest/train_metrics.h, run_identity.h, training_anomalies.h) against the
// real binary: _bulk lines of two runs, then range queries on train.*,
// searches on run.*, the run object in _source, and a loss spike and a NaN
// loss found as insights; --no-detectors stores none of it.
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <boost/json.hpp>

#include "tests/common/http_client.h"
#include "tests/common/test_server.h"

namespace dashcam::testing::training_ingest_test {
namespace {

namespace json = boost::json;

struct Line {
  std::string id;
  std::string message;
  std::string extra;  // more members, with a leading comma
};

constexpr const char* kRunB = R"(,"host":{"name":"gpu-9"},"log":{"file":{"path":"/runs/b.log"}})";

// Run r-a: a steady loss near 1 (30 lines), a spike, a NaN, the end line.
// Run b (host + file): a steady loss of 12, never a spike.
std::vector<std::vector<Line>> Batches() {
  std::vector<Line> steady;
  for (int i = 0; i < 30; ++i) {
    steady.push_back({"a-" + std::to_string(i),
                      "[Step " + std::to_string(i) + "] Loss: 1.0" + std::to_string(i % 10) +
                          ", Gradient Norm: 0.5",
                      R"(,"run_id":"r-a")"});
    steady.push_back({"b-" + std::to_string(i),
                      "{'loss': 12.0, 'learning_rate': 5e-05, 'epoch': " + std::to_string(i) + "}",
                      kRunB});
  }
  std::vector<Line> tail = {
      {"a-spike", "[Step 30] Loss: 25.5, Gradient Norm: 0.6", R"(,"run_id":"r-a")"},
      {"a-nan", "[rank3]: step 31 loss=nan", R"(,"run_id":"r-a")"},
      {"a-end", "Training completed. Do not forget to share your model on huggingface.co",
       R"(,"run_id":"r-a")"},
      {"prose", "the loss is high at 10.0.0.1 since 12:30:01", kRunB},
  };
  return {steady, tail};
}

std::string BulkBody(const std::vector<Line>& lines) {
  std::string body;
  for (const auto& l : lines) {
    body += R"({"create":{"_index":"filebeat-t","_id":")" + l.id + "\"}}\n";
    body += "{\"@timestamp\":\"2026-11-29T10:00:00.000Z\",\"message\":" +
            json::serialize(json::value(l.message)) + l.extra + "}\n";
  }
  return body;
}

class TrainingIngestTest : public ::testing::Test {
 protected:
  void StartServer(std::vector<std::string> args) {
    server_ = std::make_unique<TestServer>(dir_.path() + "/data", std::move(args));
    ASSERT_TRUE(server_->Start()) << server_->ReadLog();
    client_ = std::make_unique<HttpClient>("127.0.0.1", server_->port());
    // One request per batch: the steady history is in before the spike.
    for (const auto& batch : Batches()) {
      auto res = client_->Post("/_bulk?refresh=true", BulkBody(batch),
                               {{"Content-Type", "application/x-ndjson"}});
      ASSERT_EQ(res.status, 200) << res.body;
      ASSERT_FALSE(json::parse(res.body).at("errors").as_bool()) << res.body;
    }
  }
  void TearDown() override {
    if (server_) {
      EXPECT_EQ(server_->Stop(), 0);
    }
  }

  std::map<std::string, json::object> Search(const std::string& q) {
    auto res = client_->Get("/_search?size=200&q=" + UrlEncode(q));
    EXPECT_EQ(res.status, 200) << q << ": " << res.body;
    std::map<std::string, json::object> out;
    if (res.status != 200) return out;
    const json::value answer = json::parse(res.body);  // outlives the loop
    for (const auto& hit : answer.at("hits").at("hits").as_array()) {
      out[std::string(hit.at("_id").as_string())] = hit.at("_source").as_object();
    }
    return out;
  }
  std::set<std::string> Ids(const std::string& q) {
    std::set<std::string> out;
    for (const auto& [id, _] : Search(q)) out.insert(id);
    return out;
  }
  static std::set<std::string> Range(const std::string& prefix, int n) {
    std::set<std::string> out;
    for (int i = 0; i < n; ++i) out.insert(prefix + std::to_string(i));
    return out;
  }

  TempDir dir_;
  std::unique_ptr<TestServer> server_;
  std::unique_ptr<HttpClient> client_;
};

TEST_F(TrainingIngestTest, MetricsAreNumericFields) {
  StartServer({});
  std::set<std::string> want = Range("b-", 30);
  want.insert("a-spike");
  EXPECT_EQ(Ids("train.loss:>10"), want);
  EXPECT_EQ(Ids("train.loss:[1.05 TO 1.09]"),
            (std::set<std::string>{"a-5", "a-6", "a-7", "a-8", "a-9", "a-15", "a-16", "a-17",
                                   "a-18", "a-19", "a-25", "a-26", "a-27", "a-28", "a-29"}));
  EXPECT_EQ(Ids("train.step:>=29"), (std::set<std::string>{"a-29", "a-spike", "a-nan"}));
  EXPECT_EQ(Ids("train.epoch:>27"), (std::set<std::string>{"b-28", "b-29"}));
  EXPECT_EQ(Ids("train.lr:<0.0001").size(), 30u);
  EXPECT_EQ(Ids("train.grad_norm:>0.55"), std::set<std::string>{"a-spike"});
  // NaN is no value: that line has no train.loss; the prose line has nothing.
  std::set<std::string> with_loss = Range("a-", 30);
  with_loss.merge(Range("b-", 30));
  with_loss.insert("a-spike");
  EXPECT_EQ(Ids("_exists_:train.loss"), with_loss);
  std::set<std::string> with_step = Range("a-", 30);
  with_step.insert({"a-spike", "a-nan"});
  EXPECT_EQ(Ids("_exists_:train.step"), with_step);
  // Terms on train.* are not in the index (storage/attrs_codec.h): the rows
  // are read, and a term finds what the one-value range finds.
  const std::set<std::string> step29 = Ids("train.step:[29 TO 29]");
  EXPECT_FALSE(step29.empty());
  EXPECT_EQ(Ids("train.step:29"), step29);
  EXPECT_EQ(Ids("train.step:28 OR train.step:29"), Ids("train.step:[28 TO 29]"));
}

TEST_F(TrainingIngestTest, RunIdentityIsSearchableAndInSource) {
  StartServer({});
  std::set<std::string> a = Range("a-", 30);
  a.insert({"a-spike", "a-nan", "a-end"});
  EXPECT_EQ(Ids("run.id:r-a"), a);
  std::set<std::string> b = Range("b-", 30);
  b.insert("prose");
  EXPECT_EQ(Ids("run.id:\"gpu-9:/runs/b.log\""), b);
  EXPECT_EQ(Ids("run.end:finished"), std::set<std::string>{"a-end"});
  EXPECT_EQ(Ids("run.rank:3"), std::set<std::string>{"a-nan"});

  const auto hits = Search("run.rank:3 OR train.epoch:0");
  ASSERT_EQ(hits.size(), 2u);
  EXPECT_EQ(json::serialize(hits.at("a-nan").at("run")), R"({"id":"r-a","rank":3})");
  EXPECT_EQ(json::serialize(hits.at("b-0").at("run")), R"({"id":"gpu-9:/runs/b.log"})");
}

TEST_F(TrainingIngestTest, SpikeAndNanBecomeInsights) {
  StartServer({});
  EXPECT_EQ(Ids("insight.kind:loss_spike"), std::set<std::string>{"a-spike"});
  EXPECT_EQ(Ids("insight.kind:nan_loss"), std::set<std::string>{"a-nan"});
  EXPECT_EQ(Ids("_exists_:insight.kind"), (std::set<std::string>{"a-spike", "a-nan"}));
  const auto hits = Search("insight.kind:loss_spike AND insight.loss:25.5");
  ASSERT_EQ(hits.size(), 1u);
  const auto& insight = hits.at("a-spike").at("insight").as_object();
  EXPECT_EQ(insight.at("severity").as_string(), "warning");
  EXPECT_DOUBLE_EQ(insight.at("median").to_number<double>(), 1.05);
  EXPECT_EQ(Ids("insight.kind:nan_loss AND insight.value:nan AND run.rank:3"),
            std::set<std::string>{"a-nan"});
}

TEST_F(TrainingIngestTest, NoDetectorsStoresNone) {
  StartServer({"--no-detectors"});
  EXPECT_EQ(Ids("_exists_:train.loss OR _exists_:run.id OR _exists_:insight.kind"),
            std::set<std::string>{});
  const auto hits = Search("run_id:r-a");
  ASSERT_EQ(hits.size(), 33u);
  for (const auto& [id, source] : hits) EXPECT_FALSE(source.contains("run")) << id;
}

}  // namespace
}  // namespace dashcam::testing::training_ingest_test
