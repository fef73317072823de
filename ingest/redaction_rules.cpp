#include "ingest/redaction_rules.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

namespace dashcam::ingest {
namespace {

// A percent-encoded-aware value: any byte but the terminators, or a %XX
// escape other than %26 ('&', which ends a query parameter). ',' and ';'
// end it too, as they end a value in `a=1,b=2` lists and in headers, and a
// last ')', '}' or '.' is the punctuation around it: in `(token=abc),` the
// value is `abc`, so the punctuation survives and a specific mask inside an
// assignment (`HF_TOKEN=[REDACTED:huggingface_token],`) is not masked again.
#define DC_QUERY_BYTE R"([^\s&"'<>#%,;]|%[013-9a-fA-F][0-9a-fA-F]|%2[0-57-9a-fA-F])"
#define DC_QUERY_LAST R"([^\s&"'<>#%,;)}.]|%[013-9a-fA-F][0-9a-fA-F]|%2[0-57-9a-fA-F])"
#define DC_QUERY_VALUE "(?:(?:" DC_QUERY_BYTE ")*(?:" DC_QUERY_LAST "))"

RedactionRule Rule(const char* name, const char* pattern, const char* group = "secret",
                   const char* name_group = "") {
  return RedactionRule{name, pattern, group, name_group, true};
}

}  // namespace

std::vector<RedactionRule> DefaultRedactionRules() {
  return {
      // Whole PEM/PGP private key blocks; an unterminated block (a log line
      // cut short) is masked to the end of the string.
      Rule(
          "private_key",
          R"(-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----(?s:.*?)(?:-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|$))",
          ""),
      Rule("jwt", R"(\beyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*)", ""),
      Rule("aws_access_key_id", R"(\b(?:AKIA|ASIA)[A-Z0-9]{16}\b)", ""),
      Rule("github_token", R"(\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,}))", ""),
      Rule("huggingface_token", R"(\bhf_[A-Za-z0-9]{30,})", ""),
      Rule("openai_key", R"(\bsk-(?:proj-|svcacct-|admin-|ant-)?[A-Za-z0-9_-]{20,})", ""),
      Rule("slack_token", R"(\bxox[abprs]-[A-Za-z0-9-]{10,})", ""),
      Rule("google_api_key", R"(\bAIza[0-9A-Za-z_-]{35})", ""),
      Rule("stripe_key", R"(\b[rs]k_(?:live|test)_[0-9A-Za-z]{10,})", ""),
      // scheme://user:password@host keeps user and host; also percent-encoded
      // inside another URL (https%3A%2F%2Fuser%3Apass%40host).
      Rule("url_credentials",
           R"((?i)\b[a-z][a-z0-9+.-]*://[^\s/?#@:"'<>]*:(?P<secret>[^\s/?#"'<>]+)@)"),
      Rule(
          "url_credentials",
          R"((?i)\b[a-z][a-z0-9+.-]*%3a%2f%2f[^\s/?#@:"'<>%&]*%3a(?P<secret>(?:[^\s/?#@"'<>&%]|%[0-9a-f]{2})+?)%40)"),
      // Jupyter's ?token=/&token= in URLs, also percent-encoded in another URL.
      Rule("jupyter_token", R"((?i)(?:[?&]|%3f|%26)token(?:=|%3d)(?P<secret>)" DC_QUERY_VALUE ")"),
      Rule(
          "authorization_header",
          R"((?i)\b(?:proxy-)?authorization["']?\s*[:=]\s*["']?(?:(?:bearer|basic|apikey|api-key|token|digest|negotiate|ntlm)\s+)?(?P<secret>[^\s"',;]*[^\s"',;)}.]))"),
      Rule(
          "api_key_header",
          R"((?i)\bx-[a-z0-9-]*(?:key|token|secret|auth)["']?\s*:\s*["']?(?P<secret>[^\s"',;]*[^\s"',;)}.]))"),
      Rule("bearer_token", R"(\b[Bb]earer\s+(?P<secret>[A-Za-z0-9._~+/-]{16,}=*))"),
      // NAME=value, NAME: value, "NAME": "value", export NAME=value, and
      // NAME%3Dvalue, for names IsSecretName() accepts. (Authorization is
      // left to the header rule, which keeps the scheme.)
      Rule(
          "secret_assignment",
          R"((?i)(?:^|[^a-z0-9_.-])(?P<name>[a-z0-9_.-]*(?:passw|pwd|passphrase|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|credential)[a-z0-9_.-]*)["']?\s*(?:=|:|%3d)\s*(?P<secret>"[^"\n]*"|'[^'\n]*'|)" DC_QUERY_VALUE
          ")",
          "secret", "name"),
  };
}

namespace {

Status Bad(const std::string& path, const std::string& what) {
  return Status::InvalidArgument(fmt::format("redaction rules {}: {}", path, what));
}

bool ValidRuleName(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  return true;
}

Result<std::vector<std::string>> StringList(const YAML::Node& node, const std::string& path,
                                            const char* key) {
  std::vector<std::string> out;
  if (!node) return out;
  if (!node.IsSequence()) return Bad(path, fmt::format("'{}' must be a list of strings", key));
  for (const auto& item : node) {
    if (!item.IsScalar()) return Bad(path, fmt::format("'{}' must be a list of strings", key));
    out.push_back(item.as<std::string>());
  }
  return out;
}

Result<RedactionRule> ParseRule(const YAML::Node& node, const std::string& path,
                                std::size_t index) {
  if (!node.IsMap()) return Bad(path, fmt::format("rules[{}] must be a mapping", index));
  RedactionRule rule;
  for (const auto& kv : node) {
    const auto key = kv.first.as<std::string>();
    if (!kv.second.IsScalar()) {
      return Bad(path, fmt::format("rules[{}].{} must be a string", index, key));
    }
    if (key == "name") {
      rule.name = kv.second.as<std::string>();
    } else if (key == "pattern") {
      rule.pattern = kv.second.as<std::string>();
    } else if (key == "group") {
      rule.group = kv.second.as<std::string>();
    } else {
      return Bad(path,
                 fmt::format("rules[{}]: unknown key '{}' (name, pattern, group)", index, key));
    }
  }
  if (!ValidRuleName(rule.name)) {
    return Bad(path,
               fmt::format("rules[{}]: name '{}' must be 1-64 of [a-z0-9_]", index, rule.name));
  }
  if (rule.pattern.empty()) {
    return Bad(path, fmt::format("rule {}: pattern is missing", rule.name));
  }
  return rule;
}

}  // namespace

Result<RedactionConfig> LoadRedactionConfig(const std::string& path) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::Exception& e) {
    return Bad(path, e.what());
  }
  RedactionConfig config;
  if (root.IsNull()) return config;
  if (!root.IsMap()) return Bad(path, "the file must be a mapping (rules, disable, fields)");
  try {
    for (const auto& kv : root) {
      const auto key = kv.first.as<std::string>();
      if (key == "rules") {
        if (!kv.second.IsSequence()) return Bad(path, "'rules' must be a list");
        std::size_t i = 0;
        for (const auto& item : kv.second) {
          auto rule = ParseRule(item, path, i++);
          if (!rule.ok()) return rule.status();
          config.rules.push_back(std::move(*rule));
        }
      } else if (key == "disable") {
        auto list = StringList(kv.second, path, "disable");
        if (!list.ok()) return list.status();
        config.disabled = std::move(*list);
      } else if (key == "fields") {
        auto list = StringList(kv.second, path, "fields");
        if (!list.ok()) return list.status();
        config.field_names = std::move(*list);
      } else {
        return Bad(path, fmt::format("unknown key '{}' (rules, disable, fields)", key));
      }
    }
  } catch (const YAML::Exception& e) {
    return Bad(path, e.what());
  }
  return config;
}

}  // namespace dashcam::ingest
