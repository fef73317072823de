// Tests for api/message_template.h on real training-fleet log lines: the
// exact template of each shape, that lines differing only in numbers and
// ids share it, and that lines with different words do not.
#include "api/message_template.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace dashcam::api {
namespace {

struct Case {
  const char* message;
  const char* want;
};

void ExpectTemplates(const std::vector<Case>& cases) {
  for (const Case& c : cases) EXPECT_EQ(MessageTemplate(c.message), c.want) << c.message;
}

TEST(MessageTemplateTest, PyTorchAndCudaLines) {
  ExpectTemplates({
      {"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.10 GiB (GPU 0; 79.15 GiB "
       "total capacity; 72.12 GiB already allocated; 1.02 GiB free; 74.20 GiB reserved in total "
       "by PyTorch)",
       "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate <size> (GPU <num>; <size> "
       "total capacity; <size> already allocated; <size> free; <size> reserved in total by "
       "PyTorch)"},
      {"  File \"/usr/lib/python3.10/site-packages/torch/nn/modules/module.py\", line 1501, in "
       "_call_impl",
       "File \"<path>\", line <num>, in _call_impl"},
      {"[rank3]: RuntimeError: CUDA error: an illegal memory access was encountered",
       "[rank<num>]: RuntimeError: CUDA error: an illegal memory access was encountered"},
      {"Epoch 3 step 1200: loss=0.4321 lr=5e-05 grad_norm=-1.25 took 350ms",
       "Epoch <num> step <num>: loss=<num> lr=<num> grad_norm=<num> took <duration>"},
      {"Saving checkpoint to ./ckpt/step_1200.pt (512MiB) in 12.5 s",
       "Saving checkpoint to <path> (<size>) in <duration>"},
      {"kernel launch at 0x7f3a9c001200 failed", "kernel launch at <hex> failed"},
  });
}

TEST(MessageTemplateTest, NcclLines) {
  ExpectTemplates({
      {"gpu-node-07:12345:12399 [0] NCCL INFO Channel 00/02 :    0   1   2   3",
       "gpu-node-<num>:<num>:<num> [<num>] NCCL INFO Channel <num>/<num> : <num> <num> <num> "
       "<num>"},
      {"gpu-node-07:12345:12399 [3] NCCL WARN NET/IB : Got async event : port error",
       "gpu-node-<num>:<num>:<num> [<num>] NCCL WARN NET/IB : Got async event : port error"},
      {"NCCL version 2.18.1+cuda12.1", "NCCL version <num>.<num>+cuda<num>.<num>"},
      {"[Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5123, "
       "OpType=ALLREDUCE, NumelIn=1048576, Timeout(ms)=600000) ran for 600046 milliseconds "
       "before timing out.",
       "[Rank <num>] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=<num>, "
       "OpType=ALLREDUCE, NumelIn=<num>, Timeout(ms)=<num>) ran for <num> milliseconds before "
       "timing out."},
      {"MASTER_ADDR=10.0.3.7 MASTER_PORT=29500 connecting to 10.0.3.7:29500",
       "MASTER_ADDR=<ip> MASTER_PORT=<num> connecting to <ip>"},
  });
}

TEST(MessageTemplateTest, ProgressBarsAndTrainerDicts) {
  ExpectTemplates({
      {"Epoch 1:  45%|████▌     | 450/1000 [01:23<01:41,  5.42it/s, loss=0.432, lr=1e-4]",
       "Epoch <num>: <num>%|<bar>| <num>/<num> [<time><<time>, <num>it/s, loss=<num>, lr=<num>]"},
      {"Epoch 1:   0%|          | 0/1000 [00:00<?, ?it/s]",
       "Epoch <num>: <num>%|<bar>| <num>/<num> [<time><?, ?it/s]"},
      {"{'loss': 0.4321, 'grad_norm': 1.234, 'learning_rate': 5e-05, 'epoch': 0.5}",
       "{'loss': <num>, 'grad_norm': <num>, 'learning_rate': <num>, 'epoch': <num>}"},
      {"12/100 [==>...........................] - ETA: 1:23 - loss: 0.4",
       "<num>/<num> [<bar>] - ETA: <time> - loss: <num>"},
      {"Training ━━━━━━━━━━━━━━━╸━━━━━━━━ 62% 0:01:02", "Training <bar> <num>% <time>"},
  });
  // Bars of every length, and the empty one, share a template.
  EXPECT_EQ(MessageTemplate("Epoch 1:   0%|          | 0/1000 [00:00<00:00, 1.0it/s]"),
            MessageTemplate("Epoch 2: 100%|██████████| 1000/1000 [03:12<00:00, 5.19it/s]"));
}

TEST(MessageTemplateTest, SystemLines) {
  ExpectTemplates({
      {"Accepted publickey for zhangsan from 10.1.2.3 port 52344 ssh2: RSA "
       "SHA256:uNiVztksCsDhcc0u9e8BujQXVUpKZIDTMczCvj3tD2s",
       "Accepted publickey for zhangsan from <ip> port <num> ssh<num>: RSA SHA<num>:<id>"},
      {"[I 2026-11-29 10:23:15.123 ServerApp] Kernel started: "
       "550e8400-e29b-41d4-a716-446655440000",
       "[I <time> <time> ServerApp] Kernel started: <uuid>"},
      {"[12345.678901] NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus.",
       "[<num>] NVRM: Xid (<hex>): <num>, pid=<num>, GPU has fallen off the bus."},
      {"Out of memory: Killed process 48213 (python) total-vm:123456kB, anon-rss:98765kB",
       "Out of memory: Killed process <num> (python) total-vm:<size>, anon-rss:<size>"},
      {"GET https://mlflow.example/api/2.0/runs/get?run_id=abc 200", "GET <url>=abc <num>"},
      {"container a1b2c3d4e5f6 exited with code 137", "container <hex> exited with code <num>"},
      {"wandb: Syncing run 3k2j4h5g", "wandb: Syncing run <id>"},
      {"link fe80::1ff:fe23:4567:890a up", "link <ip> up"},
  });
}

TEST(MessageTemplateTest, BlanksAreCollapsedAndTrimmed) {
  EXPECT_EQ(MessageTemplate("  loss \t 0.5\n\n  done  "), "loss <num> done");
  EXPECT_EQ(MessageTemplate(""), "");
  EXPECT_EQ(MessageTemplate(" \n\t "), "");
}

TEST(MessageTemplateTest, LinesDifferingOnlyInNumbersAndIdsShareATemplate) {
  const std::vector<std::pair<std::string, std::string>> same = {
      {"step 1 loss 0.5", "step 99999 loss -12.25"},
      {"gpu-node-01 rank 0 ready", "gpu-node-17 rank 63 ready"},
      {"request 550e8400-e29b-41d4-a716-446655440000 took 3ms",
       "request 123e4567-e89b-12d3-a456-426614174000 took 12.5ms"},
      {"wrote /data/run-1/ckpt-100.pt", "wrote /data/run-22/ckpt-2000.pt"},
      {"from 10.0.0.1:22", "from 192.168.100.200:65535"},
      {"at 2026-11-29T10:23:15.123Z", "at 2027-01-01T00:00:00Z"},
      {"ptr 0xdeadbeef", "ptr 0x7f0000001000"},
      {"lr=1e-4", "lr=0.0003"},
      {"allocated 2.10 GiB", "allocated 512 MiB"},
  };
  for (const auto& [a, b] : same) EXPECT_EQ(MessageTemplate(a), MessageTemplate(b)) << a;
}

TEST(MessageTemplateTest, LinesWithDifferentWordsDoNot) {
  const std::vector<std::pair<std::string, std::string>> different = {
      {"step 1 loss 0.5", "step 1 lost 0.5"},
      {"NCCL INFO Channel 00", "NCCL WARN Channel 00"},
      {"worker 3 started", "worker 3 stopped"},
      {"Killed process 12 (python)", "Killed process 12 (bash)"},
      {"epoch 3 m", "epoch 3 min"},  // "m" alone is no unit after a blank
  };
  for (const auto& [a, b] : different) EXPECT_NE(MessageTemplate(a), MessageTemplate(b)) << a;
}

TEST(MessageTemplateTest, LongMessagesAreCutOnTheTemplateAtTheSamePlace) {
  std::string a, b;
  for (int i = 0; i < 200; ++i) {
    a += "frame " + std::to_string(i) + " ok\n";
    b += "frame " + std::to_string(i * 1000 + 7) + " ok\n";
  }
  const std::string ta = MessageTemplate(a);
  EXPECT_EQ(ta, MessageTemplate(b));
  EXPECT_LE(ta.size(), kMaxTemplateBytes + 32);
  EXPECT_TRUE(ta.ends_with(" …")) << ta;
  // One huge token (a blob) is bounded too.
  EXPECT_EQ(MessageTemplate("data " + std::string(100'000, 'A') + " end"), "data <long> end");
}

TEST(MessageTemplateTest, ReusedBufferIsReplaced) {
  std::string out = "stale";
  BuildMessageTemplate("x 1", out);
  EXPECT_EQ(out, "x <num>");
}

}  // namespace
}  // namespace dashcam::api
