// Integration tests of how the real binary serves the page's own files: every
// file the page loads (found by following index.html's links and the
// modules' imports) is served with its content type, an ETag that gives 304,
// gzip when the client accepts it (and only then), the page's security
// headers, and the whole page stays within its size budget.
#include <zlib.h>

#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/common/http_client.h"
#include "tests/common/test_server.h"

namespace dashcam::testing::web_assets_test {
namespace {

// Issue 7's budget for the page's own assets, uncompressed.
constexpr std::size_t kPageBudgetBytes = 200 * 1024;

std::string Gunzip(const std::string& in) {
  z_stream z{};
  if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) return "<inflateInit2 failed>";
  std::string out;
  char buf[16384];
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  int rc = Z_OK;
  while (rc == Z_OK) {
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof buf;
    rc = inflate(&z, Z_NO_FLUSH);
    out.append(buf, sizeof buf - z.avail_out);
  }
  inflateEnd(&z);
  return rc == Z_STREAM_END ? out : "<corrupt gzip>";
}

// The local files a page file refers to: src/href in HTML, url() in CSS,
// static imports in JavaScript modules. Relative to the root ("app.js").
std::vector<std::string> References(const std::string& path, const std::string& body) {
  static const std::regex html(R"re((?:src|href)="([^"#?:]+)")re");
  static const std::regex css(R"re(url\(\s*["']?([^"')#?:]+))re");
  // Module specifiers: "./x.js" (the page's modules import one another so).
  static const std::regex js(R"re(\b(?:import|from)\s*["'](\.{0,2}/[^"']+\.m?js)["'])re");
  const std::regex& re = path.ends_with(".html") ? html : path.ends_with(".css") ? css : js;
  std::vector<std::string> out;
  for (auto it = std::sregex_iterator(body.begin(), body.end(), re); it != std::sregex_iterator();
       ++it) {
    std::string ref = (*it)[1];
    while (ref.starts_with("./") || ref.starts_with("/")) ref.erase(0, ref.find('/') + 1);
    if (!ref.empty() && !ref.starts_with("data")) out.push_back(ref);
  }
  return out;
}

class WebAssetsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = std::make_unique<TestServer>(dir_.path() + "/data");
    ASSERT_TRUE(server_->Start()) << server_->ReadLog();
    client_ = std::make_unique<HttpClient>("127.0.0.1", server_->port());
  }
  void TearDown() override { EXPECT_EQ(server_->Stop(), 0) << server_->ReadLog(); }

  // Every file the page loads, by following references from index.html.
  std::map<std::string, HttpResult> Crawl() {
    std::map<std::string, HttpResult> seen;
    std::vector<std::string> todo = {"index.html"};
    while (!todo.empty()) {
      const std::string path = todo.back();
      todo.pop_back();
      if (seen.count(path)) continue;
      HttpResult r = client_->Get("/" + path);
      EXPECT_EQ(r.status, 200) << "/" << path << " is referenced but not served";
      for (const auto& ref : References(path, r.body)) todo.push_back(ref);
      seen.emplace(path, std::move(r));
    }
    return seen;
  }

  TempDir dir_;
  std::unique_ptr<TestServer> server_;
  std::unique_ptr<HttpClient> client_;
};

