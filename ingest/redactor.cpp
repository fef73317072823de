#include "ingest/redactor.h"

#include <algorithm>
#include <array>
#include <utility>

#include <fmt/format.h>

#include "ingest/secret_names.h"

namespace dashcam::ingest {
namespace {

constexpr std::string_view kMaskPrefix = "[REDACTED:";
// Rounds of all rules before the text is stable. A mask can only create a
// new match at its edges (a word boundary appears), so one extra round is
// the norm; the cap keeps a pathological input linear.
constexpr int kMaxRounds = 8;
constexpr int kMaxGroups = 10;

bool IsMaskNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
}

// Whether `s` is exactly one mask, "[REDACTED:name]".
bool IsMask(std::string_view s) {
  if (s.size() < kMaskPrefix.size() + 2 || s.substr(0, kMaskPrefix.size()) != kMaskPrefix ||
      s.back() != ']') {
    return false;
  }
  const auto name = s.substr(kMaskPrefix.size(), s.size() - kMaskPrefix.size() - 1);
  return std::all_of(name.begin(), name.end(), IsMaskNameChar);
}

// The [begin, end) spans of the masks already in `text`, in order.
std::vector<std::pair<std::size_t, std::size_t>> MaskSpans(std::string_view text) {
  std::vector<std::pair<std::size_t, std::size_t>> spans;
  for (auto b = text.find(kMaskPrefix); b != std::string_view::npos;
       b = text.find(kMaskPrefix, b + 1)) {
    const std::size_t name = b + kMaskPrefix.size();
    std::size_t e = name;
    while (e < text.size() && IsMaskNameChar(text[e])) ++e;
    if (e > name && e < text.size() && text[e] == ']') spans.emplace_back(b, e + 1);
  }
  return spans;
}

// Shrinks [b, e) so that it does not cut through a mask: a rule must not
// see "[REDACTED:github_token]@" as user "[REDACTED" and password
// "github_token]". Whole masks inside [b, e) may stay.
void KeepMasksWhole(const std::vector<std::pair<std::size_t, std::size_t>>& spans, std::size_t& b,
                    std::size_t& e) {
  // The first mask ending after b, then every mask starting before e.
  auto it = std::upper_bound(spans.begin(), spans.end(), b,
                             [](std::size_t pos, const auto& s) { return pos < s.second; });
  for (; it != spans.end() && it->first < e; ++it) {
    if (it->first < b) b = it->second;
    if (it->second > e) e = std::max(b, it->first);
  }
}

std::string Lowercase(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

RE2::Options RuleOptions() {
  RE2::Options o;
  o.set_log_errors(false);
  return o;
}

}  // namespace

void RedactionHits::Add(std::size_t rule_id) {
  const auto id = static_cast<std::uint16_t>(rule_id);
  if (std::find(ids_.begin(), ids_.end(), id) == ids_.end()) ids_.push_back(id);
}

Result<std::unique_ptr<Redactor>> Redactor::Create(const RedactionConfig& config,
                                                   Metrics* metrics) {
  std::unique_ptr<Redactor> r(new Redactor());
  std::vector<RedactionRule> specs;
  auto defaults = DefaultRedactionRules();
  for (const auto& name : config.disabled) {
    const bool known = std::any_of(defaults.begin(), defaults.end(),
                                   [&](const RedactionRule& d) { return d.name == name; });
    if (!known) {
      return Status::InvalidArgument(
          fmt::format("redaction: cannot disable '{}': no default rule has that name", name));
    }
  }
  for (auto& d : defaults) {
    if (std::find(config.disabled.begin(), config.disabled.end(), d.name) ==
        config.disabled.end()) {
      specs.push_back(std::move(d));
    }
  }
  for (const auto& rule : config.rules) {
    const bool taken = rule.name == kSecretFieldRule ||
                       std::any_of(specs.begin(), specs.end(), [&](const RedactionRule& s) {
                         return s.builtin && s.name == rule.name;
                       });
    if (taken) {
      return Status::InvalidArgument(fmt::format(
          "redaction rule {}: the name is taken by a default rule (disable it first)", rule.name));
    }
    specs.push_back(rule);
  }

  r->any_ = std::make_unique<RE2::Set>(RuleOptions(), RE2::UNANCHORED);
  r->any_joined_ = std::make_unique<RE2::Set>(RuleOptions(), RE2::UNANCHORED);
  for (auto& spec : specs) {
    Compiled c;
    c.re = std::make_unique<RE2>(spec.pattern, RuleOptions());
    if (!c.re->ok()) {
      return Status::InvalidArgument(
          fmt::format("redaction rule {}: invalid pattern: {}", spec.name, c.re->error()));
    }
    const auto& groups = c.re->NamedCapturingGroups();
    for (auto [want, slot] :
         {std::pair{&spec.group, &c.group}, {&spec.name_group, &c.name_group}}) {
      if (want->empty()) continue;
      const auto it = groups.find(*want);
      if (it == groups.end()) {
        return Status::InvalidArgument(fmt::format(
            "redaction rule {}: the pattern has no group named '{}'", spec.name, *want));
      }
      if (it->second >= kMaxGroups) {
        return Status::InvalidArgument(
            fmt::format("redaction rule {}: group '{}' must be among the first {} groups",
                        spec.name, *want, kMaxGroups - 1));
      }
      *slot = it->second;
    }
    std::string err;
    if (r->any_->Add(spec.pattern, &err) < 0) {
      return Status::InvalidArgument(
          fmt::format("redaction rule {}: invalid pattern: {}", spec.name, err));
    }
    // \A, \z and a (?-m) flag keep their meaning in multi-line mode.
    const bool absolute_anchor = spec.pattern.find("\\A") != std::string::npos ||
                                 spec.pattern.find("\\z") != std::string::npos ||
                                 spec.pattern.find("-m") != std::string::npos;
    if (absolute_anchor) r->any_joined_.reset();
    if (r->any_joined_ && r->any_joined_->Add("(?m)" + spec.pattern, &err) < 0) {
      r->any_joined_.reset();
    }
    const auto existing = std::find(r->names_.begin(), r->names_.end(), spec.name);
    c.id = static_cast<std::size_t>(existing - r->names_.begin());
    if (existing == r->names_.end()) r->names_.push_back(spec.name);
    c.spec = std::move(spec);
    r->rules_.push_back(std::move(c));
  }
  if (!r->any_->Compile()) {
    return Status::InvalidArgument("redaction: the rule set is too large to compile");
  }
  if (r->any_joined_ && !r->any_joined_->Compile()) r->any_joined_.reset();
  r->secret_field_id_ = r->names_.size();
  r->names_.emplace_back(kSecretFieldRule);
  for (const auto& f : config.field_names) r->field_names_.push_back(Lowercase(f));
  r->counters_.assign(r->names_.size(), nullptr);
  if (metrics) {
    for (std::size_t i = 0; i < r->names_.size(); ++i) {
      r->counters_[i] = &metrics->GetCounter("dashcam_redactions_total",
                                             "Secrets masked before storage, by rule.",
                                             fmt::format("rule=\"{}\"", r->names_[i]));
    }
  }
  return r;
}

bool Redactor::ApplyRule(const Compiled& rule, const std::string& text, std::string& out,
                         RedactionHits& hits) const {
  const int ngroups = std::max(rule.group, rule.name_group) + 1;
  std::array<re2::StringPiece, kMaxGroups> m;
  const std::string mask = fmt::format("{}{}]", kMaskPrefix, names_[rule.id]);
  std::size_t pos = 0;
  std::size_t copied = 0;
  bool masked = false;
  std::vector<std::pair<std::size_t, std::size_t>> masks;
  bool masks_found = false;
  while (pos <= text.size() &&
         rule.re->Match(text, pos, text.size(), RE2::UNANCHORED, m.data(), ngroups)) {
    const std::size_t match_end = static_cast<std::size_t>(m[0].data() - text.data()) + m[0].size();
    pos = match_end > pos ? match_end : pos + 1;
    const re2::StringPiece target = m[rule.group];
    if (target.data() == nullptr || target.empty()) continue;
    if (rule.name_group != 0 &&
        !IsSecretName(std::string_view(m[rule.name_group].data(), m[rule.name_group].size()))) {
      continue;
    }
    std::size_t b = static_cast<std::size_t>(target.data() - text.data());
    std::size_t e = b + target.size();
    // A quoted value keeps its quotes: "api_key": "[REDACTED:...]".
    if (e - b >= 2 && (text[b] == '"' || text[b] == '\'') && text[e - 1] == text[b]) {
      ++b;
      --e;
    }
    if (!masks_found) {
      masks = MaskSpans(text);
      masks_found = true;
    }
    KeepMasksWhole(masks, b, e);
    if (e <= b || IsMask(std::string_view(text).substr(b, e - b))) continue;
    out.append(text, copied, b - copied);
    out.append(mask);
    copied = e;
    masked = true;
    hits.Add(rule.id);
    if (counters_[rule.id]) counters_[rule.id]->Add();
  }
  if (!masked) return false;
  out.append(text, copied);
  return true;
}

bool Redactor::RedactText(std::string_view in, std::string& out, RedactionHits& hits) const {
  if (rules_.empty()) return false;
  RE2::Set::ErrorInfo first;
  if (!any_->Match(in, nullptr, &first) && first.kind == RE2::Set::kNoError) return false;
  std::string cur(in);
  std::string next;
  bool changed = false;
  std::vector<int> matched;
  for (int round = 0; round < kMaxRounds; ++round) {
    matched.clear();
    RE2::Set::ErrorInfo info;
    if (!any_->Match(cur, &matched, &info)) {
      if (info.kind == RE2::Set::kNoError) break;
      // The set's DFA ran out of memory on this text: try every rule.
      matched.resize(rules_.size());
      for (std::size_t i = 0; i < rules_.size(); ++i) matched[i] = static_cast<int>(i);
    }
    std::sort(matched.begin(), matched.end());
    bool round_changed = false;
    for (int i : matched) {
      next.clear();
      if (ApplyRule(rules_[static_cast<std::size_t>(i)], cur, next, hits)) {
        cur.swap(next);
        round_changed = true;
      }
    }
    if (!round_changed) break;
    changed = true;
  }
  if (!changed) return false;
  out = std::move(cur);
  return true;
}

bool Redactor::MayMatchAny(std::string_view joined) const {
  if (rules_.empty()) return false;
  if (!any_joined_) return true;
  RE2::Set::ErrorInfo info;
  if (any_joined_->Match(joined, nullptr, &info)) return true;
  return info.kind != RE2::Set::kNoError;  // out of memory: cannot tell
}

bool Redactor::IsSecretField(std::string_view name) const {
  if (IsSecretName(name)) return true;
  if (field_names_.empty()) return false;
  const auto lower = Lowercase(name);
  return std::find(field_names_.begin(), field_names_.end(), lower) != field_names_.end();
}

void Redactor::CountFieldMask() const {
  if (counters_[secret_field_id_]) counters_[secret_field_id_]->Add();
}

std::vector<Redactor::RuleInfo> Redactor::Describe() const {
  std::vector<RuleInfo> out;
  for (const auto& r : rules_) {
    out.push_back(RuleInfo{r.spec.name, r.spec.pattern, r.spec.group, r.spec.builtin});
  }
  out.push_back(RuleInfo{kSecretFieldRule, "", "", true});
  return out;
}

}  // namespace dashcam::ingest
