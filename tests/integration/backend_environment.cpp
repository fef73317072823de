// With DASHCAM_TEST_BACKEND=clickhouse, this process starts one local
// 2-shard ClickHouse cluster before its first test and stops it after the
// last, and every TestServer it starts stores its events there, each in a
// database of its own (test_server.h, $DASHCAM_TEST_STORAGE). That is how
// ctest runs the core and query integration suites against the ClickHouse
// backend (tests/CMakeLists.txt, integration_on_clickhouse) without a
// cluster start per test. Unset, nothing happens.
#include <cstdlib>
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "tests/common/clickhouse_cluster.h"

namespace dashcam::testing::backend_environment {
namespace {

class ClickHouseBackend : public ::testing::Environment {
 public:
  void SetUp() override {
    cluster_ = std::make_unique<ClickHouseCluster>(2);
    // A failed start fails every test of the run, with the reason.
    ASSERT_TRUE(cluster_->Start()) << cluster_->error();
    ::setenv("DASHCAM_TEST_STORAGE", cluster_->StorageUrl("{db}").c_str(), 1);
  }
  void TearDown() override {
    ::unsetenv("DASHCAM_TEST_STORAGE");
    cluster_.reset();
  }

 private:
  std::unique_ptr<ClickHouseCluster> cluster_;
};

bool Register() {
  const char* backend = std::getenv("DASHCAM_TEST_BACKEND");
  if (backend == nullptr || std::string(backend) != "clickhouse") return false;
  ::testing::AddGlobalTestEnvironment(new ClickHouseBackend);  // gtest owns it
  return true;
}

[[maybe_unused]] const bool registered = Register();

}  // namespace
}  // namespace dashcam::testing::backend_environment
