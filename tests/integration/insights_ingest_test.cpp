// Insights at ingest (README "Insights at ingest", ingest/insight_detectors.h)
// against the real binary: a _bulk mix of clean and failing lines, then
// searches on insight.* fields and the insight object in _source; a
// client-forged insight is dropped; --no-detectors stores none.
#include <cmath>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <boost/json.hpp>

#include "tests/common/beats_client.h"
#include "tests/common/http_client.h"
#include "tests/common/test_server.h"

namespace dashcam::testing::insights_ingest_test {
namespace {

namespace json = boost::json;

constexpr double kGiB = 1024.0 * 1024 * 1024;

struct Line {
  std::string id;
  std::string message;
  std::string extra;  // more members, with a leading comma
};

const std::vector<Line>& Corpus() {
  static const std::vector<Line> lines = {
      {"clean-1", "Epoch 3/10 [Step 1200] Loss: 0.4321, Gradient Norm: 1.23", ""},
      {"clean-2", "killed 0 zombie workers", ""},
      {"clean-3", "Memory usage: 10 GiB", ""},
      {"oom-1x",
       "RuntimeError: CUDA out of memory. Tried to allocate 2.10 GiB (GPU 0; 79.35 GiB total "
       "capacity; 72.10 GiB already allocated; 1.20 GiB free; 74.20 GiB reserved in total by "
       "PyTorch)",
       ""},
      {"oom-2x",
       "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB. GPU 3 has a total "
       "capacity of 79.35 GiB of which 512.00 MiB is free. Of the allocated memory 75.00 GiB is "
       "allocated by PyTorch, and 1.50 GiB is reserved by PyTorch but unallocated.",
       ""},
      {"oom-bare", "step failed",
       R"(,"error":{"message":"RuntimeError: CUDA error: out of memory"})"},
      {"xid", "NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the bus.",
       ""},
      {"nccl",
       "[Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=4821, "
       "OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600075 milliseconds "
       "before timing out.",
       ""},
      // A client claiming an insight on a clean line, and one hiding a real one.
      {"forged-clean", "all good",
       R"(,"insight":{"kind":"cuda_oom","bytes_requested":9e12},"insight.severity":"critical")"},
      {"forged-hide", "Out of memory: Killed process 4242 (python)",
       R"(,"insight":{"kind":"none"})"},
  };
  return lines;
}

std::string BulkBody() {
  std::string body;
  int second = 0;
  for (const auto& l : Corpus()) {
    body += R"({"create":{"_index":"filebeat-t","_id":")" + l.id + "\"}}\n";
    body += "{\"@timestamp\":\"2026-11-29T10:00:0" + std::to_string(second++ % 10) +
            ".000Z\",\"message\":" + json::serialize(json::value(l.message)) + l.extra + "}\n";
  }
  return body;
}

class InsightsIngestTest : public ::testing::Test {
 protected:
  void StartServer(std::vector<std::string> args) {
    server_ = std::make_unique<TestServer>(dir_.path() + "/data", std::move(args));
    ASSERT_TRUE(server_->Start()) << server_->ReadLog();
    client_ = std::make_unique<HttpClient>("127.0.0.1", server_->port());
    auto res = client_->Post("/_bulk?refresh=true", BulkBody(),
                             {{"Content-Type", "application/x-ndjson"}});
    ASSERT_EQ(res.status, 200) << res.body;
    ASSERT_FALSE(json::parse(res.body).at("errors").as_bool()) << res.body;
  }
  void TearDown() override {
    if (server_) {
      EXPECT_EQ(server_->Stop(), 0);
    }
  }

  // The hits of a Lucene query, by _id.
  std::map<std::string, json::object> Search(const std::string& q) {
    auto res = client_->Get("/_search?size=100&q=" + UrlEncode(q));
    EXPECT_EQ(res.status, 200) << q << ": " << res.body;
    std::map<std::string, json::object> out;
    if (res.status != 200) return out;
    const json::value answer = json::parse(res.body);
    for (const auto& hit : answer.at("hits").at("hits").as_array()) {
      out[std::string(hit.at("_id").as_string())] = hit.at("_source").as_object();
    }
    return out;
  }

  static std::set<std::string> Ids(const std::map<std::string, json::object>& hits) {
    std::set<std::string> out;
    for (const auto& [id, _] : hits) out.insert(id);
    return out;
  }

