#include "storage/row_predicate.h"

#include <charconv>
#include <optional>
#include <string_view>

#include "storage/sqlite_db.h"

namespace dashcam::storage {
namespace {

std::optional<double> Number(std::string_view text) {
  double d = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), d);
  if (text.empty() || ec != std::errc() || p != text.data() + text.size()) return std::nullopt;
  return d;
}

bool Below(const query::Range& r, double v, double lo, double hi) {
  const bool above_lo = r.lower.empty() || (r.include_lower ? v >= lo : v > lo);
  const bool below_hi = r.upper.empty() || (r.include_upper ? v <= hi : v < hi);
  return above_lo && below_hi;
}

bool InStringRange(const query::Range& r, std::string_view v) {
  const bool above_lo = r.lower.empty() || (r.include_lower ? v >= r.lower : v > r.lower);
  const bool below_hi = r.upper.empty() || (r.include_upper ? v <= r.upper : v < r.upper);
  return above_lo && below_hi;
}

bool RangeMatches(const query::Range& r, const DocumentView& doc) {
  const auto lo = Number(r.lower), hi = Number(r.upper);
  const bool numeric = (r.lower.empty() || lo) && (r.upper.empty() || hi);
  for (const Field& f : doc.fields) {
    if (f.name != r.field) continue;
    if (numeric) {
      const std::optional<double> v =
          f.type == Field::Type::kNumber ? std::optional<double>(f.number) : Number(f.text);
      if (v && Below(r, *v, lo.value_or(0), hi.value_or(0))) return true;
    } else if (f.type == Field::Type::kString && InStringRange(r, f.text)) {
      return true;
    }
  }
  return false;
}

bool Exists(const std::string& field, const DocumentView& doc) {
  if (query::IsMessageField(field)) return doc.message.has_value();
  if (field == query::kTimestampField) return true;
  for (const Field& f : doc.fields) {
    if (f.name == field) return true;
    if (f.name.size() > field.size() && f.name.starts_with(field) && f.name[field.size()] == '.') {
      return true;
    }
  }
  return false;
}

struct FunctionState {
  DocumentReader reader;
  DocumentView view;
};

void DcMatch(sqlite3_context* ctx, int, sqlite3_value** argv) {
  auto* state = static_cast<FunctionState*>(sqlite3_user_data(ctx));
  const auto* node =
      static_cast<const query::Node*>(sqlite3_value_pointer(argv[1], kNodePointerType));
  if (node == nullptr) {
    sqlite3_result_error(ctx, "dc_match: no query node bound", -1);
    return;
  }
  const auto* bytes = static_cast<const char*>(sqlite3_value_blob(argv[0]));
  const auto size = static_cast<std::size_t>(sqlite3_value_bytes(argv[0]));
  if (bytes == nullptr || !state->reader.ReadUnpadded({bytes, size}, state->view).ok()) {
    sqlite3_result_int(ctx, 0);
    return;
  }
  sqlite3_result_int(ctx, EvaluateRowPredicate(*node, state->view) ? 1 : 0);
}

}  // namespace

bool EvaluateRowPredicate(const query::Node& node, const DocumentView& doc) {
  if (node.kind == query::NodeKind::kExists) return Exists(node.term.field, doc);
  if (node.kind == query::NodeKind::kRange) return RangeMatches(node.range, doc);
  return false;
}

Status RegisterRowPredicate(sqlite3* db) {
  auto* state = new FunctionState();
  const int rc = sqlite3_create_function_v2(db, "dc_match", 2, SQLITE_UTF8 | SQLITE_DETERMINISTIC,
                                            state, &DcMatch, nullptr, nullptr,
                                            [](void* p) { delete static_cast<FunctionState*>(p); });
  return SqliteStatus(rc, db, "register dc_match");
}

}  // namespace dashcam::storage
