// Redactor: masks secrets in text before it is stored, indexed, logged or
// answered. Each match of a rule becomes `[REDACTED:<rule name>]` (for a rule
// with a group, only the group: `token=[REDACTED:jupyter_token]`); a masked
// span in quotes keeps its quotes.
//
// Guarantees, for any input bytes:
//   - linear time (RE2), no exceptions;
//   - idempotent: redacting the output again changes nothing (rules run to a
//     fixed point; text that already is a mask is never masked again);
//   - bounded growth: the output is at most kMaxGrowth times the input plus
//     one mask, since every mask replaces at least one byte.
//
// A Redactor is immutable after Create and safe to share between threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <re2/re2.h>
#include <re2/set.h>

#include "ingest/redaction_rules.h"
#include "storage/metrics.h"
#include "storage/status.h"

namespace dashcam::ingest {

// Which rules fired while redacting one document, by rule id (an index into
// Redactor::rule_names()).
class RedactionHits {
 public:
  void Add(std::size_t rule_id);
  bool empty() const { return ids_.empty(); }
  const std::vector<std::uint16_t>& ids() const { return ids_; }  // distinct, in first-hit order
  void Clear() { ids_.clear(); }

 private:
  std::vector<std::uint16_t> ids_;
};

class Redactor {
 public:
  static constexpr std::size_t kMaxGrowth = 80;

  // Builds the rule set: the defaults minus `config.disabled`, then
  // `config.rules`. Counts masks per rule in `metrics` when given
  // (dashcam_redactions_total{rule=...}).
  // Errors: InvalidArgument naming the rule and RE2's message, an unknown
  // disabled name, a missing group, a duplicate name.
  static Result<std::unique_ptr<Redactor>> Create(const RedactionConfig& config,
                                                  Metrics* metrics = nullptr);

  // Masks secrets in `in`. Returns false, leaving `out` untouched, when there
  // is nothing to mask; else writes the redacted text to `out`.
  bool RedactText(std::string_view in, std::string& out, RedactionHits& hits) const;

  // A cheap pre-check over many strings at once: `joined` is strings
  // separated by '\n'. False means RedactText would change none of them.
  bool MayMatchAny(std::string_view joined) const;

  // Whether a JSON field named `name` has its whole value masked.
  bool IsSecretField(std::string_view name) const;
  std::size_t secret_field_rule() const { return secret_field_id_; }
  // Counts one whole-value mask of a secret field.
  void CountFieldMask() const;

  struct RuleInfo {
    std::string name;
    std::string pattern;  // empty for the secret-field rule
    std::string group;
    bool builtin;
  };
  // Every active rule (the secret-field rule last), for listing.
  std::vector<RuleInfo> Describe() const;
  const std::vector<std::string>& field_names() const { return field_names_; }
  const std::string& rule_name(std::size_t id) const { return names_[id]; }

 private:
  struct Compiled {
    std::size_t id;  // index into names_ (rules sharing a name share an id)
    std::unique_ptr<RE2> re;
    int group = 0;       // capture group to mask; 0: the whole match
    int name_group = 0;  // capture group that must be a secret name; 0: none
    RedactionRule spec;
  };

  Redactor() = default;
  // One pass of one rule over `text`; returns whether it masked anything.
  bool ApplyRule(const Compiled& rule, const std::string& text, std::string& out,
                 RedactionHits& hits) const;

  std::vector<Compiled> rules_;
  std::unique_ptr<RE2::Set> any_;  // all patterns, to skip clean text in one pass
  // The same patterns in multi-line mode, so that ^ and $ also match at the
  // '\n' between joined strings; null when a pattern uses \A or \z, which
  // cannot be made to.
  std::unique_ptr<RE2::Set> any_joined_;
  std::vector<std::string> names_;
  std::vector<Counter*> counters_;        // by id; null without metrics
  std::vector<std::string> field_names_;  // lowercased
  std::size_t secret_field_id_ = 0;
};

}  // namespace dashcam::ingest
