// template_bench: the CPU cost of api/message_template.h per message, in
// this process on one core, against a regex masker (RE2, the usual way to
// write it) doing a subset of the same masks. Messages: the lines of FILE
// (plain text, one message a line) if given, else 200 000 generated
// training-log lines of a dozen real shapes with varying numbers. Prints,
// best of --rounds:
//   template.ns_per_message   BuildMessageTemplate
//   regex.ns_per_message      RE2::GlobalReplace of uuid, ip, hex, path, number
//   templates                 distinct templates of the messages
//   build/tests/bench/template_bench [FILE] [--rounds 5]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <unordered_set>
#include <vector>

#include <fmt/format.h>
#include <re2/re2.h>

#include "api/message_template.h"

namespace {

using Clock = std::chrono::steady_clock;

// A tqdm bar of `full` blocks out of 10.
std::string Bar(int full) {
  std::string s;
  for (int i = 0; i < 10; ++i) s += i < full ? "█" : " ";
  return s;
}

std::vector<std::string> Generate(std::size_t n) {
  std::mt19937_64 rng(42);
  auto u = [&](int hi) { return static_cast<int>(rng() % static_cast<unsigned>(hi)); };
  std::vector<std::string> out;
  out.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    switch (i % 12) {
      case 0:
        out.push_back(fmt::format(
            "Epoch {}: {}%|{}| {}/1000 [{:02d}:{:02d}<01:41, {}.{}it/s, "
            "loss={:.4f}, lr=1e-4]",
            u(10), u(100), Bar(u(11)), u(1000), u(60), u(60), u(9), u(99), u(1000) / 1000.0));
        break;
      case 1:
        out.push_back(
            fmt::format("{{'loss': {:.4f}, 'grad_norm': {:.3f}, 'learning_rate': "
                        "{}e-05, 'epoch': {:.2f}}}",
                        u(1000) / 300.0, u(1000) / 100.0, u(9) + 1, u(300) / 100.0));
        break;
      case 2:
        out.push_back(
            fmt::format("gpu-node-{:02d}:{}:{} [{}] NCCL INFO Channel {:02d}/02 :    0 "
                        "  1   2   3",
                        u(32), 10000 + u(50000), 10000 + u(50000), u(8), u(2)));
        break;
      case 3:
        out.push_back(
            fmt::format("[rank{}]: Watchdog caught collective operation timeout: "
                        "WorkNCCL(SeqNum={}, OpType=ALLREDUCE, NumelIn={}, "
                        "Timeout(ms)=600000) ran for {} milliseconds before timing out.",
                        u(64), u(100000), u(1 << 24), 600000 + u(1000)));
        break;
      case 4:
        out.push_back(
            fmt::format("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate "
                        "{:.2f} GiB (GPU {}; 79.15 GiB total capacity; {:.2f} GiB "
                        "already allocated; {:.2f} GiB free)",
                        u(500) / 100.0, u(8), u(8000) / 100.0, u(300) / 100.0));
        break;
      case 5:
        out.push_back(fmt::format("Accepted publickey for user{} from 10.{}.{}.{} port {} ssh2",
                                  u(40), u(255), u(255), u(255), 1024 + u(60000)));
        break;
      case 6:
        out.push_back(
            fmt::format("[{}.{:06d}] NVRM: Xid (PCI:0000:{:02x}:00): 79, pid={}, GPU "
                        "has fallen off the bus.",
                        u(100000), u(999999), u(256), u(99999)));
        break;
      case 7:
        out.push_back(
            fmt::format("[I 2026-11-29 10:{:02d}:{:02d}.{:03d} ServerApp] Kernel "
                        "started: {:08x}-e29b-41d4-a716-{:012x}",
                        u(60), u(60), u(1000), rng() & 0xffffffffu, rng() & 0xffffffffffffULL));
        break;
      case 8:
        out.push_back(fmt::format("Saving checkpoint to /data/runs/r-{}/ckpt/step_{}.pt took {}ms",
                                  u(100), u(100000), u(5000)));
        break;
      case 9:
        out.push_back(fmt::format("[Step {}] Loss: {:.4f}, Gradient Norm: {:.2f}", u(100000),
                                  u(1000) / 300.0, u(1000) / 100.0));
        break;
      case 10:
        out.push_back(
            fmt::format("  File \"/usr/lib/python3.10/site-packages/torch/nn/modules/"
                        "module.py\", line {}, in _call_impl",
                        1000 + u(1000)));
        break;
      default:
        out.push_back(
            fmt::format("Out of memory: Killed process {} (python) total-vm:{}kB, "
                        "anon-rss:{}kB",
                        u(99999), u(1 << 30), u(1 << 30)));
    }
  }
  return out;
}

template <typename F>
double BestNsPerItem(int rounds, std::size_t items, F&& run) {
  double best = 1e300;
  for (int r = 0; r < rounds; ++r) {
    const auto start = Clock::now();
    run();
    const double ns = std::chrono::duration<double, std::nano>(Clock::now() - start).count();
    best = std::min(best, ns / static_cast<double>(items));
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 5;
  std::string file;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--rounds" && i + 1 < argc) {
      rounds = std::max(1, std::atoi(argv[++i]));
    } else {
      file = a;
    }
  }
  std::vector<std::string> messages;
  if (!file.empty()) {
    std::ifstream in(file);
    for (std::string line; std::getline(in, line);) messages.push_back(line);
  } else {
    messages = Generate(200'000);
  }
  if (messages.empty()) {
    std::fprintf(stderr, "no messages\n");
    return 2;
  }
  std::size_t bytes = 0;
  for (const auto& m : messages) bytes += m.size();

  std::string out;
  std::size_t sink = 0;
  const double tmpl = BestNsPerItem(rounds, messages.size(), [&] {
    for (const auto& m : messages) {
      dashcam::api::BuildMessageTemplate(m, out);
      sink += out.size();
    }
  });
  std::unordered_set<std::string> distinct;
  for (const auto& m : messages) distinct.insert(dashcam::api::MessageTemplate(m));

  const RE2 uuid("[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}");
  const RE2 ip(R"(\b\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}(:\d+)?\b)");
  const RE2 hex(R"(\b(0x[0-9a-fA-F]+|[0-9a-fA-F]*\d[0-9a-fA-F]*[a-fA-F][0-9a-fA-F]{6,})\b)");
  const RE2 path(R"((^|\s|")(/[^\s",:]+)+)");
  const RE2 num(R"([-+]?\d+(\.\d+)?([eE][-+]?\d+)?)");
  std::string r;
  const double regex = BestNsPerItem(rounds, messages.size(), [&] {
    for (const auto& m : messages) {
      r = m;
      RE2::GlobalReplace(&r, uuid, "<uuid>");
      RE2::GlobalReplace(&r, ip, "<ip>");
      RE2::GlobalReplace(&r, hex, "<hex>");
      RE2::GlobalReplace(&r, path, "\\1<path>");
      RE2::GlobalReplace(&r, num, "<num>");
      sink += r.size();
    }
  });
  std::printf("messages %zu (%.0f bytes on average)\n", messages.size(),
              static_cast<double>(bytes) / static_cast<double>(messages.size()));
  std::printf("template.ns_per_message %.0f ns\n", tmpl);
  std::printf("regex.ns_per_message %.0f ns\n", regex);
  std::printf("templates %zu\n", distinct.size());
  return sink == 0 ? 1 : 0;
}
