// EventCorpus: the benchmark's events, generated once and held in memory in
// the forms the two consumers need: the NDJSON lines sent to the server and
// the (timestamp, document, message) triples the SQLite baseline inserts.
// Packed into a few large buffers rather than one GeneratedEvent per event,
// which would double the memory (~450 bytes per event instead of ~900).
//
// Thread-safety: immutable after GenerateEventCorpus returns; concurrent
// reads are safe. string_views returned live as long as the corpus.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tests/common/training_log_generator.h"

namespace dashcam::bench {

class EventCorpus {
 public:
  size_t size() const { return ts_ms_.size(); }
  // Every event's JSON followed by '\n', in order.
  std::string_view ndjson() const { return ndjson_; }
  // Event i's JSON, without the newline. REQUIRES: i < size().
  std::string_view Json(size_t i) const;
  // Event i's message, unescaped. REQUIRES: i < size().
  std::string_view Message(size_t i) const;
  int64_t TimestampMs(size_t i) const { return ts_ms_[i]; }

  void Append(const testing::GeneratedEvent& event);
  // Room for `events` typical generated events, so Append rarely copies.
  void Reserve(size_t events);

 private:
  static std::string_view Slice(const std::string& buf, const std::vector<size_t>& ends, size_t i);

  std::string ndjson_;
  std::vector<size_t> line_ends_;  // event i is ndjson_[line_ends_[i-1], line_ends_[i])
  std::string messages_;
  std::vector<size_t> message_ends_;
  std::vector<int64_t> ts_ms_;
};

// `count` events from a TrainingLogGenerator with `options`.
EventCorpus GenerateEventCorpus(const testing::GeneratorOptions& options, int64_t count);

}  // namespace dashcam::bench
