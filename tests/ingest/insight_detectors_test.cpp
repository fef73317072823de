// Unit tests of the ingest failure detectors (ingest/insight_detectors.h):
// real-world message variants per kind, from more than one PyTorch, NCCL,
// driver and kernel version, and ordinary lines that must not fire.
#include "ingest/insight_detectors.h"

#include <cmath>
#include <map>
#include <string>
#include <variant>

#include <gtest/gtest.h>

namespace dashcam::ingest {
namespace {

using Fact = std::variant<double, std::string>;

constexpr double kGiB = 1024.0 * 1024 * 1024;
constexpr double kMiBytes = 1024.0 * 1024;

class InsightDetectorsTest : public ::testing::Test {
 protected:
  // The insight of `message`, or kind "" when none.
  Insight Detect(std::string_view message, std::string_view error_message = {}) {
    Insight out;
    if (!detectors_.Detect(message, error_message, out)) out = Insight{};
    return out;
  }

  static std::map<std::string, Fact> Facts(const Insight& insight) {
    std::map<std::string, Fact> out;
    for (const auto& f : insight.facts) {
      if (f.type == storage::Field::Type::kNumber) {
        out[f.name] = f.number;
      } else {
        out[f.name] = f.text;
      }
    }
    return out;
  }

  static double Num(const std::map<std::string, Fact>& facts, const std::string& name) {
    auto it = facts.find(name);
    if (it == facts.end() || !std::holds_alternative<double>(it->second)) return -1;
    return std::get<double>(it->second);
  }
  static std::string Str(const std::map<std::string, Fact>& facts, const std::string& name) {
    auto it = facts.find(name);
    if (it == facts.end() || !std::holds_alternative<std::string>(it->second)) return "<none>";
    return std::get<std::string>(it->second);
  }

