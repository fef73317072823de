#include "server/hash_key_command.h"

#include <cstdio>
#include <iostream>
#include <string>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>
#include <CLI/CLI.hpp>

#include "api/query_parser.h"
#include "server/api_keys.h"
#include "server/key_hash.h"

namespace dashcam::server {
namespace {

struct HashKeyArgs {
  std::string id;
  std::string role;
  std::string filter;
  std::uint32_t iterations = 0;  // 0: the default for how the key was made
  bool generate = false;
};

// The key on stdin: its first line, without the line end.
std::optional<std::string> ReadKey() {
  std::string key;
  if (!std::getline(std::cin, key)) return std::nullopt;
  if (!key.empty() && key.back() == '\r') key.pop_back();
  if (key.empty()) return std::nullopt;
  return key;
}

std::string Entry(const HashKeyArgs& a, const KeyHash& h) {
  YAML::Emitter out;
  out << YAML::BeginSeq << YAML::BeginMap;
  out << YAML::Key << "id" << YAML::Value << a.id;
  out << YAML::Key << "role" << YAML::Value << a.role;
  if (!a.filter.empty()) {
    out << YAML::Key << "filter" << YAML::Value << YAML::SingleQuoted << a.filter;
  }
  out << YAML::Key << "iterations" << YAML::Value << h.iterations;
  out << YAML::Key << "salt" << YAML::Value << Base64Encode(h.salt);
  out << YAML::Key << "hash" << YAML::Value << Base64Encode(h.hash);
  out << YAML::EndMap << YAML::EndSeq;
  return std::string(out.c_str()) + "\n";
}

// Why the arguments cannot make a valid entry, or "".
std::string Problem(const HashKeyArgs& a) {
  if (!IsValidKeyId(a.id)) return "--id must be 1-64 of [A-Za-z0-9._-]";
  const auto role = ParseRole(a.role);
  if (!role) return "--role must be ingest, read or admin";
  if (a.filter.empty()) return "";
  if (*role != Role::kRead) return "--filter is for read keys only";
  auto parsed = api::ParseQuery(a.filter);
  if (auto* err = std::get_if<api::QueryError>(&parsed)) {
    return fmt::format("--filter: {} at position {}", err->reason, err->position);
  }
  return "";
}

}  // namespace

int RunHashKeyCommand(int argc, char** argv) {
  HashKeyArgs a;
  CLI::App app{"Print an --auth-file entry (YAML) for an API key read from stdin",
               "dashcam hash-key"};
  app.add_option("--id", a.id, "Key id ([A-Za-z0-9._-], the user name in Basic auth)")->required();
  app.add_option("--role", a.role, "ingest, read or admin")->required();
  app.add_option("--filter", a.filter,
                 "read keys: a query ANDed into every query the key makes (e.g. user:alice)");
  app.add_option("--iterations", a.iterations,
                 "PBKDF2 iterations (default: 10000 for a "
                 "generated key, 600000 for one from stdin)")
      ->check(CLI::Range(kMinIterations, kMaxIterations));
  app.add_flag("--generate", a.generate, "Make a random key instead of reading one");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  if (auto problem = Problem(a); !problem.empty()) {
    std::fprintf(stderr, "dashcam hash-key: %s\n", problem.c_str());
    return 2;
  }
  std::string key;
  if (a.generate) {
    key = GenerateKey();
  } else if (auto read = ReadKey()) {
    key = std::move(*read);
  } else {
    std::fputs("dashcam hash-key: no key on stdin (or pass --generate)\n", stderr);
    return 2;
  }
  if (a.iterations == 0) a.iterations = a.generate ? kGeneratedKeyIterations : kChosenKeyIterations;
  ApiKey check;  // the same id rule as the auth file
  check.id = a.id;
  if (a.id.empty() || a.id.size() > 64 ||
      a.id.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") !=
          std::string::npos) {
    std::fputs("dashcam hash-key: --id must be 1-64 of [A-Za-z0-9._-]\n", stderr);
    return 2;
  }
  std::fputs(Entry(a, HashKey(key, a.iterations)).c_str(), stdout);
  if (a.generate) {
    std::fprintf(stderr, "key: %s\nApiKey token (Filebeat api_key: %s:<key>): %s\n", key.c_str(),
                 a.id.c_str(), Base64Encode(a.id + ":" + key).c_str());
  }
  return 0;
}

}  // namespace dashcam::server
