#include "storage/clickhouse/ch_tail_feed.h"

#include <algorithm>
#include <charconv>
#include <functional>

#include <fmt/format.h>
#include <boost/json.hpp>

#include "storage/clickhouse/ch_query_compiler.h"
#include "storage/clickhouse/ch_row.h"
#include "storage/clickhouse/ch_rows.h"
#include "storage/time_format.h"

namespace dashcam::storage::clickhouse {
namespace {

namespace json = boost::json;

// How far back in event time a poll looks: it bounds the partitions read.
constexpr TimeMs kEventWindowMs = 3'600'000;

// 64 bits on this platform: collisions within one overlap window are
// negligible and would only hide an event from a tail, never from a search.
std::uint64_t IdHash(std::string_view id) {
  return std::hash<std::string_view>{}(id);
}

}  // namespace

ChTailFeed::ChTailFeed(std::string table, TimeMs start_ms, TimeMs overlap_ms)
    : table_(std::move(table)), overlap_ms_(overlap_ms), high_water_ms_(start_ms) {}

void ChTailFeed::NoteOwn(const std::vector<std::string>& ids, TimeMs ins_ms) {
  std::lock_guard lock(mu_);
  for (const std::string& id : ids) {
    if (!id.empty()) seen_[IdHash(id)] = ins_ms;
  }
}

void ChTailFeed::PruneLocked() {
  const TimeMs keep_from = high_water_ms_ - 2 * overlap_ms_;
  std::erase_if(seen_, [&](const auto& entry) { return entry.second < keep_from; });
}

Result<std::map<std::int64_t, std::vector<EventKey>>> ChTailFeed::Poll(const QueryFn& query,
                                                                       TimeMs now_ms) {
  TimeMs since = 0;
  {
    std::lock_guard lock(mu_);
    since = high_water_ms_ - overlap_ms_;
  }
  const TimeMs from_s = std::max<TimeMs>(now_ms - kEventWindowMs, 0) / 1000;
  auto body = query(fmt::format(
      "SELECT {} AS key, id, ins FROM {} WHERE ts >= toDateTime({}) AND ins > {} FORMAT "
      "JSONEachRow",
      kChEventKey, table_, from_s, since));
  if (!body.ok()) return body.status();
  std::map<std::int64_t, std::vector<EventKey>> out;
  std::lock_guard lock(mu_);
  Status s = ForEachJsonRow(*body, [&](const json::object& row) {
    const json::value* key = row.if_contains("key");
    const json::value* id = row.if_contains("id");
    const json::value* ins = row.if_contains("ins");
    if (!key || !id || !ins || !key->is_int64() || !id->is_string() ||
        !(ins->is_uint64() || ins->is_int64())) {
      return Status::Internal("ClickHouse: unreadable tail row");
    }
    const TimeMs ins_ms =
        ins->is_uint64() ? static_cast<TimeMs>(ins->get_uint64()) : ins->get_int64();
    high_water_ms_ = std::max(high_water_ms_, std::min(ins_ms, now_ms));
    if (seen_.emplace(IdHash(id->get_string()), ins_ms).second) {
      const EventKey k = key->get_int64();
      out[DayOf(k >> 20)].push_back(k);
    }
    return Status::Ok();
  });
  if (!s.ok()) return s;
  PruneLocked();
  for (auto& [day, keys] : out) std::sort(keys.begin(), keys.end());
  return out;
}

}  // namespace dashcam::storage::clickhouse
