#include "tests/fuzz/search_fixture.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <utility>
#include <vector>

namespace dashcam::fuzz {
namespace {

storage::Record Event(TimeMs ts, std::string message, std::string json) {
  storage::Record r;
  r.ts_ms = ts;
  r.level = "ERROR";
  r.message = std::move(message);
  r.index = "filebeat-8.17.0-2026.11.29";
  r.fields = {{"host.name", storage::Field::Type::kString, "gpu-node-07", 0},
              {"user", storage::Field::Type::kString, "张三", 0},
              {"gpu_id", storage::Field::Type::kNumber, "3", 3}};
  r.source = std::move(json);
  return r;
}

}  // namespace

SearchFixture::SearchFixture() {
  char tmpl[] = "/tmp/dashcam-query-fuzz-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) std::abort();
  dir_ = tmpl;
  storage::SqliteStoreOptions options;
  options.data_dir = dir_ + "/data";
  options.writer.partition.sync = storage::SyncMode::kNormal;
  auto opened = storage::SqliteStore::Open(options, log_);
  if (!opened.ok()) std::abort();
  store_ = std::move(*opened);
  const TimeMs t0 = 1795910400000;  // 2026-11-29
  std::vector<storage::Record> records;
  const char* messages[] = {"RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB",
                            "CUDA显存不足 on cuda:0", "NCCL WARN net/IB : Got completion error",
                            "it's \"quoted\" NEAR(a b) col:umn * ^x'); DROP TABLE events; --",
                            "epoch 3 step 1200/5000 loss=0.4312"};
  for (int i = 0; i < 40; ++i) {
    const char* m = messages[i % 5];
    records.push_back(Event(t0 + i * 3'600'000, m,
                            std::string(R"({"message":"x","host":{"name":"gpu-node-07"},)") +
                                R"("user":"张三","gpu_id":3,"loss":0.5})"));
  }
  std::promise<bool> done;
  store_->Append(std::move(records),
                 [&](storage::AppendResult r) { done.set_value(r.status.ok()); });
  if (!done.get_future().get()) std::abort();
}

SearchFixture::~SearchFixture() {
  store_.reset();
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

void SearchFixture::Search(const query::Node& root) {
  storage::SearchRequest req;
  req.query = &root;
  req.limit = 10;
  req.count_limit = 100;
  req.deadline = storage::Clock::now() + std::chrono::milliseconds(200);
  auto page = store_->Search(req);
  if (!page.ok() && page.status().code() != StatusCode::kInvalidArgument &&
      page.status().code() != StatusCode::kDeadlineExceeded) {
    std::fprintf(stderr, "search failed: %s\n", page.status().ToString().c_str());
    std::abort();
  }
}

}  // namespace dashcam::fuzz
