// EventCorpus: see event_corpus.h.
#include "tests/bench/event_corpus.h"

#include <algorithm>

namespace dashcam::bench {
namespace {

// A little above the generator's averages (351 and ~95 bytes).
constexpr size_t kTypicalLineBytes = 360;
constexpr size_t kTypicalMessageBytes = 100;

}  // namespace

std::string_view EventCorpus::Slice(const std::string& buf, const std::vector<size_t>& ends,
                                    size_t i) {
  size_t begin = i == 0 ? 0 : ends[i - 1];
  return std::string_view(buf).substr(begin, ends[i] - begin);
}

std::string_view EventCorpus::Json(size_t i) const {
  std::string_view line = Slice(ndjson_, line_ends_, i);
  line.remove_suffix(1);  // '\n'
  return line;
}

std::string_view EventCorpus::Message(size_t i) const {
  return Slice(messages_, message_ends_, i);
}

void EventCorpus::Append(const testing::GeneratedEvent& event) {
  ndjson_ += event.json;
  ndjson_ += '\n';
  line_ends_.push_back(ndjson_.size());
  messages_ += event.message;
  message_ends_.push_back(messages_.size());
  ts_ms_.push_back(event.ts_ms);
}

void EventCorpus::Reserve(size_t events) {
  ndjson_.reserve(events * kTypicalLineBytes);
  line_ends_.reserve(events);
  messages_.reserve(events * kTypicalMessageBytes);
  message_ends_.reserve(events);
  ts_ms_.reserve(events);
}

void EventCorpus::Clear() {
  ndjson_.clear();
  line_ends_.clear();
  messages_.clear();
  message_ends_.clear();
  ts_ms_.clear();
}

EventCorpus GenerateEventCorpus(const testing::GeneratorOptions& options, int64_t count) {
  testing::TrainingLogGenerator generator(options);
  EventCorpus corpus;
  corpus.Reserve(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) corpus.Append(generator.Next());
  return corpus;
}

CorpusChunks::CorpusChunks(const testing::GeneratorOptions& options, int64_t count, size_t chunk)
    : generator_(options), left_(count), chunk_(chunk) {
  corpus_.Reserve(static_cast<size_t>(std::min<int64_t>(count, static_cast<int64_t>(chunk))));
}

const EventCorpus* CorpusChunks::Next() {
  if (left_ <= 0) return nullptr;
  corpus_.Clear();
  const auto n = std::min<int64_t>(left_, static_cast<int64_t>(chunk_));
  for (int64_t i = 0; i < n; ++i) corpus_.Append(generator_.Next());
  first_ = drawn_;
  drawn_ += n;
  left_ -= n;
  return &corpus_;
}

}  // namespace dashcam::bench
