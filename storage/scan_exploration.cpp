#include "storage/scan_exploration.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "storage/document_reader.h"
#include "storage/field_stats.h"
#include "storage/histogram_accumulator.h"
#include "storage/histogram_row_reader.h"
#include "storage/partition.h"
#include "storage/scope_match.h"
#include "storage/split_key_sampler.h"

namespace dashcam::storage {
namespace {

// A page: enough events that the per-page cost (a round trip, a range
// read) is small beside them, few enough bytes to stay light.
constexpr std::size_t kPageEvents = 2000;
constexpr std::size_t kPageBytes = 8u << 20;

// Calls fn(event) for each event matching `query` in keys [lo, hi], in key
// order (newest first unless `ascending`), until fn returns false. `wanted`:
// how many events the caller expects to need, at least; the first page asks
// for that many (at most kPageEvents), each next one for four times more.
template <class Fn>
Status ForEachMatch(EventStore& store, const query::Node& query, EventKey lo, EventKey hi,
                    bool ascending, Clock::time_point deadline, std::size_t wanted, Fn&& fn) {
  ScanRequest scan;
  scan.query = &query;
  scan.lo = lo;
  scan.hi = hi;
  scan.ascending = ascending;
  scan.limit = std::clamp<std::size_t>(wanted, 1, kPageEvents);
  scan.max_bytes = kPageBytes;
  scan.deadline = deadline;
  while (scan.lo <= scan.hi) {
    auto page = store.Scan(scan);
    if (!page.ok()) return page.status();
    for (const StoredEvent& ev : page->events) {
      if (!fn(ev)) return Status::Ok();
    }
    if (!page->more || page->events.empty()) return Status::Ok();
    scan.limit = std::min(kPageEvents, scan.limit * 4);
    const EventKey last = page->events.back().key;
    if (ascending) {
      if (last == scan.hi) return Status::Ok();
      scan.lo = last + 1;
    } else {
      if (last == scan.lo) return Status::Ok();
      scan.hi = last - 1;
    }
  }
  return Status::Ok();
}

// The request's time range as keys; false when it is empty.
bool KeyBounds(const SearchRequest& req, EventKey& lo, EventKey& hi) {
  const TimeMs from = std::max(req.from, kMinEventTime), to = std::min(req.to, kMaxEventTime);
  if (from >= to) return false;
  lo = FirstKeyAt(from);
  hi = FirstKeyAt(to) - 1;
  return true;
}

}  // namespace

Result<TermsResult> TopValuesByScan(EventStore& store, const SearchRequest& req,
                                    const std::string& field, std::size_t size,
                                    std::size_t max_events) {
  if (req.query == nullptr) return Status::InvalidArgument("no query");
  std::map<std::string, std::uint64_t> counts;
  TermsResult out;
  EventKey lo = 0, hi = 0;
  if (KeyBounds(req, lo, hi) && max_events > 0) {
    DocumentReader reader;
    reader.KeepOnlyFields(std::vector<std::string>{field});  // the message is read anyway
    DocumentView view;
    auto s = ForEachMatch(store, *req.query, lo, hi, false, req.deadline, max_events,
                          [&](const StoredEvent& ev) {
                            ++out.events_read;
                            if (reader.ReadUnpadded(ev.source, view).ok()) {
                              for (const Field& f : view.fields) {
                                if (f.name == field) ++counts[f.text];
                              }
                              if (field == "message" && view.message) ++counts[*view.message];
                            }
                            return out.events_read < max_events;
                          });
    if (!s.ok()) return s;
  }
  out.complete = out.events_read < max_events;
  std::vector<TermsResult::Bucket> all;
  for (auto& [value, n] : counts) all.push_back({value, n});
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) {
    return a.count != b.count ? a.count > b.count : a.value < b.value;
  });
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (i < size)
      out.buckets.push_back(std::move(all[i]));
    else
      out.other_count += all[i].count;
  }
  return out;
}

