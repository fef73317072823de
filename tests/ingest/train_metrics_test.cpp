// Unit tests of the training-metric extraction (ingest/train_metrics.h): the
// shapes PyTorch loops, Hugging Face, Lightning, DeepSpeed, Megatron and tqdm
// print, structured fields, and lines that must give nothing.
#include "ingest/train_metrics.h"

#include <cmath>
#include <map>
#include <string>

#include <gtest/gtest.h>

namespace dashcam::ingest {
namespace {

using M = TrainMetric;

// The finite metrics found in `text`, by name.
std::map<std::string, double> Extract(std::string_view text) {
  TrainMetrics m;
  ExtractTrainMetrics(text, m);
  std::map<std::string, double> out;
  for (std::size_t i = 0; i < kTrainMetricCount; ++i) {
    const auto metric = static_cast<TrainMetric>(i);
    if (m.Has(metric)) out[std::string(TrainMetricName(metric))] = m.Get(metric);
  }
  return out;
}

using Want = std::map<std::string, double>;

TEST(TrainMetricsTest, KeyValueShapes) {
  EXPECT_EQ(Extract("loss=0.043"), (Want{{"loss", 0.043}}));
  EXPECT_EQ(Extract("loss: 0.0430"), (Want{{"loss", 0.043}}));
  EXPECT_EQ(Extract("Loss 0.043"), (Want{{"loss", 0.043}}));
  EXPECT_EQ(Extract(R"(metrics {"loss": 0.043, "step": 7})"), (Want{{"loss", 0.043}, {"step", 7}}));
  EXPECT_EQ(Extract("train_loss=1.25 val_loss=2.5"), (Want{{"loss", 1.25}}));
  EXPECT_EQ(Extract("lr 3.0e-4"), (Want{{"lr", 3.0e-4}}));
  EXPECT_EQ(Extract("LR: 1E-05"), (Want{{"lr", 1e-5}}));
  EXPECT_EQ(Extract("loss=-0.5"), (Want{{"loss", -0.5}}));
}

TEST(TrainMetricsTest, PlainPyTorchLoopPrints) {
  EXPECT_EQ(Extract("[Step 100] Loss: 0.4321, Gradient Norm: 1.23"),
            (Want{{"step", 100}, {"loss", 0.4321}, {"grad_norm", 1.23}}));
  // The official examples: "Train Epoch: 1 [640/60000 (1%)]\tLoss: 2.2914".
  EXPECT_EQ(Extract("Train Epoch: 1 [640/60000 (1%)]\tLoss: 2.291407"),
            (Want{{"epoch", 1}, {"loss", 2.291407}}));
  EXPECT_EQ(Extract("Epoch [3/10], Step [100/600], Loss: 0.2154"),
            (Want{{"epoch", 3}, {"step", 100}, {"loss", 0.2154}}));
  EXPECT_EQ(Extract("step 1200/5000 loss 0.93 lr 2.5e-4 tokens/s 12345"),
            (Want{{"step", 1200}, {"loss", 0.93}, {"lr", 2.5e-4}, {"tokens_per_s", 12345}}));
  // PyTorch 1.x printed a tensor: "loss: tensor(0.4312, device='cuda:0', grad_fn=...)".
  EXPECT_EQ(Extract("loss: tensor(0.4312, device='cuda:0', grad_fn=<NllLossBackward0>)"),
            (Want{{"loss", 0.4312}}));
  // 2.x code calls .item(): a plain float.
  EXPECT_EQ(Extract("epoch 2 iter 340 loss 0.4312"),
            (Want{{"epoch", 2}, {"step", 340}, {"loss", 0.4312}}));
}

TEST(TrainMetricsTest, HuggingFaceTrainerDicts) {
  EXPECT_EQ(Extract("{'loss': 0.43, 'grad_norm': 1.2, 'learning_rate': 5e-05, 'epoch': 0.5}"),
            (Want{{"loss", 0.43}, {"grad_norm", 1.2}, {"lr", 5e-05}, {"epoch", 0.5}}));
  // The final summary; eval_loss is not the training loss.
  EXPECT_EQ(Extract("{'train_runtime': 123.4, 'train_samples_per_second': 12.3, "
                    "'train_steps_per_second': 0.1, 'train_loss': 0.41, 'epoch': 3.0}"),
            (Want{{"samples_per_s", 12.3}, {"loss", 0.41}, {"epoch", 3}}));
  EXPECT_EQ(Extract("{'eval_loss': 0.52, 'eval_runtime': 3.1, 'epoch': 1.0}"),
            (Want{{"epoch", 1}}));
}

TEST(TrainMetricsTest, LightningAndTqdmProgress) {
  const auto m =
      Extract("Epoch 3: 45%|████▌     | 450/1000 [01:23<01:40, 5.41it/s, loss=0.234, v_num=1]");
  ASSERT_EQ(m.size(), 3u) << ::testing::PrintToString(m);
  EXPECT_EQ(m.at("epoch"), 3);
  EXPECT_EQ(m.at("loss"), 0.234);
  EXPECT_DOUBLE_EQ(m.at("step_time"), 1 / 5.41);
  EXPECT_EQ(Extract(" 12%|█▏        | 120/1000 [02:10<15:49,  1.08s/it, loss=0.43, lr=1e-4]"),
            (Want{{"step_time", 1.08}, {"loss", 0.43}, {"lr", 1e-4}}));
  // Lightning 2.x adds train_loss_step / train_loss_epoch.
  EXPECT_EQ(Extract("Epoch 0: 100%|██████████| 32/32 [00:02<00:00, 14.2it/s, v_num=0, "
                    "train_loss=0.812]")
                .at("loss"),
            0.812);
}

TEST(TrainMetricsTest, DeepSpeedAndMegatron) {
  EXPECT_EQ(Extract("[Rank 0] step=100, skipped=0, lr=[0.0001], mom=[(0.9, 0.999)]"),
            (Want{{"step", 100}, {"lr", 0.0001}}));
  const auto m = Extract(
      " iteration      100/  1000 | consumed samples:         3200 | elapsed time per "
      "iteration (ms): 1234.5 | learning rate: 1.000E-04 | global batch size:    32 | lm loss: "
      "2.345E+00 | loss scale: 65536.0 | grad norm: 1.234 | number of skipped iterations:   0 |");
  EXPECT_EQ(m, (Want{{"step", 100},
                     {"step_time", 1.2345},
                     {"lr", 1e-4},
                     {"loss", 2.345},
                     {"grad_norm", 1.234}}));
}

TEST(TrainMetricsTest, RatesTimesAndMemory) {
  EXPECT_EQ(Extract("throughput: 1234.5 tokens/s, 12 samples/s"),
            (Want{{"tokens_per_s", 1234.5}, {"samples_per_s", 12}}));
  EXPECT_EQ(Extract("tokens_per_sec=98000 step_time=0.52s"),
            (Want{{"tokens_per_s", 98000}, {"step_time", 0.52}}));
  EXPECT_EQ(Extract("step_time: 520ms"), (Want{{"step_time", 0.52}}));
  // The number before a rate that follows another name's value is not the rate's.
  EXPECT_EQ(Extract("grad_norm=2.29 tokens/s=20015"),
            (Want{{"grad_norm", 2.29}, {"tokens_per_s", 20015}}));
  EXPECT_EQ(Extract("GPU_mem: 3.2G"), (Want{{"gpu_mem", std::round(3.2 * 1024 * 1024 * 1024)}}));
  EXPECT_EQ(Extract("gpu_memory=61.5 GiB"), (Want{{"gpu_mem", 61.5 * 1024 * 1024 * 1024}}));
  EXPECT_EQ(Extract("gpu_mem_mb=2048"), (Want{{"gpu_mem", 2048.0 * 1024 * 1024}}));
  // A size without a unit says nothing.
  EXPECT_EQ(Extract("gpu_mem=61234"), Want{});
}

TEST(TrainMetricsTest, NanAndInfAreFlaggedNotValues) {
  TrainMetrics m;
  ExtractTrainMetrics("step 10 loss=nan grad_norm: inf", m);
  EXPECT_FALSE(m.Has(M::kLoss));
  EXPECT_TRUE(m.NonFinite(M::kLoss));
  EXPECT_TRUE(std::isnan(m.Get(M::kLoss)));
  EXPECT_TRUE(m.NonFinite(M::kGradNorm));
  EXPECT_TRUE(std::isinf(m.Get(M::kGradNorm)));
  EXPECT_TRUE(m.Has(M::kStep));
  m.Clear();
  ExtractTrainMetrics("{'loss': NaN, 'epoch': 1.0}", m);
  EXPECT_TRUE(m.NonFinite(M::kLoss));
  m.Clear();
  ExtractTrainMetrics("loss -inf", m);
  EXPECT_TRUE(m.NonFinite(M::kLoss));
  EXPECT_LT(m.Get(M::kLoss), 0);
  // Beyond a double: overflow is Inf (not the 0 from_chars leaves), underflow 0.
  m.Clear();
  ExtractTrainMetrics("loss=1e400 grad_norm=1e-400", m);
  EXPECT_TRUE(m.NonFinite(M::kLoss));
  EXPECT_TRUE(std::isinf(m.Get(M::kLoss)));
  EXPECT_TRUE(m.Has(M::kGradNorm));
  EXPECT_EQ(m.Get(M::kGradNorm), 0.0);
}

TEST(TrainMetricsTest, LinesThatHoldNoMetric) {
  EXPECT_EQ(Extract("the loss is decreasing nicely"), Want{});
  EXPECT_EQ(Extract("loss of 3 packets on eth0"), Want{});
  EXPECT_EQ(Extract("loss infinitely small"), Want{});
  EXPECT_EQ(Extract("loss 0.5x faster"), Want{});
  // "lr" inside words, and words that merely start like a name.
  EXPECT_EQ(Extract("ctrl=3 curl=4 url=5 lrs=6 steps=7 epochs=8 lossy=9 stepper 1"), Want{});
  // Timestamps, addresses, versions, dates and grouped digits are not values.
  EXPECT_EQ(Extract("step 12:30:01 started"), Want{});
  EXPECT_EQ(Extract("lr 10.0.0.1 unreachable"), Want{});
  EXPECT_EQ(Extract("epoch 2024-01-02"), Want{});
  EXPECT_EQ(Extract("tokens/s: 12,345"), Want{});
  EXPECT_EQ(Extract("loss 1/2"), Want{});
  EXPECT_EQ(Extract("sshd[1234]: Accepted publickey for alice from 10.0.0.7 port 52314"), Want{});
  EXPECT_EQ(Extract(""), Want{});
  EXPECT_EQ(Extract("loss"), Want{});
  EXPECT_EQ(Extract("loss:"), Want{});
}

TEST(TrainMetricsTest, FirstValueWins) {
  EXPECT_EQ(Extract("loss=1.5 loss=2.5"), (Want{{"loss", 1.5}}));
}

TEST(TrainMetricsTest, StructuredFieldsWinAndClientTrainFieldsAreSent) {
  std::vector<storage::Field> fields = {
      {"loss", storage::Field::Type::kNumber, "0.25", 0.25},
      {"global_step", storage::Field::Type::kNumber, "1200", 1200},
      {"gpu_mem_mb", storage::Field::Type::kNumber, "2", 2},
      {"train.lr", storage::Field::Type::kNumber, "0.001", 0.001},
      {"grad_norm", storage::Field::Type::kString, "NaN", 0},
      {"epoch", storage::Field::Type::kString, "not a number", 0},
  };
  TrainMetrics m;
  TakeStructuredMetrics(fields, m);
  ExtractTrainMetrics("loss=9.0 epoch 4", m);
  EXPECT_EQ(m.Get(M::kLoss), 0.25);
  EXPECT_EQ(m.Get(M::kStep), 1200);
  EXPECT_EQ(m.Get(M::kGpuMem), 2.0 * 1024 * 1024);
  EXPECT_EQ(m.Get(M::kLr), 0.001);
  EXPECT_TRUE(m.Sent(M::kLr));
  EXPECT_FALSE(m.Sent(M::kLoss));
  EXPECT_TRUE(m.NonFinite(M::kGradNorm));
  EXPECT_EQ(m.Get(M::kEpoch), 4);  // the string was no number: the text decides
}

}  // namespace
}  // namespace dashcam::ingest