TEST_F(WebAssetsTest, EveryPageFileIsServedWithTypeCachingAndSecurityHeaders) {
  const auto files = Crawl();
  ASSERT_GE(files.size(), 3u);  // index.html, a script and a stylesheet at least
  std::size_t total = 0;
  for (const auto& [path, r] : files) {
    SCOPED_TRACE(path);
    total += r.body.size();
    const std::string type = r.headers.count("content-type") ? r.headers.at("content-type") : "";
    const std::string ext = path.substr(path.rfind('.'));
    const std::map<std::string, std::string> types = {{".js", "text/javascript; charset=utf-8"},
                                                      {".css", "text/css; charset=utf-8"},
                                                      {".html", "text/html; charset=utf-8"},
                                                      {".svg", "image/svg+xml"}};
    ASSERT_TRUE(types.count(ext)) << "a page file of an unexpected kind";
    EXPECT_EQ(type, types.at(ext));
    EXPECT_EQ(r.headers.count("content-encoding"), 0u) << "no gzip unless asked for";
    EXPECT_EQ(r.headers.at("x-content-type-options"), "nosniff");
    const std::string& csp = r.headers.at("content-security-policy");
    EXPECT_NE(csp.find("default-src 'none'"), std::string::npos) << csp;
    EXPECT_NE(csp.find("script-src 'self'"), std::string::npos) << csp;
    EXPECT_NE(csp.find("frame-ancestors 'none'"), std::string::npos) << csp;
    EXPECT_EQ(csp.find("unsafe-"), std::string::npos) << csp;

    const std::string etag = r.headers.at("etag");
    const auto again = client_->Request("GET", "/" + path, {}, {{"If-None-Match", etag}});
    EXPECT_EQ(again.status, 304);
    EXPECT_TRUE(again.body.empty());
    const auto listed =
        client_->Request("GET", "/" + path, {}, {{"If-None-Match", "\"other\", " + etag}});
    EXPECT_EQ(listed.status, 304);
  }
  std::printf("page assets: %zu files, %zu bytes uncompressed (budget %zu)\n", files.size(), total,
              kPageBudgetBytes);
  EXPECT_LE(total, kPageBudgetBytes);
}

TEST_F(WebAssetsTest, GzipOnlyWhenAcceptedAndWithItsOwnEtag) {
  const auto files = Crawl();
  std::size_t compressed = 0, plain = 0;
  for (const auto& [path, identity] : files) {
    SCOPED_TRACE(path);
    const auto gz =
        client_->Request("GET", "/" + path, {}, {{"Accept-Encoding", "gzip, deflate, br"}});
    ASSERT_EQ(gz.status, 200);
    if (!gz.headers.count("content-encoding")) continue;  // too small to pay
    EXPECT_EQ(gz.headers.at("content-encoding"), "gzip");
    EXPECT_EQ(gz.headers.at("vary"), "Accept-Encoding");
    EXPECT_EQ(Gunzip(gz.body), identity.body);
    EXPECT_LT(gz.body.size(), identity.body.size());
    EXPECT_NE(gz.headers.at("etag"), identity.headers.at("etag"));
    compressed += gz.body.size();
    plain += identity.body.size();

    // A cached gzip copy revalidates as such; the identity ETag does not
    // match the gzip representation.
    auto h = std::map<std::string, std::string>{{"Accept-Encoding", "gzip"},
                                                {"If-None-Match", gz.headers.at("etag")}};
    EXPECT_EQ(client_->Request("GET", "/" + path, {}, h).status, 304);
    h["If-None-Match"] = identity.headers.at("etag");
    EXPECT_EQ(client_->Request("GET", "/" + path, {}, h).status, 200);

    for (const char* refused : {"gzip;q=0", "identity", "br", "*;q=0"}) {
      const auto r = client_->Request("GET", "/" + path, {}, {{"Accept-Encoding", refused}});
      EXPECT_EQ(r.headers.count("content-encoding"), 0u) << refused;
      EXPECT_EQ(r.body, identity.body) << refused;
    }
    const auto star = client_->Request("GET", "/" + path, {}, {{"Accept-Encoding", "*"}});
    EXPECT_EQ(star.headers.count("content-encoding"), 1u);

    const auto head = client_->Request("HEAD", "/" + path, {}, {{"Accept-Encoding", "gzip"}});
    EXPECT_EQ(head.headers.at("content-length"), std::to_string(gz.body.size()));
    EXPECT_TRUE(head.body.empty());
  }
  EXPECT_GT(compressed, 0u) << "the page's scripts and styles should compress";
  std::printf("page assets over gzip: %zu of %zu bytes\n", compressed, plain);
}

}  // namespace
}  // namespace dashcam::testing::web_assets_test
