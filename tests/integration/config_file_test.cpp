// --config against the real binary: a TOML file composes with DASHCAM_*
// variables and flags (flags > environment > file > defaults), a key or
// section the binary does not know stops startup with exit 2 and a message
// naming it, and deploy/dashcam.example.toml loads and documents every option
// of `dashcam --help` with the binary's own default.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <boost/json.hpp>

#include "tests/common/http_client.h"
#include "tests/common/test_server.h"

namespace dashcam::testing::config_file_test {
namespace {

namespace json = boost::json;

std::string WriteFile(const TempDir& dir, const std::string& name, const std::string& text) {
  const std::string path = dir.path() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// GET / and /api/v1/status of a running server: the version Elasticsearch
// clients are told, and the status's config summary.
struct Observed {
  std::string es_version;
  json::object config;
};

Observed Observe(const TestServer& server) {
  HttpClient http("127.0.0.1", server.port());
  Observed out;
  const auto root = http.Get("/");
  EXPECT_EQ(root.status, 200) << root.body;
  out.es_version = json::value_to<std::string>(json::parse(root.body).at("version").at("number"));
  const auto status = http.Get("/api/v1/status");
  EXPECT_EQ(status.status, 200) << status.body;
  out.config = json::parse(status.body).at("config").as_object();
  return out;
}

// Sets an environment variable for its lifetime; the server inherits it.
// (ctest runs each test in its own process, so nothing else sees it.)
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) { ::setenv(name, value, 1); }
  ~ScopedEnv() { ::unsetenv(name_); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
};

const char kFile[] =
    "# a comment\n"
    "es-version = \"8.11.1\"\n"
    "max-tails = 77\n"
    "sync = \"normal\"\n"
    "no-redaction = true\n";

TEST(ConfigFileTest, ValuesFromTheFileTakeEffect) {
  TempDir dir;
  const std::string file = WriteFile(dir, "dashcam.toml", kFile);
  TestServer server(dir.path() + "/data", {"--config", file});
  ASSERT_TRUE(server.Start()) << server.error() << server.ReadLog();
  const Observed seen = Observe(server);
  EXPECT_EQ(seen.es_version, "8.11.1");
  EXPECT_EQ(seen.config.at("max_tails").to_number<std::int64_t>(), 77);
  EXPECT_EQ(seen.config.at("sync").as_string(), "normal");
  EXPECT_FALSE(seen.config.at("redaction").at("enabled").as_bool());
  EXPECT_EQ(server.Stop(), 0) << server.ReadLog();
}

TEST(ConfigFileTest, EnvironmentOverridesTheFileAndFlagsOverrideBoth) {
  TempDir dir;
  const std::string file = WriteFile(dir, "dashcam.toml", kFile);
  const ScopedEnv env("DASHCAM_ES_VERSION", "8.12.0");
  {
    TestServer server(dir.path() + "/data1", {"--config", file});
    ASSERT_TRUE(server.Start()) << server.error() << server.ReadLog();
    const Observed seen = Observe(server);
    EXPECT_EQ(seen.es_version, "8.12.0");  // environment over file
    // The rest of the file still applies.
    EXPECT_EQ(seen.config.at("max_tails").to_number<std::int64_t>(), 77);
    EXPECT_EQ(server.Stop(), 0) << server.ReadLog();
  }
  {
    TestServer server(dir.path() + "/data2",
                      {"--config", file, "--es-version", "8.13.0", "--max-tails", "5"});
    ASSERT_TRUE(server.Start()) << server.error() << server.ReadLog();
    const Observed seen = Observe(server);
    EXPECT_EQ(seen.es_version, "8.13.0");                                 // flag over environment
    EXPECT_EQ(seen.config.at("max_tails").to_number<std::int64_t>(), 5);  // flag over file
    EXPECT_EQ(server.Stop(), 0) << server.ReadLog();
  }
}

TEST(ConfigFileTest, WhatTheBinaryCannotMeanStopsStartupWithExit2) {
  TempDir dir;
  struct Case {
    std::string text;
    std::string says;
  };
  const std::vector<Case> cases = {
      {"max-tails = 5\nbogus = 1\n", "unknown setting 'bogus'"},
      {"max_tails = 5\n", "unknown setting 'max_tails'"},  // keys are spelt as the flags
      {"[server]\nlisten = \"127.0.0.1:0\"\n", "unknown section [server]"},
      {"max-tails = \"many\"\n", "--max-tails"},
      {"sync = \"sometimes\"\n", "sometimes"},
      {"config = \"other.toml\"\n", "config"},
  };
  int n = 0;
  for (const auto& c : cases) {
    SCOPED_TRACE(c.text);
    const std::string name = "bad" + std::to_string(n) + ".toml";
    const std::string file = WriteFile(dir, name, c.text);
    TestServer server(dir.path() + "/data" + std::to_string(n++), {"--config", file});
    EXPECT_FALSE(server.Start());
    ASSERT_TRUE(server.exit_status().has_value());
    EXPECT_EQ(server.exit_status()->value, 2);
    const std::string log = server.ReadLog();
    EXPECT_NE(log.find(c.says), std::string::npos) << log;
    if (c.says.rfind("unknown", 0) == 0) {
      EXPECT_NE(log.find(name), std::string::npos) << log;  // names the file
    }
  }
  TestServer missing(dir.path() + "/data_missing", {"--config", dir.path() + "/nope.toml"});
  EXPECT_FALSE(missing.Start());
  ASSERT_TRUE(missing.exit_status().has_value());
  EXPECT_EQ(missing.exit_status()->value, 2);
  EXPECT_NE(missing.ReadLog().find("nope.toml"), std::string::npos) << missing.ReadLog();
}

// --- deploy/dashcam.example.toml ---------------------------------------------

const std::string kExample = std::string(DASHCAM_SOURCE_DIR) + "/deploy/dashcam.example.toml";

// Every option `dashcam --help` shows, with the default it prints ("" when
// it prints none: flags and file options). --help, --version and --config
// are not settings.
std::map<std::string, std::string> OptionsFromHelp() {
  const std::string command = TestServer::BinaryPath() + " --help";
  FILE* pipe = ::popen(command.c_str(), "r");
  EXPECT_NE(pipe, nullptr);
  std::string help;
  char buf[4096];
  for (std::size_t got; pipe && (got = std::fread(buf, 1, sizeof buf, pipe)) > 0;) {
    help.append(buf, got);
  }
  if (pipe) {
    EXPECT_EQ(::pclose(pipe), 0);
  }
  // "  --max-tails UINT:UINT in [0 - 100000]=1000 (Env:DASHCAM_MAX_TAILS)"
  const std::regex line(R"(^\s+(?:-\w,)?--([a-z0-9-]+)(.*?)(?: \(Env:\S+\))?\s*$)");
  std::map<std::string, std::string> out;
  std::istringstream in(help);
  for (std::string l; std::getline(in, l);) {
    std::smatch m;
    if (!std::regex_match(l, m, line)) continue;
    const std::string name = m[1];
    if (name == "help" || name == "version" || name == "config") continue;
    const std::string type = m[2];
    const auto eq = type.rfind('=');
    out[name] = eq == std::string::npos ? "" : type.substr(eq + 1);
  }
  return out;
}

// "# key = value" lines of the example, quotes removed from the value.
std::map<std::string, std::string> DocumentedDefaults(const std::string& text) {
  const std::regex line(R"(^# ([a-z][a-z0-9-]*) = (.*)$)");
  std::map<std::string, std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) {
    std::smatch m;
    if (!std::regex_match(l, m, line)) continue;
    std::string value = m[2];
    if (value.size() >= 2 && value.front() == '"' && value.back() == '"') {
      value = value.substr(1, value.size() - 2);
    }
    EXPECT_EQ(out.count(m[1]), 0u) << "documented twice: " << m[1];
    out[m[1]] = value;
  }
  return out;
}

TEST(ExampleConfigTest, DocumentsEveryOptionWithTheBinarysDefault) {
  const auto options = OptionsFromHelp();
  ASSERT_GT(options.size(), 20u);  // the help was read and parsed
  const auto documented = DocumentedDefaults(ReadFile(kExample));
  for (const auto& [name, default_value] : options) {
    SCOPED_TRACE(name);
    const auto it = documented.find(name);
    if (it == documented.end()) {
      ADD_FAILURE() << "--" << name << " is missing from deploy/dashcam.example.toml";
      continue;
    }
    if (default_value.empty()) {
      EXPECT_TRUE(it->second.empty() || it->second == "false") << it->second;
    } else {
      EXPECT_EQ(it->second, default_value);
    }
  }
  for (const auto& [name, value] : documented) {
    EXPECT_EQ(options.count(name), 1u) << name << " is documented but not an option";
  }
}

// The file as shipped (every line commented out) and with every line
// uncommented both start the server, with the defaults in effect.
TEST(ExampleConfigTest, LoadsAsShippedAndUncommented) {
  TempDir dir;
  const std::string text = ReadFile(kExample);
  const std::string uncommented =
      std::regex_replace(text, std::regex(R"((^|\n)# ([a-z][a-z0-9-]* = ))"), "$1$2");
  const auto defaults = DocumentedDefaults(text);
  ASSERT_GT(defaults.size(), 20u);
  ASSERT_TRUE(DocumentedDefaults(uncommented).empty());  // all were uncommented
  const std::vector<std::string> files = {kExample,
                                          WriteFile(dir, "uncommented.toml", uncommented)};
  int n = 0;
  for (const auto& file : files) {
    SCOPED_TRACE(file);
    // TestServer's own --listen, --beats-listen and --data-dir flags win.
    TestServer server(dir.path() + "/data" + std::to_string(n++), {"--config", file});
    ASSERT_TRUE(server.Start()) << server.error() << server.ReadLog();
    const Observed seen = Observe(server);
    EXPECT_EQ(seen.es_version, defaults.at("es-version"));
    EXPECT_EQ(std::to_string(seen.config.at("max_tails").to_number<std::int64_t>()),
              defaults.at("max-tails"));
    EXPECT_EQ(seen.config.at("sync").as_string(), defaults.at("sync"));
    EXPECT_EQ(seen.config.at("redaction").at("enabled").as_bool(),
              defaults.at("no-redaction") == "false");
    EXPECT_EQ(server.Stop(), 0) << server.ReadLog();
  }
}

}  // namespace
}  // namespace dashcam::testing::config_file_test