  TempDir dir_;
  std::unique_ptr<TestServer> server_;
  std::unique_ptr<HttpClient> client_;
};

TEST_F(InsightsIngestTest, KindsAreSearchableAndFactsAreTypedInSource) {
  StartServer({});
  EXPECT_EQ(Ids(Search("insight.kind:cuda_oom")),
            (std::set<std::string>{"oom-1x", "oom-2x", "oom-bare"}));
  EXPECT_EQ(Ids(Search("insight.bytes_requested:>2000000000")), std::set<std::string>{"oom-1x"});
  EXPECT_EQ(Ids(Search("insight.kind:xid AND insight.xid:79 AND insight.severity:critical")),
            std::set<std::string>{"xid"});
  EXPECT_EQ(Ids(Search("insight.kind:nccl AND insight.op:ALLREDUCE AND insight.seq:4821")),
            std::set<std::string>{"nccl"});
  EXPECT_EQ(Ids(Search("_exists_:insight.kind")),
            (std::set<std::string>{"oom-1x", "oom-2x", "oom-bare", "xid", "nccl", "forged-hide"}));

  const auto hits = Search("insight.kind:cuda_oom");
  const auto& oom = hits.at("oom-1x").at("insight").as_object();
  EXPECT_EQ(oom.at("kind").as_string(), "cuda_oom");
  EXPECT_EQ(oom.at("severity").as_string(), "error");
  EXPECT_EQ(oom.at("gpu").to_number<double>(), 0);
  EXPECT_EQ(oom.at("bytes_requested").to_number<double>(), std::round(2.10 * kGiB));
  EXPECT_EQ(oom.at("bytes_total").to_number<double>(), std::round(79.35 * kGiB));
  EXPECT_EQ(oom.at("bytes_allocated").to_number<double>(), std::round(72.10 * kGiB));
  EXPECT_EQ(oom.at("bytes_free").to_number<double>(), std::round(1.20 * kGiB));
  EXPECT_EQ(oom.at("bytes_reserved").to_number<double>(), std::round(74.20 * kGiB));
  const auto& oom2 = hits.at("oom-2x").at("insight").as_object();
  EXPECT_EQ(oom2.at("gpu").to_number<double>(), 3);
  EXPECT_EQ(oom2.at("bytes_reserved").to_number<double>(), 76.5 * kGiB);
}

TEST_F(InsightsIngestTest, ClientForgedInsightIsDropped) {
  StartServer({});
  EXPECT_EQ(Ids(Search("insight.kind:none")), std::set<std::string>{});
  EXPECT_EQ(Ids(Search("insight.bytes_requested:>1000000000000")), std::set<std::string>{});
  auto hits = Search("message:\"all good\"");
  ASSERT_EQ(hits.size(), 1u);
  EXPECT_FALSE(hits.begin()->second.contains("insight")) << json::serialize(hits.begin()->second);
  EXPECT_FALSE(hits.begin()->second.contains("insight.severity"));
  hits = Search("insight.kind:process_killed");
  ASSERT_EQ(Ids(hits), std::set<std::string>{"forged-hide"});
  const auto& insight = hits.at("forged-hide").at("insight").as_object();
  EXPECT_EQ(insight.at("pid").to_number<double>(), 4242);
  EXPECT_EQ(insight.at("process").as_string(), "python");
}

TEST_F(InsightsIngestTest, NoDetectorsStoresNone) {
  StartServer({"--no-detectors"});
  // The documents are kept as sent: only the client's own claims are there.
  EXPECT_EQ(Ids(Search("insight.kind:cuda_oom")), std::set<std::string>{"forged-clean"});
  EXPECT_EQ(Ids(Search("insight.bytes_requested:>2000000000")),
            std::set<std::string>{"forged-clean"});
  EXPECT_EQ(Ids(Search("insight.kind:none")), std::set<std::string>{"forged-hide"});
  const auto hits = Search("message:\"CUDA out of memory\"");
  ASSERT_EQ(hits.size(), 2u);
  for (const auto& [id, source] : hits) EXPECT_FALSE(source.contains("insight")) << id;
}

TEST_F(InsightsIngestTest, NdjsonAndBeatsGoThroughTheDetectorsToo) {
  StartServer({});
  const std::string xid =
      R"({"message":"NVRM: Xid (PCI:0000:3b:00): 48, pid=7, DBE","via":"ndjson","insight":1})";
  auto res = client_->Post("/api/v1/ingest", xid + "\n");
  ASSERT_EQ(res.status, 200) << res.body;

  const std::string killed = R"({"message":"Killed","via":"beats","insight":{"kind":"x"}})";
  BeatsClient beats(server_->beats_port());
  ASSERT_TRUE(beats.connected());
  ASSERT_TRUE(beats.Send(WindowFrame(1) + JsonFrame(1, killed)));
  const auto ack = beats.ReadFinalAck(std::chrono::seconds(30));
  ASSERT_TRUE(ack);

  auto hits = Search("via:ndjson AND insight.kind:xid AND insight.xid:48");
  ASSERT_EQ(hits.size(), 1u);
  EXPECT_EQ(hits.begin()->second.at("insight").at("meaning").as_string(),
            "double-bit ECC error (uncorrectable memory error)");
  hits = Search("via:beats AND insight.kind:process_killed");
  ASSERT_EQ(hits.size(), 1u);
  EXPECT_EQ(json::serialize(hits.begin()->second.at("insight")),
            R"({"kind":"process_killed","severity":"error"})");
}

}  // namespace
}  // namespace dashcam::testing::insights_ingest_test