  InsightDetectors detectors_;
};

TEST(ParseByteSizeTest, PyTorchAndKernelUnits) {
  EXPECT_EQ(ParseByteSize("2.10 GiB"), std::round(2.10 * kGiB));
  EXPECT_EQ(ParseByteSize("785.00 MiB"), 785 * kMiBytes);
  EXPECT_EQ(ParseByteSize("20 MiB"), 20 * kMiBytes);
  EXPECT_EQ(ParseByteSize("258.50 KiB"), 258.5 * 1024);
  EXPECT_EQ(ParseByteSize("123456kB"), 123456.0 * 1024);
  EXPECT_EQ(ParseByteSize("512 bytes"), 512);
  EXPECT_EQ(ParseByteSize("1.5 TiB"), 1.5 * 1024 * kGiB);
  EXPECT_FALSE(ParseByteSize("GiB"));
  EXPECT_FALSE(ParseByteSize("3 parsecs"));
}

TEST_F(InsightDetectorsTest, CudaOomPyTorch1Format) {
  auto i = Detect(
      "RuntimeError: CUDA out of memory. Tried to allocate 2.10 GiB (GPU 0; 79.35 GiB total "
      "capacity; 72.10 GiB already allocated; 1.20 GiB free; 74.20 GiB reserved in total by "
      "PyTorch) If reserved memory is >> allocated memory try setting max_split_size_mb to avoid "
      "fragmentation.  See documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF");
  EXPECT_EQ(i.kind, "cuda_oom");
  EXPECT_EQ(i.severity, "error");
  auto f = Facts(i);
  EXPECT_EQ(Num(f, "gpu"), 0);
  EXPECT_EQ(Num(f, "bytes_requested"), std::round(2.10 * kGiB));
  EXPECT_EQ(Num(f, "bytes_total"), std::round(79.35 * kGiB));
  EXPECT_EQ(Num(f, "bytes_allocated"), std::round(72.10 * kGiB));
  EXPECT_EQ(Num(f, "bytes_free"), std::round(1.20 * kGiB));
  EXPECT_EQ(Num(f, "bytes_reserved"), std::round(74.20 * kGiB));
}

TEST_F(InsightDetectorsTest, CudaOomPyTorch1OlderCachedAndAllowedVariants) {
  // PyTorch 1.0-1.3 said "cached"; some 1.x builds print "allowed".
  auto f = Facts(Detect(
      "RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 3; 11.17 GiB total "
      "capacity; 10.62 GiB already allocated; 7.81 MiB free; 258.50 KiB cached)"));
  EXPECT_EQ(Num(f, "gpu"), 3);
  EXPECT_EQ(Num(f, "bytes_requested"), 20 * kMiBytes);
  EXPECT_EQ(Num(f, "bytes_reserved"), 258.5 * 1024);
  f = Facts(Detect(
      "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 785.00 MiB (GPU 1; "
      "23.69 GiB total capacity; 20.01 GiB already allocated; 500.06 MiB free; 22.00 GiB "
      "allowed; 21.80 GiB reserved in total by PyTorch)"));
  EXPECT_EQ(Num(f, "gpu"), 1);
  EXPECT_EQ(Num(f, "bytes_requested"), 785 * kMiBytes);
  EXPECT_EQ(Num(f, "bytes_limit"), 22 * kGiB);
  EXPECT_EQ(Num(f, "bytes_reserved"), std::round(21.80 * kGiB));
}

TEST_F(InsightDetectorsTest, CudaOomPyTorch2Format) {
  auto i = Detect(
      "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.10 GiB. GPU 0 has a total "
      "capacity of 79.35 GiB of which 1.20 GiB is free. Including non-PyTorch memory, this "
      "process has 78.13 GiB memory in use. Of the allocated memory 72.10 GiB is allocated by "
      "PyTorch, and 2.10 GiB is reserved by PyTorch but unallocated. If reserved but unallocated "
      "memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid "
      "fragmentation.");
  EXPECT_EQ(i.kind, "cuda_oom");
  auto f = Facts(i);
  EXPECT_EQ(Num(f, "gpu"), 0);
  EXPECT_EQ(Num(f, "bytes_requested"), std::round(2.10 * kGiB));
  EXPECT_EQ(Num(f, "bytes_total"), std::round(79.35 * kGiB));
  EXPECT_EQ(Num(f, "bytes_free"), std::round(1.20 * kGiB));
  EXPECT_EQ(Num(f, "bytes_in_use"), std::round(78.13 * kGiB));
  EXPECT_EQ(Num(f, "bytes_allocated"), std::round(72.10 * kGiB));
  EXPECT_EQ(Num(f, "bytes_reserved_unallocated"), std::round(2.10 * kGiB));
  // The total reserved, as 1.x printed it: allocated + reserved-but-unallocated.
  EXPECT_EQ(Num(f, "bytes_reserved"), std::round(72.10 * kGiB) + std::round(2.10 * kGiB));
}

TEST_F(InsightDetectorsTest, CudaOomPyTorch21CapactyTypoAndBareForms) {
  auto f = Facts(Detect(
      "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 7 has "
      "a total capacty of 39.39 GiB of which 3.81 MiB is free. Process 12345 has 39.38 GiB "
      "memory in use. Of the allocated memory 38.10 GiB is allocated by PyTorch, and 780.11 MiB "
      "is reserved by PyTorch but unallocated."));
  EXPECT_EQ(Num(f, "gpu"), 7);
  EXPECT_EQ(Num(f, "bytes_free"), std::round(3.81 * kMiBytes));
  EXPECT_EQ(Detect("RuntimeError: CUDA error: out of memory").kind, "cuda_oom");
  EXPECT_EQ(Detect("torch.OutOfMemoryError").kind, "cuda_oom");
  EXPECT_EQ(Detect("[rank5]: torch.cuda.OutOfMemoryError: CUDA out of memory.").kind, "cuda_oom");
  EXPECT_EQ(Num(Facts(Detect("[rank5]: torch.cuda.OutOfMemoryError")), "rank"), 5);
}

TEST_F(InsightDetectorsTest, DriverMismatchPhrasings) {
  auto i = Detect(
      "RuntimeError: CUDA error: CUDA driver version is insufficient for CUDA runtime version");
  EXPECT_EQ(i.kind, "cuda_driver_mismatch");
  i = Detect(
      "UserWarning: CUDA initialization: The NVIDIA driver on your system is too old (found "
      "version 11040). Please update your GPU driver by downloading and installing a new version");
  EXPECT_EQ(i.kind, "cuda_driver_mismatch");
  EXPECT_EQ(Str(Facts(i), "driver_version"), "11040");
  i = Detect("cuda driver version 470.57 is lower than expected (required 525.60)");
  EXPECT_EQ(i.kind, "cuda_driver_mismatch");
  EXPECT_EQ(Str(Facts(i), "driver_version"), "470.57");
  EXPECT_EQ(Str(Facts(i), "required_version"), "525.60");
  EXPECT_EQ(Detect("Failed to initialize NVML: Driver/library version mismatch").kind,
            "cuda_driver_mismatch");
  i = Detect(
      "nvidia-container-cli: requirement error: unsatisfied condition: cuda>=12.2, please update "
      "your driver to a newer version, or use an earlier cuda container");
  EXPECT_EQ(Str(Facts(i), "required_version"), "12.2");
}

TEST_F(InsightDetectorsTest, GpuUnavailable) {
  for (auto text : {
           "RuntimeError: CUDA error: no CUDA-capable device is detected",
           "RuntimeError: No CUDA GPUs are available",
           "docker: Error response from daemon: could not select device driver \"\" with "
           "capabilities: [[gpu]].",
           "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make "
           "sure that the latest NVIDIA driver is installed and running.",
           "No devices were requested or the requested devices are not accessible",
           "torch.cuda.is_available(): False",
           "AssertionError: Torch not compiled with CUDA enabled",
       }) {
    EXPECT_EQ(Detect(text).kind, "gpu_unavailable") << text;
  }
  EXPECT_EQ(Detect("torch.cuda.is_available(): True").kind, "");
}

TEST_F(InsightDetectorsTest, NcclWatchdogTimeoutTwoPyTorchVersions) {
  // PyTorch 2.x: SeqNum, rank prefixes.
  auto i = Detect(
      "[rank3]:[E1024 10:23:15.123456 1234 ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog caught "
      "collective operation timeout: WorkNCCL(SeqNum=4821, OpType=ALLREDUCE, NumelIn=1024, "
      "NumelOut=1024, Timeout(ms)=600000) ran for 600075 milliseconds before timing out.");
  EXPECT_EQ(i.kind, "nccl");
  EXPECT_EQ(i.severity, "error");
  auto f = Facts(i);
  EXPECT_EQ(Num(f, "rank"), 3);
  EXPECT_EQ(Num(f, "seq"), 4821);
  EXPECT_EQ(Str(f, "op"), "ALLREDUCE");
  EXPECT_EQ(Num(f, "timeout_ms"), 600000);
  EXPECT_EQ(Num(f, "ran_ms"), 600075);
  // PyTorch 1.x: no SeqNum.
  f = Facts(
      Detect("[E ProcessGroupNCCL.cpp:566] [Rank 1] Watchdog caught collective operation timeout: "
             "WorkNCCL(OpType=BROADCAST, Timeout(ms)=1800000) ran for 1800248 milliseconds before "
             "timing out."));
  EXPECT_EQ(Num(f, "rank"), 1);
  EXPECT_EQ(Num(f, "seq"), -1);
  EXPECT_EQ(Str(f, "op"), "BROADCAST");
  EXPECT_EQ(Num(f, "timeout_ms"), 1800000);
  // PyTorch 2.3+: "[PG 0 (default_pg) Rank 2]".
  f = Facts(Detect(
      "[PG 0 (default_pg) Rank 2] Watchdog caught collective operation timeout: "
      "WorkNCCL(SeqNum=7, OpType=_ALLGATHER_BASE, NumelIn=8, NumelOut=64, Timeout(ms)=600000) "
      "ran for 600009 milliseconds before timing out."));
  EXPECT_EQ(Num(f, "rank"), 2);
  EXPECT_EQ(Str(f, "op"), "_ALLGATHER_BASE");
}

TEST_F(InsightDetectorsTest, NcclErrorsTwoNcclVersions) {
  auto i = Detect(
      "RuntimeError: NCCL error in: /opt/conda/conda-bld/pytorch_1591914880026/work/torch/lib/"
      "c10d/ProcessGroupNCCL.cpp:514, unhandled cuda error, NCCL version 2.4.8");
  EXPECT_EQ(i.kind, "nccl");
  auto f = Facts(i);
  EXPECT_EQ(Str(f, "error"), "unhandled cuda error");
  EXPECT_EQ(Str(f, "nccl_version"), "2.4.8");
  f = Facts(Detect(
      "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
      "ProcessGroupNCCL.cpp:1275, unhandled system error (run with NCCL_DEBUG=INFO for details), "
      "NCCL version 2.18.1"));
  EXPECT_EQ(Str(f, "error"), "unhandled system error (run with NCCL_DEBUG=INFO for details)");
  EXPECT_EQ(Str(f, "nccl_version"), "2.18.1");
  f = Facts(Detect("ncclInternalError: Internal check failed."));
  EXPECT_EQ(Str(f, "error"), "ncclInternalError");
  EXPECT_EQ(
      Detect("[E ProcessGroupNCCL.cpp:475] Some NCCL operations have failed or timed out.").kind,
      "nccl");
}

TEST_F(InsightDetectorsTest, NcclWarnLinesIncludingP2P) {
  // NCCL 2.7-era and 2.18-era WARN shapes.
  auto i = Detect(
      "gpu-node-07:2481:2590 [1] NCCL WARN Could not enable P2P between dev 1(=3b000) and dev "
      "0(=1a000)");
  EXPECT_EQ(i.kind, "nccl");
  EXPECT_EQ(i.severity, "warning");
  auto f = Facts(i);
  EXPECT_EQ(Num(f, "gpu"), 1);
  EXPECT_EQ(Num(f, "p2p_gpu"), 1);
  EXPECT_EQ(Num(f, "p2p_peer_gpu"), 0);
  f = Facts(Detect(
      "gpu-node-03:911:1002 [2] NCCL WARN P2P/IPC: failed to open peer memory handle of rank 6"));
  EXPECT_EQ(Num(f, "peer_rank"), 6);
  f =
      Facts(Detect("gpu-node-07:2481:2590 [3] NCCL WARN Could not enable P2P access between rank 3 "
                   "and rank 5"));
  EXPECT_EQ(Num(f, "rank"), 3);
  EXPECT_EQ(Num(f, "peer_rank"), 5);
  i = Detect(
      "gpu-node-03:911:1002 [0] NCCL WARN NET/IB : Got completion from peer 10.0.0.2<40162> "
      "with error 12, opcode 0, len 0, vendor err 129 (Recv)");
  EXPECT_EQ(i.kind, "nccl");
  EXPECT_EQ(Num(Facts(i), "gpu"), 0);
  EXPECT_EQ(Detect("gpu-node-03:911:911 [0] NCCL INFO NCCL version 2.18.1+cuda12.1").kind, "");
}

TEST_F(InsightDetectorsTest, CudaErrors) {
  const std::map<std::string, std::string> cases = {
      {"RuntimeError: CUDA error: an illegal memory access was encountered",
       "an illegal memory access was encountered"},
      {"RuntimeError: CUDA error: device-side assert triggered\nCUDA kernel errors might be "
       "asynchronously reported at some other API call",
       "device-side assert triggered"},
      {"RuntimeError: CUDA error: uncorrectable ECC error encountered",
       "uncorrectable ECC error encountered"},
      {"RuntimeError: CUDA error: unspecified launch failure", "unspecified launch failure"},
  };
  for (const auto& [text, error] : cases) {
    auto i = Detect(text);
    EXPECT_EQ(i.kind, "cuda_error") << text;
    EXPECT_EQ(Str(Facts(i), "error"), error) << text;
  }
  auto i = Detect(
      "RuntimeError: CUDA error: CUBLAS_STATUS_EXECUTION_FAILED when calling `cublasSgemm( "
      "handle, opa, opb, m, n, k, &alpha, a, lda, b, ldb, &beta, c, ldc)`");
  EXPECT_EQ(i.kind, "cuda_error");
  EXPECT_EQ(Str(Facts(i), "status"), "CUBLAS_STATUS_EXECUTION_FAILED");
  i = Detect("RuntimeError: cuDNN error: CUDNN_STATUS_INTERNAL_ERROR");
  EXPECT_EQ(Str(Facts(i), "status"), "CUDNN_STATUS_INTERNAL_ERROR");
  EXPECT_EQ(Detect("../aten/src/ATen/native/cuda/Loss.cu:240: nll_loss_forward_reduce_cuda_"
                   "kernel_2d: block: [0,0,0], thread: [5,0,0] Assertion `t >= 0 && t < "
                   "n_classes` failed.")
                .kind,
            "cuda_error");
  EXPECT_EQ(Detect("cuBLAS status CUBLAS_STATUS_SUCCESS").kind, "");
}

TEST_F(InsightDetectorsTest, XidWithMeaningAndSeverity) {
  auto i =
      Detect("NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the bus.");
  EXPECT_EQ(i.kind, "xid");
  EXPECT_EQ(i.severity, "critical");
  auto f = Facts(i);
  EXPECT_EQ(Num(f, "xid"), 79);
  EXPECT_EQ(Str(f, "pci"), "0000:3b:00");
  EXPECT_EQ(Num(f, "pid"), 1234);
  EXPECT_EQ(Str(f, "meaning"), "GPU has fallen off the bus");
  // Older drivers: no pid; an application fault is an error, not critical.
  i = Detect(
      "kernel: [123456.789] NVRM: Xid (PCI:0000:05:00): 13, Graphics SM Warp Exception on (GPC "
      "0, TPC 0): Out Of Range Address");
  EXPECT_EQ(i.severity, "error");
  EXPECT_EQ(Num(Facts(i), "xid"), 13);
  i = Detect(
      "NVRM: Xid (PCI:0000:b1:00): 48, pid='<unknown>', name=<unknown>, An uncorrectable "
      "double bit error (DBE) has been detected on GPU in the framebuffer at partition 6");
  EXPECT_EQ(i.severity, "critical");
  EXPECT_EQ(Num(Facts(i), "pid"), -1);  // not a number: left out
  for (int code : {13, 31, 43, 45, 48, 61, 62, 63, 64, 74, 79, 92, 94, 95}) {
    EXPECT_FALSE(XidMeaning(code).empty()) << code;
  }
  EXPECT_EQ(Str(Facts(Detect("NVRM: Xid (PCI:0000:05:00): 999, x")), "meaning"), "<none>");
  // A code past int's range (found by fuzz_bulk_decoder) is an Xid with no
  // meaning, not undefined behaviour (fatal in the sanitizer build).
  for (const char* code : {"7000350000000", "2147483648", "99999999999999999999999"}) {
    i = Detect(std::string("NVRM: Xid (PCI:0000:05:00): ") + code + ", x");
    EXPECT_EQ(i.kind, "xid") << code;
    EXPECT_EQ(i.severity, "error") << code;
    EXPECT_EQ(Str(Facts(i), "meaning"), "<none>") << code;
  }
}

TEST_F(InsightDetectorsTest, ProcessKilled) {
  auto i = Detect(
      "Out of memory: Killed process 48213 (python) total-vm:123456789kB, anon-rss:98765432kB, "
      "file-rss:0kB, shmem-rss:0kB, UID:1001 pgtables:200000kB oom_score_adj:0");
  EXPECT_EQ(i.kind, "process_killed");
  EXPECT_EQ(i.severity, "critical");
  auto f = Facts(i);
  EXPECT_EQ(Num(f, "pid"), 48213);
  EXPECT_EQ(Str(f, "process"), "python");
  EXPECT_EQ(Num(f, "bytes_anon_rss"), 98765432.0 * 1024);
  // Kernels before 4.19.
  EXPECT_EQ(Num(Facts(Detect("Out of memory: Kill process 999 (python3) score 912 or sacrifice "
                             "child")),
                "pid"),
            999);
  f = Facts(Detect("RuntimeError: DataLoader worker (pid 12345) is killed by signal: Killed. "));
  EXPECT_EQ(Num(f, "pid"), 12345);
  EXPECT_EQ(Str(f, "signal_name"), "Killed");
  EXPECT_EQ(Detect("RuntimeError: DataLoader worker (pid(s) 4242, 4243) exited unexpectedly").kind,
            "process_killed");
  f = Facts(Detect("traceback : Signal 9 (SIGKILL) received by PID 3141"));
  EXPECT_EQ(Num(f, "signal"), 9);
  EXPECT_EQ(Num(f, "pid"), 3141);
  EXPECT_EQ(Detect("Segmentation fault (core dumped)").kind, "process_killed");
  f =
      Facts(Detect("torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n"
                   "============================================================\n"
                   "train.py FAILED\n"
                   "  exitcode  : -9 (pid: 3141)"));
  EXPECT_EQ(Num(f, "exit_code"), -9);
  EXPECT_EQ(Num(Facts(Detect("command terminated with exit code 137")), "exit_code"), 137);
  EXPECT_EQ(Detect("Killed").kind, "process_killed");
  EXPECT_EQ(Num(Facts(Detect("./train.sh: line 12: 34567 Killed                  python "
                             "train.py --bs 64")),
                "pid"),
            34567);
}

TEST_F(InsightDetectorsTest, ErrorMessageFieldIsLookedAtToo) {
  EXPECT_EQ(Detect("training step failed", "RuntimeError: CUDA error: out of memory").kind,
            "cuda_oom");
  EXPECT_EQ(Detect("training step failed", "bad batch").kind, "");
}

TEST_F(InsightDetectorsTest, OrdinaryLinesDoNotFire) {
  for (auto text : {
           "Epoch 3/10 [Step 1200] Loss: 0.4321, Gradient Norm: 1.23, lr=1e-4",
           "{'loss': 0.43, 'grad_norm': 1.2, 'learning_rate': 5e-05, 'epoch': 0.5}",
           "killed 0 zombie workers",
           "Memory usage: 10 GiB",
           "GPU 0 memory allocated: 72.10 GiB, reserved: 74.20 GiB",
           "Reduced batch size to avoid running out of memory",
           "gpu-node-07:2481:2481 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.7<0>",
           "gpu-node-07:2481:2481 [0] NCCL INFO NCCL_P2P_LEVEL set by environment to NVL",
           "Saving checkpoint to /ckpt/run-42/step_1200.pt",
           "torch.cuda.is_available() = True, device count = 8",
           "CUDA kernel errors might be asynchronously reported at some other API call",
           "process exited with code 0",
           "Killed the old tensorboard process",
           "ECC mode: Enabled; Volatile ECC errors: 0",
           "100%|██████████| 500/500 [01:23<00:00,  6.01it/s, loss=0.043]",
           "",
       }) {
    auto i = Detect(text);
    EXPECT_EQ(i.kind, "") << text;
  }
}

}  // namespace
}  // namespace dashcam::ingest

