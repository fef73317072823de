#include "ingest/bulk_decoder.h"

#include "ingest/ndjson_lines.h"

#include <optional>

#include <fmt/format.h>

namespace dashcam::ingest {
namespace {

namespace od = simdjson::ondemand;

Status ActionError(std::size_t line, std::string_view why) {
  return Status::InvalidArgument(fmt::format("malformed action/metadata line [{}]: {}", line, why));
}

// Parses `{"<op>":{"_index":..,"_id":..}}`.
Status ParseAction(const NdjsonLine& line, std::size_t capacity, od::parser& parser,
                   BulkItem& item) {
  od::document doc;
  od::object outer, meta;
  if (parser.iterate(line.text.data(), line.text.size(), capacity).get(doc) ||
      doc.get_object().get(outer)) {
    return ActionError(line.number, "expected a JSON object");
  }
  std::size_t keys = 0;
  for (auto field : outer) {
    std::string_view op;
    if (++keys > 1) return ActionError(line.number, "expected exactly one action");
    if (field.unescaped_key().get(op) || field.value().get_object().get(meta)) {
      return ActionError(line.number, "expected {\"<action>\":{...}}");
    }
    item.op = std::string(op);
    for (auto m : meta) {
      std::string_view key, value;
      if (m.unescaped_key().get(key)) return ActionError(line.number, "bad metadata key");
      if (key != "_index" && key != "_id") continue;  // routing, pipeline, ...: ignored
      if (m.value().get_string().get(value)) {
        return ActionError(line.number, fmt::format("[{}] must be a string", key));
      }
      if (key == "_id" && value.empty()) {
        return ActionError(line.number, "[_id] must not be an empty string");
      }
      (key == "_index" ? item.index : item.id) = std::string(value);
    }
  }
  if (keys == 0) return ActionError(line.number, "expected an action");
  // A source pasted onto the action line would otherwise be silently dropped.
  if (!doc.current_location().error()) {
    return ActionError(line.number, "unexpected content after the action");
  }
  if (item.op != "create" && item.op != "index" && item.op != "delete" && item.op != "update") {
    return ActionError(line.number, fmt::format("unknown action [{}]", item.op.substr(0, 32)));
  }
  return Status::Ok();
}

void Fail(BulkItem& item, int status, std::string type, std::string reason) {
  item.status = status;
  item.error_type = std::move(type);
  item.error_reason = std::move(reason);
}

// The first pass: every action line parsed, with its item's source line.
// A malformed action line fails the whole body before any source is read,
// so no part of a body that is refused was handed out.
Status ReadActions(std::string_view padded_body, std::size_t body_size,
                   std::string_view default_index, DecodedBulk& out,
                   std::vector<std::optional<NdjsonLine>>& sources) {
  NdjsonLines lines(padded_body.substr(0, body_size));
  od::parser action_parser;
  NdjsonLine line;
  while (lines.Next(line)) {
    BulkItem item;
    const std::size_t capacity = padded_body.size() - line.offset;
    if (auto s = ParseAction(line, capacity, action_parser, item); !s.ok()) return s;
    if (item.index.empty()) item.index = std::string(default_index);
    std::optional<NdjsonLine> source;
    if (item.op == "delete") {
      Fail(item, 400, "illegal_argument_exception",
           "dashcam does not support delete actions: events are immutable");
    } else if (NdjsonLine text; lines.Next(text)) {
      source = text;
    } else {
      Fail(item, 400, "action_request_validation_exception",
           fmt::format("action on line {} has no source line", line.number));
      out.items.push_back(std::move(item));
      sources.push_back(std::nullopt);
      break;
    }
    out.items.push_back(std::move(item));
    sources.push_back(source);
  }
  return Status::Ok();
}

}  // namespace

Result<DecodedBulk> DecodeBulk(std::string_view padded_body, std::size_t body_size,
                               std::string_view default_index, TimeMs arrival,
                               const BulkLimits& limits, DocumentParser& parser,
                               const BulkParts* parts) {
  DecodedBulk out;
  std::vector<std::optional<NdjsonLine>> sources;
  if (auto s = ReadActions(padded_body, body_size, default_index, out, sources); !s.ok()) return s;
  std::size_t handed_out = 0;  // records given to parts->emit so far
  for (std::size_t k = 0; k < out.items.size(); ++k) {
    BulkItem& item = out.items[k];
    if (!sources[k] || item.status != 0) continue;
    const NdjsonLine& source = *sources[k];
    if (item.op == "update") {
      Fail(item, 400, "illegal_argument_exception",
           "dashcam does not support update actions: events are immutable");
    } else if (source.text.size() > limits.max_event_bytes) {
      Fail(item, 400, "document_too_large_exception",
           fmt::format("document on line {} is {} bytes, over the limit of {}", source.number,
                       source.text.size(), limits.max_event_bytes));
    } else {
      const std::size_t cap = padded_body.size() - source.offset;
      auto rec = parser.Parse(source.text, cap, arrival);
      if (!rec.ok()) {
        Fail(item, 400, "document_parsing_exception",
             fmt::format("line {}: {}", source.number, rec.status().message()));
      } else {
        rec->index = item.index;
        rec->doc_id = item.id;
        rec->op = item.op == "index" ? storage::WriteOp::kIndex : storage::WriteOp::kCreate;
        item.record = handed_out + out.records.size();
        out.records.push_back(std::move(*rec));
      }
    }
    if (parts != nullptr && out.records.size() >= parts->records) {
      handed_out += out.records.size();
      parts->emit(std::move(out.records));
      out.records.clear();
    }
  }
  return out;
}

}  // namespace dashcam::ingest
