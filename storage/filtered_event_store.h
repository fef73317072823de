// FilteredEventStore: a view of an EventStore that shows only the events
// matching a fixed query (a row filter). Every read ANDs the filter into the
// caller's query, so a caller handed this view cannot see an event outside it
// whatever it asks:
//   Search, Histogram (both), TopValues, Scan, SummarizeFields: the query
//     becomes (AND filter query);
//   Get: an event outside the filter is "not found" (its existence is not
//     revealed either);
//   FindNeighbors: NotFound when the anchor is outside the filter, and the
//     neighbours are filtered;
//   Extent: the oldest and newest matching events' times;
//   Groups: only groups with a matching event (checked one by one, by
//     GroupsRequest::group_field, at most 1000 groups), each with the count
//     and times of its matching events, and `ended` only when one of its
//     closing events (GroupsRequest::end_query) matches too.
// Writes (Append), the commit observer and Partitions() pass through: they
// carry no rows of other callers, and whoever hands out this view decides who
// may call them (the HTTP layer forbids ingest and fleet-wide status to a
// filtered key). Close() does nothing: the view does not own the store.
//
// Thread-safety: as the wrapped store; the filter is immutable. The wrapped
// store must outlive the view.
#pragma once

#include <string>

#include "storage/event_store.h"
#include "storage/query_ast.h"

namespace dashcam::storage {

class FilteredEventStore final : public EventStore {
 public:
  FilteredEventStore(EventStore& inner, query::Node filter);

  const query::Node& filter() const { return filter_; }
  // (AND filter query): what every read of this view runs.
  query::Node Restrict(const query::Node& query) const;

  void Append(std::vector<Record> records, AppendCallback done) override;
  std::uint64_t NewAppendStream() override { return inner_.NewAppendStream(); }
  void AppendPart(std::vector<Record> records, AppendCallback done, std::uint64_t stream,
                  bool more) override {
    inner_.AppendPart(std::move(records), std::move(done), stream, more);
  }
  Result<SearchPage> Search(const SearchRequest& req) override;
  Result<std::vector<HistogramBucket>> Histogram(const SearchRequest& req,
                                                 TimeMs interval) override;
  Result<TermsResult> TopValues(const SearchRequest& req, const std::string& field,
                                std::size_t size, std::size_t max_events) override;
  Result<ScanPage> Scan(const ScanRequest& req) override;
  void SetCommitObserver(CommitObserver observer) override;
  Result<std::optional<StoredEvent>> Get(std::string_view id) override;
  Result<HistogramTable> Histogram(const SearchRequest& req, const HistogramSpec& spec) override;
  Result<FieldsSummary> SummarizeFields(const SearchRequest& req, const FieldsSpec& spec) override;
  Result<Neighbors> FindNeighbors(const SearchRequest& req, const NeighborsSpec& spec) override;
  Result<std::optional<TimeExtent>> Extent(Clock::time_point deadline) override;
  Result<GroupsPage> Groups(const GroupsRequest& req) override;
  std::vector<PartitionInfo> Partitions() override;
  WriterStats writer_stats() const override { return inner_.writer_stats(); }
  EventKey ScanGap() const override { return inner_.ScanGap(); }
  void Close() override;

 private:
  // Whether the event with this key matches the filter.
  Result<bool> Matches(EventKey key, Clock::time_point deadline);
  Result<std::optional<TimeMs>> VisibleEnd(const GroupSummary& g, const GroupsRequest& req);

  EventStore& inner_;
  const query::Node filter_;
};

}  // namespace dashcam::storage
