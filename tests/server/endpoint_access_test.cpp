// Unit tests of server/endpoint_access.h and server/listen_guard.h.
#include "server/endpoint_access.h"

#include <gtest/gtest.h>

#include "server/listen_guard.h"

namespace dashcam::server {
namespace {

using boost::beast::http::verb;

TEST(EndpointAccessTest, RolesAgainstAccessClasses) {
  struct Row {
    Access access;
    bool ingest, read, read_filtered, admin;
  };
  const Row rows[] = {
      {Access::kOpen, true, true, true, true},        {Access::kAnyKey, true, true, true, true},
      {Access::kIngest, true, false, false, true},    {Access::kRead, false, true, true, true},
      {Access::kFleetRead, false, true, false, true}, {Access::kAdmin, false, false, false, true},
  };
  for (const auto& r : rows) {
    EXPECT_EQ(Allows(Role::kIngest, false, r.access), r.ingest);
    EXPECT_EQ(Allows(Role::kRead, false, r.access), r.read);
    EXPECT_EQ(Allows(Role::kRead, true, r.access), r.read_filtered);
    EXPECT_EQ(Allows(Role::kAdmin, false, r.access), r.admin);
  }
}

TEST(EndpointAccessTest, PathsToAccess) {
  using V = std::vector<std::string>;
  EXPECT_EQ(RequiredAccess(verb::get, V{}, true), Access::kOpen);
  EXPECT_EQ(RequiredAccess(verb::get, V{}, false), Access::kAnyKey);
  EXPECT_EQ(RequiredAccess(verb::post, V{}, true), Access::kAnyKey);
  EXPECT_EQ(RequiredAccess(verb::get, V{"index.html"}, false), Access::kOpen);
  EXPECT_EQ(RequiredAccess(verb::post, V{"index.html"}, false), Access::kAdmin);
  EXPECT_EQ(RequiredAccess(verb::get, V{"healthz"}, false), Access::kOpen);
  EXPECT_EQ(RequiredAccess(verb::get, V{"readyz"}, false), Access::kOpen);
  EXPECT_EQ(RequiredAccess(verb::get, V{"metrics"}, false), Access::kFleetRead);
  EXPECT_EQ(RequiredAccess(verb::get, (V{"api", "v1", "status"}), false), Access::kFleetRead);
  EXPECT_EQ(RequiredAccess(verb::post, V{"_bulk"}, false), Access::kIngest);
  EXPECT_EQ(RequiredAccess(verb::post, (V{"logs", "_bulk"}), false), Access::kIngest);
  EXPECT_EQ(RequiredAccess(verb::post, (V{"api", "v1", "ingest"}), false), Access::kIngest);
  EXPECT_EQ(RequiredAccess(verb::get, (V{"logs", "_search"}), false), Access::kRead);
  EXPECT_EQ(RequiredAccess(verb::get, V{"_count"}, false), Access::kRead);
  EXPECT_EQ(RequiredAccess(verb::get, (V{"api", "v1", "tail"}), false), Access::kRead);
  EXPECT_EQ(RequiredAccess(verb::get, (V{"api", "v1", "patterns"}), false), Access::kRead);
  EXPECT_EQ(RequiredAccess(verb::get, (V{"_cluster", "health"}), false), Access::kAnyKey);
  EXPECT_EQ(RequiredAccess(verb::put, (V{"_index_template", "x"}), false), Access::kIngest);
  EXPECT_EQ(RequiredAccess(verb::post, (V{"logs", "_refresh"}), false), Access::kIngest);
  EXPECT_EQ(RequiredAccess(verb::get, (V{"api", "v2", "search"}), false), Access::kAdmin);
  EXPECT_EQ(RequiredAccess(verb::get, (V{"_nodes"}), false), Access::kAdmin);
}

TEST(ListenGuardTest, LoopbackAndTheRule) {
  for (const char* h : {"127.0.0.1", "127.1.2.3", "::1", "::ffff:127.0.0.1", "localhost"}) {
    EXPECT_TRUE(IsLoopbackHost(h)) << h;
  }
  for (const char* h : {"0.0.0.0", "::", "10.0.0.1", "example.com", "", "::ffff:10.0.0.1"}) {
    EXPECT_FALSE(IsLoopbackHost(h)) << h;
  }
  const HostPort lo{"127.0.0.1", 9200}, any{"0.0.0.0", 9200};
  const ListenerAuth none, keys{true, false}, keys_and_mtls{true, true}, mtls{false, true};
  EXPECT_FALSE(OpenListenerProblem(lo, lo, none, false).has_value());
  EXPECT_TRUE(OpenListenerProblem(any, std::nullopt, none, false).has_value());
  EXPECT_FALSE(OpenListenerProblem(any, std::nullopt, keys, false).has_value());
  // Beats off loopback needs mutual TLS; API keys do not cover it.
  EXPECT_TRUE(OpenListenerProblem(any, any, keys, false).has_value());
  EXPECT_FALSE(OpenListenerProblem(any, any, keys_and_mtls, false).has_value());
  EXPECT_FALSE(OpenListenerProblem(lo, any, mtls, false).has_value());
  EXPECT_TRUE(OpenListenerProblem(any, any, mtls, false).has_value());  // HTTP has no keys
  EXPECT_FALSE(OpenListenerProblem(any, any, none, true).has_value());
  EXPECT_EQ(UnauthenticatedExposures(any, any, none).size(), 2u);
  EXPECT_EQ(UnauthenticatedExposures(any, any, mtls).size(), 1u);
  EXPECT_EQ(UnauthenticatedExposures(any, lo, keys).size(), 0u);
}

}  // namespace
}  // namespace dashcam::server
