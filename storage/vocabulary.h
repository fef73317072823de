// The vocabulary of a partition: the distinct index terms wildcard and fuzzy
// queries expand to (message tokens, and string field tokens as
// `name 0x1F token`; never numbers). FTS5 has no cheap list of its terms:
// fts5vocab walks every term's whole doclist, measured at 4.2 s for a full
// scan of 1M training-log events (2.1 s for the message terms alone), so a
// leading wildcard would cost ~40 s at 10M events. So each partition keeps
// the list in its own `vocab` table, filled by the writer
// (vocabulary_collector.h); ListTerms reads it back, or fts5vocab on a
// partition last written before the table existed.
//
// Thread-safety: ListTerms uses the reader's connection, one thread at a
// time.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "storage/match_sample.h"
#include "storage/partition.h"
#include "storage/status.h"
#include "storage/term_source.h"

namespace dashcam::storage {

// The accepted terms of `range` in this partition (TermSource::Terms).
Result<std::vector<std::string>> ListTerms(PartitionReader& reader, const TermRange& range,
                                           std::size_t max_terms);

// What the partition records of the numbers of `field` (number_ranges.h):
// nothing for a file that does not record them all.
Result<FieldNumbersLookup> ReadFieldNumbers(PartitionReader& reader, const std::string& field);

// A partition's vocabulary, numbers and events as the query compiler's
// TermSource.
class PartitionTerms final : public TermSource {
 public:
  explicit PartitionTerms(PartitionReader& reader) : reader_(reader) {}
  Result<std::vector<std::string>> Terms(const TermRange& range, std::size_t max_terms) override {
    return ListTerms(reader_, range, max_terms);
  }
  Result<FieldNumbersLookup> Numbers(const std::string& field) override {
    return ReadFieldNumbers(reader_, field);
  }
  Result<std::optional<bool>> ShareBelow(const query::Node& n, double share) override {
    return SampleShareBelow(reader_, n, share);
  }
  Result<std::optional<EventCounts>> Events(TimeMs from, TimeMs to) override {
    return CountEvents(reader_, from, to);
  }

 private:
  PartitionReader& reader_;
};

}  // namespace dashcam::storage
