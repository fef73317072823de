#include "storage/filtered_event_store.h"

#include <algorithm>
#include <utility>

#include "storage/exact_value.h"
#include "storage/partition.h"

namespace dashcam::storage {

FilteredEventStore::FilteredEventStore(EventStore& inner, query::Node filter)
    : inner_(inner), filter_(std::move(filter)) {}

query::Node FilteredEventStore::Restrict(const query::Node& query) const {
  query::Node n{query::NodeKind::kAnd, 0, {}, {}, {}};
  n.children.push_back(filter_);
  n.children.push_back(query);
  return n;
}

void FilteredEventStore::Append(std::vector<Record> records, AppendCallback done) {
  inner_.Append(std::move(records), std::move(done));
}

Result<SearchPage> FilteredEventStore::Search(const SearchRequest& req) {
  const query::Node q = Restrict(*req.query);
  SearchRequest r = req;
  r.query = &q;
  return inner_.Search(r);
}

Result<std::vector<HistogramBucket>> FilteredEventStore::Histogram(const SearchRequest& req,
                                                                   TimeMs interval) {
  const query::Node q = Restrict(*req.query);
  SearchRequest r = req;
  r.query = &q;
  return inner_.Histogram(r, interval);
}

Result<TermsResult> FilteredEventStore::TopValues(const SearchRequest& req,
                                                  const std::string& field, std::size_t size,
                                                  std::size_t max_events) {
  const query::Node q = Restrict(*req.query);
  SearchRequest r = req;
  r.query = &q;
  return inner_.TopValues(r, field, size, max_events);
}

Result<ScanPage> FilteredEventStore::Scan(const ScanRequest& req) {
  const query::Node q = Restrict(*req.query);
  ScanRequest r = req;
  r.query = &q;
  return inner_.Scan(r);
}

void FilteredEventStore::SetCommitObserver(CommitObserver observer) {
  inner_.SetCommitObserver(std::move(observer));
}

Result<bool> FilteredEventStore::Matches(EventKey key, Clock::time_point deadline) {
  ScanRequest r;
  r.query = &filter_;
  r.lo = key;
  r.hi = key;
  r.limit = 1;
  r.deadline = deadline;
  auto page = inner_.Scan(r);
  if (!page.ok()) return page.status();
  return !page->events.empty();
}

Result<std::optional<StoredEvent>> FilteredEventStore::Get(std::string_view id) {
  auto event = inner_.Get(id);
  if (!event.ok() || !*event) return event;
  auto matches = Matches((*event)->key, Clock::time_point::max());
  if (!matches.ok()) return matches.status();
  if (!*matches) return std::optional<StoredEvent>();
  return event;
}

Result<HistogramTable> FilteredEventStore::Histogram(const SearchRequest& req,
                                                     const HistogramSpec& spec) {
  const query::Node q = Restrict(*req.query);
  SearchRequest r = req;
  r.query = &q;
  return inner_.Histogram(r, spec);
}

Result<FieldsSummary> FilteredEventStore::SummarizeFields(const SearchRequest& req,
                                                          const FieldsSpec& spec) {
  const query::Node q = Restrict(*req.query);
  SearchRequest r = req;
  r.query = &q;
  return inner_.SummarizeFields(r, spec);
}

Result<Neighbors> FilteredEventStore::FindNeighbors(const SearchRequest& req,
                                                    const NeighborsSpec& spec) {
  // The same answer as for a key that does not exist: the view must not
  // confirm that an event outside it is there.
  auto matches = Matches(spec.anchor, req.deadline);
  if (!matches.ok()) return matches.status();
  if (!*matches) return Status::NotFound("no such anchor event");
  const query::Node q = Restrict(*req.query);
  SearchRequest r = req;
  r.query = &q;
  return inner_.FindNeighbors(r, spec);
}

Result<std::optional<TimeExtent>> FilteredEventStore::Extent(Clock::time_point deadline) {
  // The newest match is a search's first hit, the oldest an ascending scan's.
  SearchRequest newest;
  newest.deadline = deadline;
  newest.query = &filter_;
  newest.limit = 1;
  newest.count_limit = 0;
  auto last = inner_.Search(newest);
  if (!last.ok()) return last.status();
  if (last->hits.empty()) return std::optional<TimeExtent>();
  ScanRequest oldest;
  oldest.deadline = deadline;
  oldest.query = &filter_;
  oldest.ascending = true;
  oldest.limit = 1;
  auto first = inner_.Scan(oldest);
  if (!first.ok()) return first.status();
  if (first->events.empty()) return std::optional<TimeExtent>();
  return std::optional<TimeExtent>(TimeExtent{first->events[0].ts_ms, last->hits[0].ts_ms});
}

std::vector<PartitionInfo> FilteredEventStore::Partitions() {
  return inner_.Partitions();
}

void FilteredEventStore::Close() {}

namespace {
// Groups examined one by one at most, and events counted per group at most.
constexpr std::size_t kMaxGroupChecks = 1000;
constexpr std::size_t kMaxGroupCount = 1'000'000;
}  // namespace

// The newest closing event of `g` that this view can see: a closing line
// outside the filter must not tell a scoped reader that the run finished.
Result<std::optional<TimeMs>> FilteredEventStore::VisibleEnd(const GroupSummary& g,
                                                             const GroupsRequest& req) {
  if (!g.ended || req.end_query == nullptr) return std::optional<TimeMs>();
  std::vector<query::Node> both{ExactValueQuery(req.group_field, g.key), *req.end_query};
  const query::Node q = Restrict(query::Node{query::NodeKind::kAnd, 0, std::move(both), {}});
  SearchRequest s;
  s.query = &q;
  s.from = g.first;
  s.to = *g.ended + 1;
  s.limit = 1;
  s.count_limit = 0;
  s.deadline = req.deadline;
  auto end = inner_.Search(s);
  if (!end.ok()) return end.status();
  if (end->hits.empty()) return std::optional<TimeMs>();
  return std::optional<TimeMs>(end->hits.front().ts_ms);
}

Result<GroupsPage> FilteredEventStore::Groups(const GroupsRequest& req) {
  if (req.group_field.empty()) {
    return Status::InvalidArgument("groups of a filtered view need the group field");
  }
  GroupsRequest all = req;
  all.limit = std::max(req.limit, kMaxGroupChecks);
  auto inner = inner_.Groups(all);
  if (!inner.ok()) return inner.status();
  GroupsPage out;
  std::size_t examined = 0;
  for (const GroupSummary& g : inner->groups) {
    if (out.groups.size() >= req.limit || examined >= kMaxGroupChecks) {
      out.complete = false;
      break;
    }
    ++examined;
    // The visible events of the group, within the span the rollup gives.
    const query::Node q = Restrict(ExactValueQuery(req.group_field, g.key));
    SearchRequest s;
    s.query = &q;
    s.from = g.first;
    s.to = g.last + 1;
    s.limit = 1;
    s.count_limit = kMaxGroupCount;
    s.deadline = req.deadline;
    auto newest = inner_.Search(s);
    if (!newest.ok()) return newest.status();
    if (newest->hits.empty()) continue;
    ScanRequest scan;
    scan.query = &q;
    scan.lo = FirstKeyAt(g.first);
    scan.hi = FirstKeyAt(g.last + 1) - 1;
    scan.ascending = true;
    scan.limit = 1;
    scan.deadline = req.deadline;
    auto oldest = inner_.Scan(scan);
    if (!oldest.ok()) return oldest.status();
    GroupSummary visible = g;
    visible.last = newest->hits.front().ts_ms;
    visible.first = oldest->events.empty() ? visible.last : oldest->events.front().ts_ms;
    visible.events = newest->total;
    auto ended = VisibleEnd(g, req);
    if (!ended.ok()) return ended.status();
    visible.ended = *ended;
    out.groups.push_back(std::move(visible));
  }
  if (!inner->complete) out.complete = false;
  std::sort(out.groups.begin(), out.groups.end(), [](const auto& a, const auto& b) {
    return a.last != b.last ? a.last > b.last : a.key < b.key;
  });
  return out;
}

}  // namespace dashcam::storage
