// Integration tests of TLS (--tls-cert, --tls-key, --tls-client-ca): the real
// binary, certificates made by the openssl command (tests/common/tls_certs),
// and clients over OpenSSL (tests/common/tls_client) and curl.
//   - HTTPS serves ingest and search; plain HTTP and TLS 1.0/1.1 are refused
//     by the server (its alert, its counters); a stalled handshake is cut off.
//   - Beats over TLS; with --tls-client-ca only clients with a certificate
//     from that CA get their events stored, and the Beats listener may then
//     leave loopback.
//   - Bad TLS configuration stops startup with a reason.
#include <openssl/ssl.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <memory>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <boost/json.hpp>

#include "tests/common/beats_client.h"
#include "tests/common/http_client.h"
#include "tests/common/now.h"
#include "tests/common/test_server.h"
#include "tests/common/tls_certs.h"
#include "tests/common/tls_client.h"

namespace dashcam::testing::tls_test {
namespace {

namespace json = boost::json;
using std::chrono::milliseconds;

std::string BeatsWindow(std::string_view token, int n) {
  std::string events;
  for (int i = 0; i < n; ++i) {
    events +=
        JsonFrame(i + 1, json::serialize(json::object{
                             {"@timestamp", NowRfc3339()},
                             {"message", std::string(token) + " line " + std::to_string(i)}}));
  }
  return WindowFrame(n) + CompressedFrame(events);
}

// The value of a counter line of /metrics ("name{labels} value"), or -1.
double Metric(const std::string& metrics, const std::string& series) {
  // At the start of a line: "# HELP name ..." also names the series.
  const auto at = ("\n" + metrics).find("\n" + series + " ");
  if (at == std::string::npos) return -1;
  return std::stod(metrics.substr(at + series.size() + 1));
}

const char* kHttpFailed = R"(dashcam_tls_handshakes_total{listener="http",result="failed"})";
const char* kBeatsFailed = R"(dashcam_tls_handshakes_total{listener="beats",result="failed"})";
const char* kBeatsOk = R"(dashcam_tls_handshakes_total{listener="beats",result="ok"})";

class TlsTest : public ::testing::Test {
 protected:
  void StartServer(std::vector<std::string> extra = {}) {
    // TestServer adds --beats-listen 127.0.0.1:0 unless `extra` names one.
    std::vector<std::string> args = {"--tls-cert", pki_.server_cert, "--tls-key", pki_.server_key};
    args.insert(args.end(), extra.begin(), extra.end());
    server_ = std::make_unique<TestServer>(dir_.path() + "/data", args);
    ASSERT_TRUE(server_->Start()) << server_->ReadLog();
  }
  void TearDown() override {
    if (server_ && server_->pid() > 0) {
      EXPECT_EQ(server_->Stop(), 0) << server_->ReadLog();
    }
  }
  TlsClientOptions Verified() const {
    TlsClientOptions o;
    o.ca_file = pki_.ca;
    return o;
  }
  HttpResult Get(const std::string& target) {
    TlsClient c(server_->port(), Verified());
    EXPECT_TRUE(c.ok()) << c.error();
    return c.Request("GET", target);
  }
  std::string Metrics() { return Get("/metrics").body; }
  std::int64_t Count(const std::string& q) {
    const auto r = Get("/api/v1/search?limit=0&q=" + UrlEncode(q));
    EXPECT_EQ(r.status, 200) << r.body;
    if (r.status != 200) return -1;
    return json::parse(r.body).at("total").as_int64();
  }