namespace dashcam::ingest {
namespace {

// fp16 loss-scaler overflows: DeepSpeed (old and new wording) and apex/Megatron.
TEST(InsightDetectorsOverflowTest, LossScalerOverflowsAreNanLossWarnings) {
  const InsightDetectors detectors;
  struct Case {
    const char* line;
    double rank, loss_scale;
  };
  const Case cases[] = {
      {"[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 65536, reducing to "
       "32768",
       0, 32768},
      {"[2024-05-01 10:00:00,123] [INFO] [fused_optimizer.py:344:_update_scale] fp16 dynamic "
       "loss scale overflow! Rank 3 Skipping step. Attempted loss scale: 4294967296, reducing to "
       "2147483648",
       3, 2147483648.0},
      {"Gradient overflow.  Skipping step, loss scaler 0 reducing loss scale to 32768.0", -1,
       32768},
      {"Gradient overflow. Skipping step 14440, loss scaler 0 reducing loss scale to 4096.0", -1,
       4096},
  };
  for (const auto& c : cases) {
    Insight i;
    ASSERT_TRUE(detectors.Detect(c.line, {}, i)) << c.line;
    EXPECT_EQ(i.kind, "nan_loss") << c.line;
    EXPECT_EQ(i.severity, "warning") << c.line;
    double rank = -1, scale = -1;
    for (const auto& f : i.facts) {
      if (f.name == "rank") rank = f.number;
      if (f.name == "loss_scale") scale = f.number;
    }
    EXPECT_EQ(rank, c.rank) << c.line;
    EXPECT_EQ(scale, c.loss_scale) << c.line;
  }
  Insight i;
  EXPECT_FALSE(detectors.Detect("no overflow this step; loss scale 65536", {}, i));
}

}  // namespace
}  // namespace dashcam::ingest
