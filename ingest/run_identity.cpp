#include "ingest/run_identity.h"

#include <array>
#include <bit>
#include <charconv>
#include <cstdint>
#include <cstring>

#include <re2/re2.h>

namespace dashcam::ingest {
namespace {

using storage::Field;

// Explicit run-id fields, most specific first.
constexpr auto kIdFields = std::to_array<std::string_view>({
    "run.id",
    "run_id",
    "mlflow.run_id",
    "mlflow_run_id",
    "wandb.run_id",
    "wandb_run_id",
    "TORCHELASTIC_RUN_ID",
    "SLURM_JOB_ID",
    "slurm_job_id",
});

constexpr auto kRankFields = std::to_array<std::string_view>({"run.rank", "rank", "RANK"});

// Only the start of a message is looked at for ranks, ids and end lines.
constexpr std::size_t kScanBytes = 4096;

RE2::Options QuietOptions() {
  RE2::Options o;
  o.set_log_errors(false);
  return o;
}

const RE2& EnvIdPattern() {
  static const RE2 re(R"(\b(?:TORCHELASTIC_RUN_ID|SLURM_JOB_ID)\s*[=:]\s*["']?([\w.:@-]+))",
                      QuietOptions());
  return re;
}

const RE2& RankPattern() {
  static const RE2 re(R"(\[(?:PG [0-9]+(?: \([^)]*\))? )?[Rr](?:ank|ANK) ?([0-9]{1,6})\]|)"
                      R"(\b(?:rank|RANK|Rank)\s?[=:]\s?([0-9]{1,6})\b)",
                      QuietOptions());
  return re;
}

// End-of-training lines: each alternative is unambiguous on its own.
const RE2& EndPattern() {
  static const RE2 re(
      R"((?i:training (?:completed|complete|finished))\b|)"
      R"(`Trainer\.fit` stopped: `max_(?:epochs|steps|time)=[^`]*` reached|)"
      R"(worker group (?:successfully finished|finished \(WorkerState\.SUCCEEDED\)|SUCCEEDED)|)"
      R"(finished with exit code 0\b)",
      QuietOptions());
  return re;
}

// Literals that gate the regexes above: an end line holds one of the first
// five, an id line "_ID", a rank line "ank"/"ANK". Looked for in one pass.
constexpr auto kGates = std::to_array<std::string_view>(
    {"omplete", "inish", "INISH", "SUCCEEDED", "reached", "_ID", "ank", "ANK"});
constexpr std::uint32_t kEndGates = 0x1F;
constexpr std::uint32_t kIdGate = 0x20;
constexpr std::uint32_t kRankGates = 0xC0;

// For each byte, the gates that start with it.
struct GateStarts {
  std::uint32_t mask[256] = {};
  constexpr GateStarts() {
    for (std::size_t g = 0; g < kGates.size(); ++g) {
      mask[static_cast<unsigned char>(kGates[g].front())] |= std::uint32_t{1} << g;
    }
  }
};
constexpr GateStarts kGateStarts;

// Which gates `text` holds. One pass with a table lookup per byte: a memmem
// per literal read the text eight times and was most of this file's cost.
std::uint32_t FindGates(std::string_view text) {
  std::uint32_t found = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    std::uint32_t starts = kGateStarts.mask[static_cast<unsigned char>(text[i])] & ~found;
    while (starts != 0) {
      const int g = std::countr_zero(starts);
      starts &= starts - 1;
      if (text.substr(i).starts_with(kGates[static_cast<std::size_t>(g)])) {
        found |= std::uint32_t{1} << g;
      }
    }
  }
  return found;
}

bool ParseRank(std::string_view s, double& out) {
  std::int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || v < 0 || v > 10'000'000) return false;
  out = static_cast<double>(v);
  return true;
}

// The text of a field usable as an id: a string or a number, not too long.
bool IdText(const Field& f, std::string_view& out) {
  if (f.type == Field::Type::kBool || f.text.empty() || f.text.size() > kMaxRunIdBytes) {
    return false;
  }
  out = f.text;
  return true;
}