Result<HistogramTable> HistogramByScan(EventStore& store, const SearchRequest& req,
                                       const HistogramSpec& spec) {
  if (req.query == nullptr || spec.interval <= 0) {
    return Status::InvalidArgument("bad histogram request");
  }
  EventKey lo = 0, hi = 0;
  if (!KeyBounds(req, lo, hi)) return HistogramTable{};
  const TimeMs from = KeyTime(lo), to = KeyTime(hi) + 1;
  if (Status s = HistogramAccumulator::CheckBucketCount(from, to, spec.interval); !s.ok()) {
    return s;
  }
  auto run = [&](std::optional<std::vector<std::string>> keys,
                 bool& overflow) -> Result<HistogramAccumulator> {
    HistogramAccumulator acc(from, to, spec, std::move(keys));
    HistogramRowReader rows(spec);
    auto s = ForEachMatch(store, *req.query, lo, hi, false, req.deadline, kPageEvents,
                          [&](const StoredEvent& ev) {
                            if (!rows.Read(ev.level, ev.index, ev.source)) return true;
                            overflow = !acc.Add(KeyTime(ev.key), rows.values(), rows.numbers());
                            return !overflow;
                          });
    if (!s.ok()) return s;
    return acc;
  };
  bool overflow = false;
  std::optional<std::vector<std::string>> no_keys;
  if (spec.split_field.empty()) no_keys.emplace();  // nothing to discover
  auto acc = run(no_keys, overflow);
  if (!acc.ok()) return acc.status();
  if (!overflow) return acc->Finish(false);
  // Too many distinct values to track: choose the keys from a sample.
  HistogramSpec split_only = spec;
  split_only.value_field.clear();
  HistogramRowReader rows(split_only);
  SplitKeySampler sampler;
  const std::vector<std::string_view> none;
  auto s = ForEachMatch(
      store, *req.query, lo, hi, false, req.deadline, kPageEvents, [&](const StoredEvent& ev) {
        return sampler.Add(rows.Read(ev.level, ev.index, ev.source) ? rows.values() : none);
      });
  if (!s.ok()) return s;
  bool complete = true;
  auto with_keys = run(sampler.Keys(spec.split_size, complete), overflow);
  if (!with_keys.ok()) return with_keys.status();
  return with_keys->Finish(!complete);
}

Result<FieldsSummary> SummarizeFieldsByScan(EventStore& store, const SearchRequest& req,
                                            const FieldsSpec& spec) {
  if (req.query == nullptr) return Status::InvalidArgument("no query");
  FieldStatsCollector collector;
  EventKey lo = 0, hi = 0;
  if (!KeyBounds(req, lo, hi)) return collector.Finish(spec.top, true);
  DocumentReader reader;
  DocumentView view;
  std::size_t read = 0;
  bool complete = true;
  auto s = ForEachMatch(store, *req.query, lo, hi, false, req.deadline, spec.max_events + 1,
                        [&](const StoredEvent& ev) {
                          if (read == spec.max_events) {  // one more exists
                            complete = false;
                            return false;
                          }
                          ++read;
                          if (reader.ReadUnpadded(ev.source, view).ok())
                            collector.Add(view, ev.index);
                          return true;
                        });
  if (!s.ok()) return s;
  return collector.Finish(spec.top, complete);
}

Result<Neighbors> FindNeighborsByScan(EventStore& store, const SearchRequest& req,
                                      const NeighborsSpec& spec) {
  if (req.query == nullptr) return Status::InvalidArgument("no query");
  const TimeMs anchor_time = KeyTime(spec.anchor);
  if (anchor_time < kMinEventTime || anchor_time >= kMaxEventTime) {
    return Status::NotFound("no such event");
  }
  {
    const query::Node all = query::Node::MatchAll();
    ScanRequest probe;
    probe.query = &all;
    probe.lo = probe.hi = spec.anchor;
    probe.limit = 1;
    probe.deadline = req.deadline;
    auto page = store.Scan(probe);
    if (!page.ok()) return page.status();
    if (page->events.empty()) return Status::NotFound("no such event");
  }
  const query::Node scoped = ScopeQuery(*req.query, spec.scope);
  EventKey lo = 0, hi = 0;
  Neighbors out;
  if (!KeyBounds(req, lo, hi)) return out;
  DocumentReader reader;
  DocumentView view;
  // One side, walking away from the anchor.
  auto walk = [&](bool older, std::vector<StoredEvent>& events, bool& more) -> Status {
    const std::size_t want = older ? spec.before : spec.after;
    const EventKey a = older ? lo : std::max(lo, spec.anchor + 1);
    const EventKey b = older ? std::min(hi, spec.anchor - 1) : hi;
    if (a > b) return Status::Ok();
    std::size_t examined = 0;
    return ForEachMatch(
        store, scoped, a, b, !older, req.deadline, want + 1, [&](const StoredEvent& ev) {
          if (examined == spec.max_examined) {  // there may be more; we stop looking
            more = true;
            return false;
          }
          ++examined;
          if (!reader.ReadUnpadded(ev.source, view).ok()) return true;
          if (!MatchesScope(spec.scope, view, ev.index)) return true;
          if (events.size() == want) {  // one more than asked for: there are more
            more = true;
            return false;
          }
          events.push_back(ev);
          return true;
        });
  };
  if (auto s = walk(true, out.before, out.more_before); !s.ok()) return s;
  if (auto s = walk(false, out.after, out.more_after); !s.ok()) return s;
  std::reverse(out.before.begin(), out.before.end());
  return out;
}

}  // namespace dashcam::storage
