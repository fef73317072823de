#include "storage/retention.h"

#include <algorithm>

namespace dashcam::storage {
namespace {

// A size-triggered check follows a commit after at most this long.
constexpr std::chrono::milliseconds kMaxPokeGap{1000};

std::vector<PartitionInfo> Ascending(std::span<const PartitionInfo> parts) {
  std::vector<PartitionInfo> out(parts.begin(), parts.end());
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.day < b.day; });
  return out;
}

}  // namespace

std::vector<PlannedDrop> PlanDrops(const RetentionPolicy& policy,
                                   std::span<const PartitionInfo> parts, TimeMs now) {
  std::vector<PlannedDrop> out;
  const std::int64_t today = DayOf(now);
  std::uint64_t total = 0;
  for (const PartitionInfo& p : parts) total += p.bytes;
  for (const PartitionInfo& p : Ascending(parts)) {
    if (p.day >= today) break;  // never today's, nor future days
    if (policy.max_age_days > 0 && p.day + policy.max_age_days + 1 <= today) {
      out.push_back({p.day, "age", DayStart(p.day + policy.max_age_days + 1)});
    } else if (policy.max_disk_bytes > 0 && total > policy.max_disk_bytes) {
      out.push_back({p.day, "disk_bytes", now});
    } else {
      continue;
    }
    total -= p.bytes;
  }
  return out;
}

std::optional<PlannedDrop> NextDrop(const RetentionPolicy& policy,
                                    std::span<const PartitionInfo> parts, TimeMs now) {
  if (!policy.enabled()) return std::nullopt;
  auto due = PlanDrops(policy, parts, now);
  if (!due.empty()) return due.front();
  const std::int64_t today = DayOf(now);
  for (const PartitionInfo& p : Ascending(parts)) {
    if (p.day > today) break;
    if (policy.max_age_days > 0) {
      return PlannedDrop{p.day, "age", DayStart(p.day + policy.max_age_days + 1)};
    }
    return PlannedDrop{p.day, "disk_bytes", 0};  // once over the limit
  }
  return std::nullopt;
}

RetentionEnforcer::RetentionEnforcer(RetentionPolicy policy, ListFn list, DropFn drop, ClockFn now,
                                     const Log& log, Metrics* metrics)
    : policy_(policy),
      list_(std::move(list)),
      drop_(std::move(drop)),
      now_(std::move(now)),
      log_(log) {
  status_.policy = policy_;
  if (metrics != nullptr) {
    dropped_partitions_ = &metrics->GetCounter("dashcam_retention_dropped_partitions_total",
                                               "Day partitions dropped by retention.");
    dropped_bytes_ = &metrics->GetCounter("dashcam_retention_dropped_bytes_total",
                                          "Bytes of the partitions dropped by retention.");
  }
}

RetentionEnforcer::~RetentionEnforcer() {
  Stop();
}

void RetentionEnforcer::Start() {
  if (!policy_.enabled()) return;
  CheckNow();
  thread_ = std::thread([this] { Run(); });
}

void RetentionEnforcer::Stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    cv_.notify_one();
  }
  if (thread_.joinable()) thread_.join();
}

void RetentionEnforcer::Poke() {
  if (policy_.max_disk_bytes == 0) return;
  std::lock_guard lock(mu_);
  poked_ = true;
  cv_.notify_one();
}

void RetentionEnforcer::Run() {
  using Steady = std::chrono::steady_clock;
  const auto poke_gap = std::min(kMaxPokeGap, policy_.check_period);
  auto next = Steady::now() + policy_.check_period;
  auto earliest_poke = Steady::now();
  std::unique_lock lock(mu_);
  while (!stopping_) {
    cv_.wait_until(lock, poked_ ? std::min(next, earliest_poke) : next);
    if (stopping_) break;
    const auto t = Steady::now();
    const bool periodic = t >= next;
    const bool poke = poked_ && t >= earliest_poke;
    if (!periodic && !poke) continue;
    poked_ = false;
    if (periodic) next = t + policy_.check_period;
    earliest_poke = t + poke_gap;
    lock.unlock();
    CheckNow();
    lock.lock();
  }
}

std::size_t RetentionEnforcer::CheckNow() {
  std::lock_guard check(check_mu_);
  const TimeMs now = now_();
  std::size_t dropped = 0;
  for (const PlannedDrop& plan : PlanDrops(policy_, list_(), now)) {
    auto r = drop_(plan.day);
    if (!r.ok()) {
      log_.Error("retention_drop_failed", {{"partition", FormatDay(plan.day)},
                                           {"reason", plan.reason},
                                           {"error", r.status().ToString()}});
      std::lock_guard lock(mu_);
      status_.last_error = r.status().ToString();
      continue;
    }
    r->reason = plan.reason;
    r->at_ms = now;
    log_.Info("retention_drop", {{"partition", FormatDay(r->day)},
                                 {"events", r->events},
                                 {"bytes", r->bytes},
                                 {"reason", r->reason},
                                 {"max_age_days", policy_.max_age_days},
                                 {"max_disk_bytes", policy_.max_disk_bytes}});
    if (dropped_partitions_) dropped_partitions_->Add();
    if (dropped_bytes_) dropped_bytes_->Add(r->bytes);
    ++dropped;
    std::lock_guard lock(mu_);
    ++status_.dropped_partitions;
    status_.dropped_bytes += r->bytes;
    status_.last_drop = std::move(*r);
  }
  std::lock_guard lock(mu_);
  status_.last_check_ms = now;
  return dropped;
}

RetentionStatus RetentionEnforcer::Status() const {
  RetentionStatus out;
  {
    std::lock_guard lock(mu_);
    out = status_;
  }
  const TimeMs now = now_();
  const auto parts = list_();
  out.today = DayOf(now);
  out.partitions = parts.size();
  out.disk_bytes = 0;
  for (const PartitionInfo& p : parts) out.disk_bytes += p.bytes;
  out.next_drop = NextDrop(policy_, parts, now);
  return out;
}

}  // namespace dashcam::storage