struct Seen {
  std::array<const Field*, kIdFields.size()> ids{};
  const Field* container_id = nullptr;
  const Field* container_name = nullptr;
  const Field* host = nullptr;
  const Field* path = nullptr;
  const Field* rank = nullptr;
  std::size_t rank_order = kRankFields.size();
  const Field* end = nullptr;
};

void Note(const Field& f, Seen& seen, RunIdentity& out) {
  const std::string_view name = f.name;
  if (name == "run" || name.starts_with("run.")) out.any_run_field = true;
  for (std::size_t i = 0; i < kIdFields.size(); ++i) {
    if (name == kIdFields[i] && !seen.ids[i]) seen.ids[i] = &f;
  }
  for (std::size_t i = 0; i < kRankFields.size(); ++i) {
    if (name == kRankFields[i] && i < seen.rank_order) seen.rank = &f, seen.rank_order = i;
  }
  if (name == "container.id" && !seen.container_id) seen.container_id = &f;
  if (name == "container.name" && !seen.container_name) seen.container_name = &f;
  if (name == "host.name" && !seen.host) seen.host = &f;
  if (name == "log.file.path" && !seen.path) seen.path = &f;
  if (name == "run.end" && !seen.end) seen.end = &f;
}

std::string DeriveId(std::string_view text, std::uint32_t gates, const Seen& seen) {
  std::string_view id;
  for (const Field* f : seen.ids) {
    if (f && IdText(*f, id)) return std::string(id);
  }
  if ((gates & kIdGate) != 0) {
    re2::StringPiece cap;
    if (RE2::PartialMatch(text, EnvIdPattern(), &cap) && cap.size() <= kMaxRunIdBytes) {
      return std::string(cap.data(), cap.size());
    }
  }
  if (seen.container_id && IdText(*seen.container_id, id)) return std::string(id);
  if (seen.container_name && IdText(*seen.container_name, id)) return std::string(id);
  if (seen.host && seen.path && seen.host->type == Field::Type::kString &&
      seen.path->type == Field::Type::kString && !seen.host->text.empty() &&
      !seen.path->text.empty() &&
      seen.host->text.size() + seen.path->text.size() < kMaxRunIdBytes) {
    return seen.host->text + ":" + seen.path->text;
  }
  return {};
}

}  // namespace

bool IsRunEndLine(std::string_view message) {
  message = message.substr(0, kScanBytes);
  return (FindGates(message) & kEndGates) != 0 && RE2::PartialMatch(message, EndPattern());
}

RunIdentity DeriveRunIdentity(std::string_view message, const std::vector<Field>& fields) {
  RunIdentity out;
  Seen seen;
  for (const auto& f : fields) Note(f, seen, out);
  const std::string_view text = message.substr(0, kScanBytes);
  const std::uint32_t gates = FindGates(text);
  out.id = DeriveId(text, gates, seen);
  // Sent only when the client's own string `run.id` is the id: one that was
  // refused (empty, too long) or is not a string leaves the derived id to be
  // added as the string field the runs API matches.
  out.id_sent = seen.ids[0] != nullptr && seen.ids[0]->type == Field::Type::kString &&
                !out.id.empty() && seen.ids[0]->text == out.id;

  if (seen.rank) {
    out.rank_sent = seen.rank_order == 0;
    double r = 0;
    if (seen.rank->type != Field::Type::kBool && ParseRank(seen.rank->text, r)) {
      out.rank = r;
    }
  }
  if (!out.rank && (gates & kRankGates) != 0) {
    re2::StringPiece bracket, assigned;
    double r = 0;
    if (RE2::PartialMatch(text, RankPattern(), &bracket, &assigned)) {
      const re2::StringPiece& cap = bracket.data() ? bracket : assigned;
      if (ParseRank(std::string_view(cap.data(), cap.size()), r)) out.rank = r;
    }
  }

  if (seen.end) {
    out.end_sent = true;
    out.finished = seen.end->type == Field::Type::kString && seen.end->text == "finished";
  } else {
    out.finished = (gates & kEndGates) != 0 && RE2::PartialMatch(text, EndPattern());
  }
  return out;
}

}  // namespace dashcam::ingest
