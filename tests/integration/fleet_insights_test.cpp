// Issue 8, section 4: a fleet's three hours of logs (tests/common/fleet_corpus.h)
// with a failure of every insight kind injected at a known point, through
// the real binary's _bulk, then GET /api/v1/insights and /api/v1/runs:
// every injected failure is exactly one incident of the right kind, whose
// first event is the injected root cause, with the right extracted numbers
// and nothing else reported; the clean corpus gives no incident; a run that
// stopped mid-epoch is stalled and one that printed its finishing line is
// finished.
#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <boost/json.hpp>

#include "storage/time_format.h"
#include "tests/common/fleet_corpus.h"
#include "tests/common/http_client.h"
#include "tests/common/test_server.h"

namespace dashcam::testing::fleet_insights_test {
namespace {

namespace json = boost::json;

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

class FleetInsightsTest : public ::testing::Test {
 protected:
  // Starts a server and sends the whole corpus; the corpus's "now" is the
  // wall clock, so the runs' stall verdicts are the server's to make.
  void Ingest(bool inject) {
    corpus_ = MakeFleetCorpus({.now_ms = NowMs(), .inject = inject});
    server_ = std::make_unique<TestServer>(dir_.path() + "/data", std::vector<std::string>{});
    ASSERT_TRUE(server_->Start()) << server_->ReadLog();
    client_ = std::make_unique<HttpClient>("127.0.0.1", server_->port());
    constexpr std::size_t kBatch = 2000;
    for (std::size_t i = 0; i < corpus_.events.size(); i += kBatch) {
      auto res = client_->Post("/_bulk", FleetBulkBody(corpus_.events, i, i + kBatch, "fleet"),
                               {{"Content-Type", "application/x-ndjson"}});
      ASSERT_EQ(res.status, 200) << res.body.substr(0, 500);
      ASSERT_FALSE(json::parse(res.body).at("errors").as_bool()) << res.body.substr(0, 500);
    }
    range_ = "from=" + UrlEncode(dashcam::FormatRfc3339Ms(corpus_.first_ms - 60'000)) +
             "&to=" + UrlEncode(dashcam::FormatRfc3339Ms(NowMs() + 60'000));
  }

  void TearDown() override {
    if (server_) {
      EXPECT_EQ(server_->Stop(), 0) << server_->ReadLog();
    }
  }

  json::array GetArray(const std::string& target, const char* member) {
    auto res = client_->Get(target);
    EXPECT_EQ(res.status, 200) << target << ": " << res.body;
    if (res.status != 200) return {};
    const json::value answer = json::parse(res.body);
    return answer.at(member).as_array();
  }

  json::array Incidents() { return GetArray("/api/v1/insights?limit=1000&" + range_, "incidents"); }

  std::map<std::string, std::string> RunStatuses() {
    std::map<std::string, std::string> out;
    for (const auto& run : GetArray("/api/v1/runs?" + range_, "runs")) {
      out[std::string(run.at("id").as_string())] = std::string(run.at("status").as_string());
    }
    return out;
  }

  TempDir dir_;
  FleetCorpus corpus_;
  std::unique_ptr<TestServer> server_;
  std::unique_ptr<HttpClient> client_;
  std::string range_;
};

TEST_F(FleetInsightsTest, EveryInjectedFailureIsOneIncidentWithItsRootCause) {
  ASSERT_NO_FATAL_FAILURE(Ingest(/*inject=*/true));
  ASSERT_EQ(corpus_.failures.size(), 10u);
  const json::array incidents = Incidents();
  std::string all;
  for (const auto& i : incidents) {
    all += std::string(i.at("kind").as_string()) + " run=" + json::serialize(i.at("run_id")) +
           " first=" + std::string(i.at("first_event").at("id").as_string()) +
           " count=" + std::to_string(i.at("count").to_number<int64_t>()) + "\n";
  }
  EXPECT_EQ(incidents.size(), corpus_.failures.size()) << all;
  for (const InjectedFailure& f : corpus_.failures) {
    SCOPED_TRACE(f.kind + " " + f.run_id + " " + f.host);
    std::vector<const json::object*> of_kind;
    for (const auto& i : incidents) {
      if (i.at("kind").as_string() == f.kind) of_kind.push_back(&i.as_object());
    }
    ASSERT_EQ(of_kind.size(), 1u) << all;
    const json::object& incident = *of_kind.front();
    EXPECT_EQ(incident.at("first_event").at("id").as_string(), f.first_id) << all;
    const int64_t count = incident.at("count").to_number<int64_t>();
    if (f.exact_lines) {
      EXPECT_EQ(count, f.lines);
    } else {
      EXPECT_GE(count, 1);
      EXPECT_LE(count, f.lines);
    }
    if (!f.run_id.empty()) {
      EXPECT_EQ(json::serialize(incident.at("run_id")), json::serialize(json::value(f.run_id)));
    }
    EXPECT_FALSE(incident.at("title").as_string().empty());
    EXPECT_FALSE(incident.at("explanation").as_string().empty());
    const json::object& facts = incident.at("facts").as_object();
    for (const auto& [name, value] : f.facts) {
      ASSERT_TRUE(facts.contains(name)) << name << " in " << json::serialize(facts);
      EXPECT_NEAR(facts.at(name).to_number<double>(), value, 1.0) << name;
    }
  }
  // The OOM spans both hosts of its 8-rank run.
  for (const auto& i : incidents) {
    if (i.at("kind").as_string() == "cuda_oom") {
      EXPECT_EQ(i.at("hosts").as_array().size(), 2u);
    }
  }
}

TEST_F(FleetInsightsTest, RunStatusesFollowTheirLastLines) {
  ASSERT_NO_FATAL_FAILURE(Ingest(/*inject=*/true));
  const auto statuses = RunStatuses();
  ASSERT_FALSE(corpus_.runs.empty());
  for (const ExpectedRun& run : corpus_.runs) {
    auto it = statuses.find(run.run_id);
    ASSERT_NE(it, statuses.end()) << run.run_id;
    EXPECT_EQ(it->second, run.status) << run.run_id;
  }
}

TEST_F(FleetInsightsTest, CleanCorpusHasNoIncident) {
  ASSERT_NO_FATAL_FAILURE(Ingest(/*inject=*/false));
  EXPECT_TRUE(corpus_.failures.empty());
  const json::array incidents = Incidents();
  EXPECT_EQ(incidents.size(), 0u) << json::serialize(incidents).substr(0, 2000);
  // Stalls and finishes are told apart without failures too.
  const auto statuses = RunStatuses();
  EXPECT_EQ(statuses.at("r-07"), "stalled");
  EXPECT_EQ(statuses.at("r-18"), "stalled");
  EXPECT_EQ(statuses.at("r-03"), "finished");
  EXPECT_EQ(statuses.at("r-29"), "running");
}

}  // namespace
}  // namespace dashcam::testing::fleet_insights_test
