// The rules that decide what redaction masks: dashcam's default set, and the
// operator's additions read from a YAML rules file (--redaction-rules):
//
//   rules:                       # added after the default rules
//     - name: lab_vault_token    # [a-z0-9_]+, shown in the mask
//       pattern: 'hvs\.[A-Za-z0-9]{24,}'   # RE2 syntax
//       group: secret            # optional: mask only this named group
//   disable: [bearer_token]      # default rules to turn off, by name
//   fields: [session_cookie]     # field names whose whole value is masked,
//                                # beside the names IsSecretName() accepts
//
// A rule masks each match of its pattern (or of its named group) as
// `[REDACTED:<name>]`. Patterns are RE2: matching is linear in the input,
// so no rule can make ingestion hang on crafted text.
#pragma once

#include <string>
#include <vector>

#include "storage/status.h"

namespace dashcam::ingest {

struct RedactionRule {
  std::string name;
  std::string pattern;
  std::string group;  // the named group to mask; empty: the whole match
  // Internal to default rules: a named group holding a variable name; a
  // match counts only when IsSecretName() accepts it ("HF_TOKEN=..." is
  // masked, "max_tokens=2048" is not).
  std::string name_group;
  bool builtin = false;
};

// The name under which whole values of secret-named JSON fields are masked.
inline constexpr const char* kSecretFieldRule = "secret_field";

struct RedactionConfig {
  bool enabled = true;
  std::vector<RedactionRule> rules;      // added after the defaults
  std::vector<std::string> disabled;     // names of default rules
  std::vector<std::string> field_names;  // masked whatever their value
};

// dashcam's default rules, in the order they are applied (specific token
// formats before generic assignments, so the mask names the precise kind).
std::vector<RedactionRule> DefaultRedactionRules();

// Reads a rules file. Errors: InvalidArgument naming the file and the
// problem (unreadable, not YAML, unknown key, a rule without name/pattern,
// a bad name). Patterns are checked when the Redactor is built.
Result<RedactionConfig> LoadRedactionConfig(const std::string& path);

}  // namespace dashcam::ingest
