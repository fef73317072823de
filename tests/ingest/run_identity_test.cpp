// Unit tests of run identity (ingest/run_identity.h): the precedence of the
// id sources, ranks from fields and prefixes, and finishing lines.
#include "ingest/run_identity.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace dashcam::ingest {
namespace {

using storage::Field;

Field S(std::string name, std::string text) {
  return {std::move(name), Field::Type::kString, std::move(text)};
}
Field N(std::string name, double v, std::string text) {
  return {std::move(name), Field::Type::kNumber, std::move(text), v};
}

std::string Id(std::vector<Field> fields, std::string_view message = "") {
  return DeriveRunIdentity(message, fields).id;
}

TEST(RunIdentityTest, IdPrecedence) {
  const Field host = S("host.name", "gpu-node-07");
  const Field path = S("log.file.path", "/runs/a/train.log");
  const Field cid = S("container.id", "c0ffee");
  const Field cname = S("container.name", "trainer-1");
  EXPECT_EQ(Id({host, path}), "gpu-node-07:/runs/a/train.log");
  EXPECT_EQ(Id({host}), "");  // a host alone is not a run
  EXPECT_EQ(Id({path}), "");
  EXPECT_EQ(Id({host, path, cname}), "trainer-1");
  EXPECT_EQ(Id({host, path, cname, cid}), "c0ffee");
  EXPECT_EQ(Id({host, path, cid}, "TORCHELASTIC_RUN_ID=elastic-7 starting"), "elastic-7");
  EXPECT_EQ(Id({cid, N("SLURM_JOB_ID", 81234, "81234")}), "81234");
  EXPECT_EQ(Id({N("SLURM_JOB_ID", 81234, "81234"), S("TORCHELASTIC_RUN_ID", "te-1")}), "te-1");
  EXPECT_EQ(Id({S("TORCHELASTIC_RUN_ID", "te-1"), S("wandb_run_id", "wb1")}), "wb1");
  EXPECT_EQ(Id({S("wandb.run_id", "wb1"), S("mlflow.run_id", "ml1")}), "ml1");
  EXPECT_EQ(Id({S("mlflow_run_id", "ml1"), S("run_id", "r-42")}), "r-42");
  EXPECT_EQ(Id({S("run_id", "r-42"), S("run.id", "explicit")}), "explicit");
  // An empty or oversized value is no id: the next source decides.
  EXPECT_EQ(Id({S("run_id", ""), cid}), "c0ffee");
  EXPECT_EQ(Id({S("run_id", std::string(kMaxRunIdBytes + 1, 'x')), cid}), "c0ffee");
  EXPECT_EQ(Id({}, "launching with SLURM_JOB_ID: 4242 on 8 nodes"), "4242");
  EXPECT_EQ(Id({}, "MY_SLURM_JOB_ID=1"), "");
}

TEST(RunIdentityTest, SentFlags) {
  auto r = DeriveRunIdentity("", {S("run.id", "a"), N("run.rank", 2, "2")});
  EXPECT_TRUE(r.id_sent);
  EXPECT_TRUE(r.rank_sent);
  EXPECT_TRUE(r.any_run_field);
  EXPECT_EQ(r.rank, 2);
  r = DeriveRunIdentity("", {S("run_id", "a"), N("rank", 2, "2")});
  EXPECT_FALSE(r.id_sent);
  EXPECT_FALSE(r.rank_sent);
  EXPECT_FALSE(r.any_run_field);
  EXPECT_EQ(r.rank, 2);
}

TEST(RunIdentityTest, Rank) {
  auto rank = [](std::string_view message, std::vector<Field> fields = {}) {
    return DeriveRunIdentity(message, fields).rank.value_or(-1);
  };
  EXPECT_EQ(rank("[rank3]: Traceback (most recent call last):"), 3);
  EXPECT_EQ(rank("[Rank 12] step=100, skipped=0"), 12);
  EXPECT_EQ(rank("[PG 0 Rank 5] Watchdog caught collective operation timeout"), 5);
  EXPECT_EQ(rank("init done world_size=8 rank=6"), 6);
  EXPECT_EQ(rank("x", {S("RANK", "7")}), 7);
  EXPECT_EQ(rank("[rank3]: x", {N("rank", 1, "1")}), 1);  // the field wins
  EXPECT_EQ(rank("local_rank=2 LOCAL_RANK=3"), -1);       // a local rank is not the rank
  EXPECT_EQ(rank("ranked 3rd"), -1);
  EXPECT_EQ(rank("x", {S("rank", "first")}), -1);
}

TEST(RunIdentityTest, FinishingLines) {
  for (const char* line : {
           "Training completed. Do not forget to share your model on huggingface.co/models =)",
           "`Trainer.fit` stopped: `max_epochs=10` reached.",
           "`Trainer.fit` stopped: `max_steps=5000` reached.",
           "Training finished in 3h12m",
           "training complete, saving final checkpoint",
           "[default] worker group successfully finished. Waiting 300 seconds for other agents",
           "Local worker group finished (WorkerState.SUCCEEDED). Waiting 300 seconds",
           "Process finished with exit code 0",
       }) {
    EXPECT_TRUE(IsRunEndLine(line)) << line;
    EXPECT_TRUE(DeriveRunIdentity(line, {}).finished) << line;
  }
  for (const char* line : {
           "Epoch 3: training loss 0.5",
           "Process finished with exit code 1",
           "Process finished with exit code 137",
           "download complete",
           "`Trainer.fit` stopped: received SIGTERM",
           "wandb: 🚀 View run r-42 at: https://wandb.ai/x/y/runs/abc",
       }) {
    EXPECT_FALSE(IsRunEndLine(line)) << line;
  }
}

TEST(RunIdentityTest, ClientEndIsTrustedOnlyAsFinished) {
  auto r = DeriveRunIdentity("step 10", {S("run.end", "finished")});
  EXPECT_TRUE(r.finished);
  EXPECT_TRUE(r.end_sent);
  r = DeriveRunIdentity("Training completed.", {S("run.end", "maybe")});
  EXPECT_FALSE(r.finished);  // the client said something else about its own run
  EXPECT_TRUE(r.end_sent);
}

}  // namespace
}  // namespace dashcam::ingest