  TempDir dir_;
  TestPki pki_{dir_.path()};
  std::unique_ptr<TestServer> server_;
};

TEST_F(TlsTest, HttpsServesIngestAndSearch) {
  StartServer();
  TlsClient c(server_->port(), Verified());
  ASSERT_TRUE(c.ok()) << c.error();
  const std::string bulk = "{\"create\":{}}\n{\"@timestamp\":\"" + NowRfc3339() +
                           "\",\"message\":\"NCCL WARN over tls\"}\n";
  const auto put = c.Request("POST", "/_bulk?refresh=wait_for", bulk,
                             {{"Content-Type", "application/x-ndjson"}});
  ASSERT_EQ(put.status, 200) << put.body << put.error;
  EXPECT_FALSE(json::parse(put.body).at("errors").as_bool()) << put.body;
  // The same connection stays usable (keep-alive over TLS).
  const auto found = c.Request("GET", "/api/v1/search?q=" + UrlEncode("\"warn over tls\""));
  ASSERT_EQ(found.status, 200) << found.error;
  EXPECT_EQ(json::parse(found.body).at("total").as_int64(), 1) << found.body;

  // curl, as an operator would use it, verifying the certificate by name.
  const std::string cmd = "curl -sS --max-time 20 --cacert '" + pki_.ca +
                          "' 'https://localhost:" + std::to_string(server_->port()) +
                          "/_count?q=tls' 2>&1";
  std::string out;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char buf[512];
    while (std::fgets(buf, sizeof buf, p)) out += buf;
    EXPECT_EQ(pclose(p), 0) << out;
  }
  EXPECT_NE(out.find("\"count\":1"), std::string::npos) << out;
}

TEST_F(TlsTest, OnlyTls12AndNewerAreAccepted) {
  StartServer();
  for (int version : {TLS1_2_VERSION, TLS1_3_VERSION}) {
    TlsClientOptions o = Verified();
    o.min_version = o.max_version = version;
    TlsClient c(server_->port(), o);
    ASSERT_TRUE(c.ok()) << version << ": " << c.error();
    EXPECT_EQ(c.protocol(), version == TLS1_2_VERSION ? "TLSv1.2" : "TLSv1.3");
    EXPECT_EQ(c.Request("GET", "/healthz").status, 200);
  }
  const double failed_before = Metric(Metrics(), kHttpFailed);
  for (int version : {TLS1_VERSION, TLS1_1_VERSION}) {
    TlsClientOptions o = Verified();
    o.min_version = o.max_version = version;
    o.allow_legacy = true;  // so that this client offers it at all
    TlsClient c(server_->port(), o);
    EXPECT_FALSE(c.ok()) << version;
    // The refusal is the server's: its protocol_version alert.
    EXPECT_NE(c.error().find("alert protocol version"), std::string::npos) << c.error();
  }
  EXPECT_EQ(Metric(Metrics(), kHttpFailed), failed_before + 2);
}

TEST_F(TlsTest, PlainHttpAndStalledHandshakesAreRefused) {
  StartServer({"--read-timeout-s", "1"});
  // Plain HTTP gets a plain answer saying what to do, and nothing else.
  HttpClient plain("127.0.0.1", server_->port(), {.retry_once = false});
  const auto r = plain.Get("/api/v1/search?q=x");
  EXPECT_EQ(r.status, 400) << r.error;
  EXPECT_NE(r.body.find("use https://"), std::string::npos) << r.body;
  EXPECT_EQ(r.headers.at("connection"), "close");

  // A client that connects and never sends its hello is cut off.
  BeatsClient raw(server_->port());  // any TCP client will do
  ASSERT_TRUE(raw.connected());
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(raw.WaitClosed(milliseconds(15'000)));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));

  const std::string m = Metrics();
  EXPECT_GE(Metric(m, kHttpFailed), 2) << m;
  EXPECT_NE(server_->ReadLog().find("tls_handshake_failed"), std::string::npos);
  EXPECT_EQ(Get("/healthz").status, 200);  // and it still serves TLS
}

TEST_F(TlsTest, BeatsOverTlsWithoutClientCertificates) {
  StartServer();
  TlsClient c(server_->beats_port(), Verified());
  ASSERT_TRUE(c.ok()) << c.error();
  ASSERT_TRUE(c.Write(BeatsWindow("tlsbeats", 5)));
  const std::string ack = c.Read(6, milliseconds(20'000));
  ASSERT_EQ(ack.size(), 6u) << c.error();
  EXPECT_EQ(ack, std::string("2A\0\0\0\5", 6));
  EXPECT_EQ(Count("tlsbeats"), 5);
}

TEST_F(TlsTest, MutualTlsAdmitsOnlyClientsOfTheConfiguredCa) {
  StartServer({"--tls-client-ca", pki_.ca});
  struct Case {
    const char* name;
    std::string cert, key;
    const char* refusal;  // the server's alert; null: admitted
  };
  const std::vector<Case> cases = {
      {"ourclient", pki_.client_cert, pki_.client_key, nullptr},
      {"nocert", "", "", "alert certificate required"},
      {"othercaclient", pki_.other_client_cert, pki_.other_client_key, "alert unknown ca"},
  };
  for (const auto& k : cases) {
    SCOPED_TRACE(k.name);
    TlsClientOptions o = Verified();
    o.cert_file = k.cert;
    o.key_file = k.key;
    TlsClient c(server_->beats_port(), o);
    // In TLS 1.3 the server judges the client's certificate after the
    // client's side of the handshake is done: the refusal may arrive as an
    // alert on the first read instead.
    if (c.ok()) c.Write(BeatsWindow(k.name, 3));
    const std::string ack = c.Read(6, milliseconds(20'000));
    if (k.refusal == nullptr) {
      ASSERT_TRUE(c.ok()) << c.error();
      EXPECT_EQ(ack, std::string("2A\0\0\0\3", 6)) << c.error();
    } else {
      EXPECT_TRUE(ack.empty());
      EXPECT_TRUE(!c.ok() || c.closed());
      EXPECT_NE(c.error().find(k.refusal), std::string::npos) << c.error();
    }
  }
  EXPECT_EQ(Count("ourclient"), 3);
  EXPECT_EQ(Count("nocert OR othercaclient"), 0);
  const std::string m = Metrics();
  EXPECT_EQ(Metric(m, kBeatsOk), 1) << m;
  EXPECT_EQ(Metric(m, kBeatsFailed), 2) << m;
  // HTTP asks for no client certificate: API keys authenticate there.
  EXPECT_EQ(Get("/healthz").status, 200);
}

TEST_F(TlsTest, ABeatsClientResumesItsSessionUnderMutualTls) {
  StartServer({"--tls-client-ca", pki_.ca});
  TlsClientOptions o = Verified();
  o.cert_file = pki_.client_cert;
  o.key_file = pki_.client_key;
  // TLS 1.2, whose session is known once the handshake ends (TLS 1.3's
  // tickets come later, when the server first writes or reads).
  o.max_version = TLS1_2_VERSION;
  std::shared_ptr<SSL_SESSION> session;
  {
    TlsClient first(server_->beats_port(), o);
    ASSERT_TRUE(first.ok()) << first.error();
    ASSERT_TRUE(first.Write(BeatsWindow("resume", 1)));
    // TLS 1.3 sends its session tickets after the handshake: the ACK's read
    // takes them in.
    ASSERT_EQ(first.Read(6, milliseconds(20'000)), std::string("2A\0\0\0\1", 6));
    session = first.session();
    // A connection dropped without close_notify marks its session as not
    // resumable (OpenSSL's rule): close as a well-behaved client does.
    first.CloseNotifyAndClose();
  }
  ASSERT_NE(session, nullptr);
  o.resume = session;
  TlsClient again(server_->beats_port(), o);
  ASSERT_TRUE(again.ok()) << again.error();
  EXPECT_TRUE(again.resumed());
  ASSERT_TRUE(again.Write(BeatsWindow("resumed", 2)));
  EXPECT_EQ(again.Read(6, milliseconds(20'000)), std::string("2A\0\0\0\2", 6)) << again.error();
}

TEST_F(TlsTest, ATlsClientThatClosesEndsItsLiveTail) {
  StartServer();
  const auto subscribers = [&] { return Metric(Metrics(), "dashcam_tail_subscribers"); };
  TlsClient c(server_->port(), Verified());
  ASSERT_TRUE(c.ok()) << c.error();
  // A plain-text tail: it sends nothing while nothing matches.
  ASSERT_TRUE(
      c.Write("GET /api/v1/tail?q=nothingmatches&format=text HTTP/1.1\r\n"
              "Host: localhost\r\n\r\n"));
  EXPECT_NE(c.Read(12, milliseconds(10'000)).find("HTTP/1.1 200"), std::string::npos);
  const auto until = [&](double want) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
    while (subscribers() != want && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(milliseconds(50));
    }
    return subscribers();
  };
  EXPECT_EQ(until(1), 1);
  // close_notify then FIN: the alert's bytes are data to the socket, yet
  // the server must see the client has gone and drop the tail.
  c.CloseNotifyAndClose();
  EXPECT_EQ(until(0), 0);
}

TEST_F(TlsTest, BadTlsConfigurationStopsStartup) {
  struct Case {
    std::vector<std::string> args;
    const char* reason;
  };
  const std::string missing = dir_.path() + "/missing.pem";
  const std::vector<Case> cases = {
      {{"--tls-cert", pki_.server_cert}, "--tls-cert and --tls-key go together"},
      {{"--tls-client-ca", pki_.ca}, "--tls-client-ca needs --tls-cert"},
      {{"--tls-cert", pki_.server_cert, "--tls-key", pki_.client_key}, "mismatch"},
      {{"--tls-cert", pki_.server_key, "--tls-key", pki_.server_key}, "TLS certificate"},
      {{"--tls-cert", pki_.server_cert, "--tls-key", missing}, "missing.pem"},
      {{"--tls-cert", pki_.server_cert, "--tls-key", pki_.server_key, "--tls-client-ca",
        pki_.server_key},
       "client CA"},
      // Beats off loopback without mutual TLS is refused even with TLS.
      {{"--tls-cert", pki_.server_cert, "--tls-key", pki_.server_key, "--beats-listen",
        "0.0.0.0:0"},
       "mutual TLS"},
  };
  int n = 0;
  for (const auto& c : cases) {
    SCOPED_TRACE(::testing::PrintToString(c.args));
    TestServer server(dir_.path() + "/bad" + std::to_string(n++), c.args);
    EXPECT_FALSE(server.Start());
    ASSERT_TRUE(server.exit_status().has_value()) << server.ReadLog();
    EXPECT_EQ(server.exit_status()->value, 2);
    EXPECT_NE(server.ReadLog().find(c.reason), std::string::npos) << server.ReadLog();
  }
}

TEST_F(TlsTest, MutualTlsLetsTheBeatsListenerLeaveLoopback) {
  // Bound to every address: only clients with our CA's certificate get in.
  StartServer({"--tls-client-ca", pki_.ca, "--beats-listen", "0.0.0.0:0"});
  TlsClientOptions o = Verified();
  o.cert_file = pki_.client_cert;
  o.key_file = pki_.client_key;
  TlsClient c(server_->beats_port(), o);
  ASSERT_TRUE(c.ok()) << c.error();
  ASSERT_TRUE(c.Write(BeatsWindow("everywhere", 2)));
  EXPECT_EQ(c.Read(6, milliseconds(20'000)), std::string("2A\0\0\0\2", 6)) << c.error();
}

}  // namespace
}  // namespace dashcam::testing::tls_test
