#include "ingest/document_parser.h"

#include <algorithm>
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
  return name.starts_with(kInsight) &&
         (name.size() == kInsight.size() || name[kInsight.size()] == '.');
}

// Whether the document may have a top-level `insight` member: its name in
// plain text, or any \u00XX escape that could spell it.
bool MayNameInsight(std::string_view json) {
  return json.find(kInsight) != std::string_view::npos ||
         json.find("\\u00") != std::string_view::npos;
}

// `source` (a JSON object) with `member` ("\"insight\":{...}") added last.
void AppendMember(std::string& source, std::string_view member) {
  const auto close = source.rfind('}');
  if (close == std::string::npos) return;  // not an object: the reader refused it already
  const auto before = source.find_last_not_of(" \t\r\n", close - 1);
  const bool empty = before == std::string::npos || source[before] == '{';
  std::string tail;
  if (!empty) tail.push_back(',');
  tail.append(member);
  source.insert(close, tail);
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

}  // namespace

DocumentParser::DocumentParser(DocumentLimits limits, const Redactor* redactor,
                               const InsightDetectors* detectors, TrainingAnomalies* anomalies)
    : reader_(limits), redactor_(redactor), detectors_(detectors), anomalies_(anomalies) {
  if (redactor_) doc_redactor_ = std::make_unique<DocumentRedactor>(*redactor_, limits.max_depth);
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
  const bool anomaly = AddTraining(json, capacity, detected, rec);
  if (!detected && !anomaly) return;
  rec.fields.push_back({"insight.kind", storage::Field::Type::kString, std::string(insight_.kind)});
  rec.fields.push_back(
      {"insight.severity", storage::Field::Type::kString, std::string(insight_.severity)});
  for (const auto& f : insight_.facts) {
    rec.fields.push_back({"insight." + f.name, f.type, f.text, f.number});
  }
  AppendMember(rec.source, InsightJson(insight_));
}

bool DocumentParser::AddTraining(std::string_view json, std::size_t capacity, bool has_kind,
                                 storage::Record& rec) {
  metrics_.Clear();
  TakeStructuredMetrics(rec.fields, metrics_);
  ExtractTrainMetrics(rec.message, metrics_);
  const RunIdentity run = DeriveRunIdentity(rec.message, rec.fields);
  // Decided before fields are added: whether the client has its own `train` / `run`.
  const bool own_train = metrics_.present != 0 && HasOwnMember(json, capacity, "train", rec.fields);
  const bool own_run = run.any_run_field || HasOwnMember(json, capacity, "run", rec.fields);
  std::string train_json;  // the members of a `train` object for the source
  for (std::size_t i = 0; i < kTrainMetricCount; ++i) {
    const auto m = static_cast<TrainMetric>(i);
    if (!metrics_.Has(m) || metrics_.Sent(m)) continue;
    const double v = metrics_.Get(m);
    const std::string_view name = TrainMetricName(m);
    std::string text = storage::CanonicalDouble(v);
    if (!train_json.empty()) train_json.push_back(',');
    AppendJsonString(train_json, name);
    train_json.push_back(':');
    train_json += text;
    std::string field = "train.";
    field += name;
    rec.fields.push_back({std::move(field), storage::Field::Type::kNumber, std::move(text), v});
  }
  if (!train_json.empty() && !own_train) {
    train_json.insert(0, "\"train\":{");
    train_json.push_back('}');
    AppendMember(rec.source, train_json);
  }
  std::string run_json;  // the members of a `run` object for the source
  auto member = [&run_json](std::string_view name) {
    if (!run_json.empty()) run_json.push_back(',');
    AppendJsonString(run_json, name);
    run_json.push_back(':');
  };
  if (!run.id.empty()) {
    rec.group = run.id;
    rec.group_end = run.finished;
    if (!run.id_sent) {
      rec.fields.push_back({"run.id", storage::Field::Type::kString, run.id});
      member("id");
      AppendJsonString(run_json, run.id);
    }
  }
  if (run.rank && !run.rank_sent) {
    const std::string text = storage::CanonicalDouble(*run.rank);
    rec.fields.push_back({"run.rank", storage::Field::Type::kNumber, text, *run.rank});
    member("rank");
    run_json += text;
  }
  if (run.finished && !run.end_sent) {
    rec.fields.push_back({"run.end", storage::Field::Type::kString, "finished"});
    member("end");
    AppendJsonString(run_json, "finished");
  }
  if (!run_json.empty() && !own_run) {
    run_json.insert(0, "\"run\":{");
    run_json.push_back('}');
    AppendMember(rec.source, run_json);
  }
  // Observed even when a pattern found a kind, so that the run's history is whole.
  if (!anomalies_ || !anomalies_->Observe(run.id, metrics_, anomaly_) || has_kind) return false;
  std::swap(insight_, anomaly_);
  return true;
}

// A field under `name`, or the member itself (null, {} and [] give no
// field; its name may be escaped). The text search only rules it out
// cheaply: a value "train" or a \u00XX escape anywhere (colored log lines
// carry \u001b) must not stop the derived values reaching the source, where
// range queries and the runs API read them. When the document cannot be
// walked, the client's is assumed.
bool DocumentParser::HasOwnMember(std::string_view json, std::size_t capacity,
                                  std::string_view name,
                                  const std::vector<storage::Field>& fields) {
  for (const auto& f : fields) {
    if (f.name.starts_with(name) && (f.name.size() == name.size() || f.name[name.size()] == '.')) {
      return true;
    }
  }
  std::string quoted = "\"";
  quoted.append(name);
  quoted.push_back('"');
  if (json.find(quoted) == std::string_view::npos && json.find("\\u00") == std::string_view::npos) {
    return false;
  }
  namespace od = simdjson::ondemand;
  od::document doc;
  od::object obj;
  if (top_.iterate(json.data(), json.size(), capacity).get(doc) || doc.get_object().get(obj)) {
    return true;
  }
  for (auto field : obj) {
    std::string_view key;
    if (field.unescaped_key().get(key)) return true;
    if (key == name) return true;
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
  if (erased == 0 && !MayNameInsight(json)) return;
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
