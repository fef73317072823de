// Exploration queries (exploration.h) answered from any store's Scan: the
// matching events are read page by page and their documents parsed here,
// with the same rules and bounds as the SQLite store's own row scans. For a
// backend without a faster way to answer them (the ClickHouse store), so
// that every backend gives the same answers to the same question.
//
// Each function reads at most what its request allows (max_events,
// max_examined) in pages of bounded size, and fails with the store's errors
// (InvalidArgument, DeadlineExceeded past req.deadline, Unavailable).
//
// Thread-safety: as the store's Scan; nothing is kept between calls.
#pragma once

#include <cstddef>
#include <string>

#include "storage/event_store.h"

namespace dashcam::storage {

// EventStore::TopValues: the `size` most frequent values of `field` among
// the newest `max_events` matching events.
Result<TermsResult> TopValuesByScan(EventStore& store, const SearchRequest& req,
                                    const std::string& field, std::size_t size,
                                    std::size_t max_events);

// EventStore::Histogram(req, spec): reads every matching event of the range
// (and, when the split field has too many values to discover, the newest
// ones again to choose the series: HistogramAccumulator, SplitKeySampler).
Result<HistogramTable> HistogramByScan(EventStore& store, const SearchRequest& req,
                                       const HistogramSpec& spec);

// EventStore::SummarizeFields over the newest spec.max_events matches.
Result<FieldsSummary> SummarizeFieldsByScan(EventStore& store, const SearchRequest& req,
                                            const FieldsSpec& spec);

// EventStore::FindNeighbors: NotFound when no event has the key spec.anchor.
Result<Neighbors> FindNeighborsByScan(EventStore& store, const SearchRequest& req,
                                      const NeighborsSpec& spec);

}  // namespace dashcam::storage
