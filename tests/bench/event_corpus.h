// EventCorpus: benchmark events held in memory in the forms the consumers
// need: the NDJSON lines sent to the server and the (timestamp, document,
// message) triples the SQLite baseline inserts. Packed into a few large
// buffers rather than one GeneratedEvent per event, which would double the
// memory (~450 bytes per event instead of ~900).
//
// CorpusChunks draws a long sequence as a series of such corpora, a chunk at
// a time, so that a run of 50M events (~23 GB as one corpus) never holds
// more than one chunk.
//
// Thread-safety: a corpus is immutable once filled; concurrent reads are
// safe. string_views returned live until the corpus is cleared or
// destroyed. A CorpusChunks belongs to one thread.
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
  // Empties the corpus, keeping its buffers' capacity.
  void Clear();

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

// The same `count` events as GenerateEventCorpus(options, count), in order,
// as consecutive chunks of `chunk` events (the last may be shorter).
// REQUIRES: count >= 0, chunk > 0.
class CorpusChunks {
 public:
  CorpusChunks(const testing::GeneratorOptions& options, int64_t count, size_t chunk);

  // Generates the next chunk and returns it, or returns null once `count`
  // events have been drawn. The chunk is valid until the next call.
  const EventCorpus* Next();
  // The position in the sequence of the first event of the last chunk.
  int64_t first() const { return first_; }

 private:
  testing::TrainingLogGenerator generator_;
  int64_t left_;
  size_t chunk_;
  int64_t first_ = 0;
  int64_t drawn_ = 0;
  EventCorpus corpus_;
};

}  // namespace dashcam::bench
