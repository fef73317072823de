#include "ingest/document_parser.h"

#include <algorithm>
#include <cstdint>
#include <string>

#include "storage/attrs_codec.h"
#include "storage/json_text.h"

namespace dashcam::ingest {
namespace {

std::string_view Trim(std::string_view s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return {};
  const auto e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

constexpr std::string_view kInsight = "insight";

bool IsInsightName(std::string_view name) {
  return storage::IsAtOrUnder(name, kInsight);
}

// The top-level members the parser asks DocumentReader to watch, as bits of
// DocumentView::watched_members (in the order the constructor names them).
enum WatchedMember : std::uint32_t { kTrainMember = 1, kRunMember = 2, kInsightMember = 4 };

// `source` (a JSON object) with `member` ("\"insight\":{...}") added last.
void AppendMember(std::string& source, std::string_view member) {
  const auto close = source.rfind('}');
  if (close == std::string::npos) return;  // not an object: the reader refused it already
  const auto before = source.find_last_not_of(" \t\r\n", close - 1);
  const bool empty = before == std::string::npos || source[before] == '{';
  source.reserve(source.size() + member.size() + 1);
  source.insert(close, member);
  if (!empty) source.insert(close, 1, ',');
}

std::string InsightJson(const Insight& insight) {
  std::string out = "\"insight\":{\"kind\":";
  AppendJsonString(out, insight.kind);
  out += ",\"severity\":";
  AppendJsonString(out, insight.severity);
  for (const auto& f : insight.facts) {
    out.push_back(',');
    AppendJsonString(out, f.name);
    out.push_back(':');
    if (f.type == storage::Field::Type::kNumber) {
      out += f.text;
    } else {
      AppendJsonString(out, f.text);
    }
  }
  out.push_back('}');
  return out;
}

// `"train":{"loss":0.43,...}`: the metrics found that the client did not
// send as `train.<name>`. Only the source holds them: storage does not
// index `train.*` (attrs_codec.h), and queries on them read this object.
void AppendTrainObject(const TrainMetrics& m, std::string& out) {
  out += "\"train\":{";
  bool first = true;
  for (std::size_t i = 0; i < kTrainMetricCount; ++i) {
    const auto metric = static_cast<TrainMetric>(i);
    if (!m.Has(metric) || m.Sent(metric)) continue;
    if (!first) out.push_back(',');
    first = false;
    out.push_back('"');
    out += TrainMetricName(metric);  // a plain identifier: nothing to escape
    out += "\":";
    out += storage::CanonicalDouble(m.Get(metric));
  }
  out.push_back('}');
}

// `"run":{"id":..,"rank":..,"end":"finished"}` with what was derived and not
// sent; nothing when there is no such member.
void AppendRunObject(const RunIdentity& run, std::string& out) {
  const bool id = !run.id.empty() && !run.id_sent;
  const bool rank = run.rank && !run.rank_sent;
  const bool end = run.finished && !run.end_sent;
  if (!id && !rank && !end) return;
  if (!out.empty()) out.push_back(',');
  out += "\"run\":{";
  const char* separator = "";
  auto member = [&](std::string_view name) {
    out += separator;
    separator = ",";
    AppendJsonString(out, name);
    out.push_back(':');
  };
  if (id) {
    member("id");
    AppendJsonString(out, run.id);
  }
  if (rank) {
    member("rank");
    out += storage::CanonicalDouble(*run.rank);
  }
  if (end) {
    member("end");
    AppendJsonString(out, "finished");
  }
  out.push_back('}');
}

}  // namespace

DocumentParser::DocumentParser(DocumentLimits limits, const Redactor* redactor,
                               const InsightDetectors* detectors, TrainingAnomalies* anomalies)
    : reader_(limits), redactor_(redactor), detectors_(detectors), anomalies_(anomalies) {
  if (redactor_) doc_redactor_ = std::make_unique<DocumentRedactor>(*redactor_, limits.max_depth);
  if (detectors_) reader_.WatchMembers({"train", "run", "insight"});  // the WatchedMember order
}

Result<storage::Record> DocumentParser::Parse(std::string_view json, std::size_t capacity,
                                              TimeMs arrival) {
  if (doc_redactor_) {
    // On a JSON error the document is read as sent, so that the reader
    // names the problem; its message is redacted below.
    auto changed = doc_redactor_->Redact(json, capacity, redacted_, hits_);
    if (changed.ok() && *changed) {
      const std::size_t size = redacted_.size();
      redacted_.append(simdjson::SIMDJSON_PADDING, ' ');
      json = std::string_view(redacted_.data(), size);
      capacity = redacted_.size();
    }
  }
  if (auto s = reader_.Read(json, capacity, view_); !s.ok()) {
    std::string masked;
    RedactionHits ignored;
    if (redactor_ && redactor_->RedactText(s.message(), masked, ignored)) {
      return s.WithMessage(std::move(masked));
    }
    return s;
  }
  storage::Record rec;
  rec.ts_ms = view_.timestamp.value_or(arrival);
  if (rec.ts_ms < kMinEventTime || rec.ts_ms >= kMaxEventTime) {
    return Status::InvalidArgument(
        "failed to parse field [@timestamp]: outside the supported range 1970..2200");
  }
  rec.message = std::move(view_.message).value_or(std::string());
  rec.level = std::move(view_.level).value_or(std::string());
  rec.fields = std::move(view_.fields);
  members_ = view_.watched_members;
  rec.source = std::string(Trim(json));
  if (detectors_) AddInsight(json, capacity, rec);
  return rec;
}

void DocumentParser::AddInsight(std::string_view json, std::size_t capacity, storage::Record& rec) {
  DropClientInsight(json, capacity, rec);
  std::string_view error_message;
  for (const auto& f : rec.fields) {
    if (f.name == "error.message" && f.type == storage::Field::Type::kString) {
      error_message = f.text;
      break;
    }
  }
  const bool detected = detectors_->Detect(rec.message, error_message, insight_);
  const bool anomaly = AddTraining(detected, rec);
  if (!detected && !anomaly) return;
  rec.fields.push_back({"insight.kind", storage::Field::Type::kString, std::string(insight_.kind)});
  rec.fields.push_back(
      {"insight.severity", storage::Field::Type::kString, std::string(insight_.severity)});
  for (const auto& f : insight_.facts) {
    rec.fields.push_back({"insight." + f.name, f.type, f.text, f.number});
  }
  AppendMember(rec.source, InsightJson(insight_));
}

bool DocumentParser::AddTraining(bool has_kind, storage::Record& rec) {
  metrics_.Clear();
  TakeStructuredMetrics(rec.fields, metrics_);
  ExtractTrainMetrics(rec.message, metrics_);
  const RunIdentity run = DeriveRunIdentity(rec.message, rec.fields);
  std::string members;  // `"train":{..},"run":{..}` for the source
  members.reserve(192);
  if ((metrics_.present & ~metrics_.sent) != 0 &&
      !HasOwnMember(kTrainMember, "train", rec.fields)) {
    AppendTrainObject(metrics_, members);
  }
  // Decided before the run fields are added. DeriveRunIdentity has looked
  // for `run`/`run.*` fields already; an empty `run` member has none.
  const bool own_run = run.any_run_field || (members_ & kRunMember) != 0;
  if (!own_run) AppendRunObject(run, members);
  AddRun(run, rec);
  if (!members.empty()) AppendMember(rec.source, members);
  // Observed even when a pattern found a kind, so that the run's history is whole.
  if (!anomalies_ || !anomalies_->Observe(run.id, metrics_, anomaly_) || has_kind) return false;
  std::swap(insight_, anomaly_);
  return true;
}

// The derived run fields the client did not send (they are indexed: the runs
// view finds a run's events by `run.id`), and the record's group.
void DocumentParser::AddRun(const RunIdentity& run, storage::Record& rec) {
  if (!run.id.empty()) {
    rec.group = run.id;
    rec.group_end = run.finished;
    if (!run.id_sent) rec.fields.push_back({"run.id", storage::Field::Type::kString, run.id});
  }
  if (run.rank && !run.rank_sent) {
    rec.fields.push_back({"run.rank", storage::Field::Type::kNumber,
                          storage::CanonicalDouble(*run.rank), *run.rank});
  }
  if (run.finished && !run.end_sent) {
    rec.fields.push_back({"run.end", storage::Field::Type::kString, "finished"});
  }
}

// A field under `name` (a dotted top-level key "train.loss" included), or
// the member itself, whatever its value (null, {} and [] give no field; the
// reader saw its name unescaped).
bool DocumentParser::HasOwnMember(std::uint32_t member, std::string_view name,
                                  const std::vector<storage::Field>& fields) const {
  if ((members_ & member) != 0) return true;
  for (const auto& f : fields) {
    if (storage::IsAtOrUnder(f.name, name)) return true;
  }
  return false;
}

// Rebuilds the source without a client's top-level `insight` members; the
// other members keep their text. The reader accepted the document, so a
// JSON error here is not expected; the source is then left as it is.
void DocumentParser::DropClientInsight(std::string_view json, std::size_t capacity,
                                       storage::Record& rec) {
  const auto erased =
      std::erase_if(rec.fields, [](const storage::Field& f) { return IsInsightName(f.name); });
  if (erased == 0 && (members_ & kInsightMember) == 0) return;
  namespace od = simdjson::ondemand;
  od::document doc;
  od::object obj;
  if (top_.iterate(json.data(), json.size(), capacity).get(doc) || doc.get_object().get(obj)) {
    return;
  }
  std::string out = "{";
  bool dropped = false;
  for (auto field : obj) {
    std::string_view key;
    od::value v;
    if (field.unescaped_key().get(key)) return;
    const bool drop = IsInsightName(key);
    std::string name(key);  // the value's unescaping may reuse the key's buffer
    if (field.value().get(v)) return;
    std::string_view raw;
    od::json_type type;
    if (v.type().get(type)) return;
    if (type == od::json_type::object) {
      od::object o;
      if (v.get_object().get(o) || o.raw_json().get(raw)) return;
    } else if (type == od::json_type::array) {
      od::array a;
      if (v.get_array().get(a) || a.raw_json().get(raw)) return;
    } else {
      raw = Trim(v.raw_json_token());
    }
    if (drop) {
      dropped = true;
      continue;
    }
    if (out.size() > 1) out.push_back(',');
    AppendJsonString(out, name);
    out.push_back(':');
    out += raw;
  }
  out.push_back('}');
  if (dropped) rec.source = std::move(out);
}

ParserPool::Lease::~Lease() {
  std::lock_guard lock(pool_.mu_);
  pool_.idle_.push_back(std::move(p_));
}

ParserPool::Lease ParserPool::Acquire() {
  std::unique_ptr<DocumentParser> p;
  {
    std::lock_guard lock(mu_);
    if (!idle_.empty()) {
      p = std::move(idle_.back());
      idle_.pop_back();
    }
  }
  if (!p) p = std::make_unique<DocumentParser>(limits_, redactor_, detectors_, anomalies_);
  return Lease(*this, std::move(p));
}

std::string PadForParsing(std::string_view data) {
  std::string out;
  out.reserve(data.size() + simdjson::SIMDJSON_PADDING);
  out.append(data);
  out.append(simdjson::SIMDJSON_PADDING, ' ');
  return out;
}

}  // namespace dashcam::ingest
