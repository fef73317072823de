// Tests for the incident wording (api/insight_explanations.h): facts read
// from a stored document's insight.* fields and formatted per kind.
#include "api/insight_explanations.h"

#include <gtest/gtest.h>

#include "api/training_options.h"

namespace dashcam::api {
namespace {

constexpr TimeMs kT0 = 1'795'947'795'000;  // 2026-11-29T10:23:15Z

InsightEvent Read(const std::string& json) {
  storage::DocumentReader reader;
  storage::DocumentView view;
  EXPECT_TRUE(reader.ReadUnpadded(json, view).ok()) << json;
  auto e = ReadInsightEvent(view);
  EXPECT_TRUE(e.has_value()) << json;
  return e.value_or(InsightEvent{});
}

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(InsightExplanationsTest, NcclTimeoutNamesOpSeqAndTimeout) {
  const InsightEvent e =
      Read(R"({"message":"m","host":{"name":"n3"},"run":{"id":"r-1","rank":5},)"
           R"("insight":{"kind":"nccl","severity":"error","rank":3,"seq":4821,"op":"ALLREDUCE",)"
           R"("timeout_ms":600000,"ran_ms":600075}})");
  EXPECT_EQ(e.rank, 3);  // the insight's rank wins over run.rank
  const Explanation x = Explain(e, kT0);
  EXPECT_EQ(x.title, "NCCL collective timeout in ALLREDUCE on n3");
  EXPECT_TRUE(Has(x.explanation, "ALLREDUCE #4821 ran for 600075 ms (timeout 600000 ms)"))
      << x.explanation;
  EXPECT_TRUE(Has(x.explanation, "run r-1, rank 3, first at 10:23:15 UTC")) << x.explanation;
}

TEST(InsightExplanationsTest, DriverVersionsAndXidMeaning) {
  const Explanation d =
      Explain(Read(R"({"message":"m","insight":{"kind":"cuda_driver_mismatch","severity":"error",)"
                   R"("driver_version":"11.4","required_version":"12.1"}})"),
              kT0);
  EXPECT_TRUE(Has(d.explanation, "driver 11.4, 12.1 required")) << d.explanation;
  const Explanation x = Explain(
      Read(R"({"message":"m","host":"gpu-node-05","insight":{"kind":"xid","severity":"critical",)"
           R"("pci":"0000:3b:00","xid":79,"meaning":"GPU has fallen off the bus"}})"),
      kT0);
  EXPECT_EQ(x.title, "GPU Xid 79 on gpu-node-05");
  EXPECT_TRUE(Has(x.explanation, "Xid 79 on gpu-node-05")) << x.explanation;
  EXPECT_TRUE(Has(x.explanation, "GPU has fallen off the bus (PCI 0000:3b:00)")) << x.explanation;
  EXPECT_TRUE(Has(x.fixes.at(0), "reset the GPU"));
}

TEST(InsightExplanationsTest, OomWithoutFactsAndUnknownKinds) {
  const Explanation bare =
      Explain(Read(R"({"message":"m","insight":{"kind":"cuda_oom","severity":"error"}})"), kT0);
  EXPECT_EQ(bare.title, "CUDA out of memory");
  EXPECT_EQ(bare.explanation, "CUDA out of memory, first at 10:23:15 UTC.");
  EXPECT_FALSE(bare.fixes.empty());
  const Explanation other =
      Explain(Read(R"({"message":"m","insight":{"kind":"something_new"}})"), kT0);
  EXPECT_EQ(other.title, "something_new");
  storage::DocumentReader reader;
  storage::DocumentView view;
  ASSERT_TRUE(reader.ReadUnpadded(R"({"message":"m","run":{"id":"r"}})", view).ok());
  EXPECT_FALSE(ReadInsightEvent(view).has_value());
}

TEST(InsightExplanationsTest, RunLinkEncodesTheId) {
  TrainingOptions o;
  EXPECT_EQ(RunLink(o, "r-42"), "");
  o.run_link = "https://x.example/{run.id}?again={run.id}";
  EXPECT_EQ(RunLink(o, "a/b c&{run.id}"),
            "https://x.example/a%2Fb%20c%26%7Brun.id%7D?again=a%2Fb%20c%26%7Brun.id%7D");
}

}  // namespace
}  // namespace dashcam::api
