// How a stored document (the `source` column of `events`) sits on disk.
//
// A source is either its JSON text as ingested, or that text compressed: one
// zstd frame made with the partition's dictionary, without a dictionary id
// or checksum (the file has exactly one dictionary, and SQLite checks pages).
// JSON text starts with '{' and a frame with zstd's magic number, so the two
// forms live side by side: the documents a day file stores before it has a
// dictionary stay as they are.
//
// The dictionary is trained from the partition's first documents (a few
// thousand: short log events share field names, hosts, paths and phrases,
// which a dictionary holds once and plain zstd cannot use at ~400 bytes a
// document) and kept in the partition's `dicts` table, written in the same
// transaction as the first documents compressed with it.
//
// The writer thread's time is the ingest rate, so documents are compressed
// before they reach it where possible: SharedDictionaries gives the threads
// that submit records the dictionaries of the partitions being written.
//
// Compaction re-encodes a past day's documents (partition_reindex.h) with a
// dictionary trained on documents spread over the whole day, at a higher
// level: a day's first documents come from its first minutes, and training
// on them misses what the rest of the day repeats (1M bench events: 101.7
// bytes a document as written; 92.6 with the same level and 4000 samples
// spread over the day; 82.8 at level 9, ~40 MB/s). That third form is one
// byte, the dictionary's id in `dicts` (kFirstDayDictionary..
// kLastDayDictionary: bytes no JSON text starts with), then the zstd frame
// without its four-byte magic number. A day dictionary is never changed
// once stored, so a connection may keep it for good.
//
// Readers see only JSON: the SQL function dc_source(source) returns the text
// of every form, for every statement that reads documents.
//
// Thread-safety: a SourceCompressor belongs to its PartitionWriter's thread,
// a connection's dc_source state to the connection's; SharedDictionaries is
// thread-safe.
#pragma once

#include <sqlite3.h>
#include <zstd.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "storage/record.h"
#include "storage/status.h"

namespace dashcam::storage {

struct SourceCompression {
  // Documents a partition stores as they are, as the dictionary's training
  // samples, before it compresses. 0: never compress (nor does compaction:
  // SqliteStore). Default: 2000.
  std::size_t sample_events = 2000;
  std::size_t dictionary_bytes = 32 * 1024;
  int level = 3;  // zstd level
};

struct FreeCCtx {
  void operator()(ZSTD_CCtx* c) const { ZSTD_freeCCtx(c); }
};
using CompressionContext = std::unique_ptr<ZSTD_CCtx, FreeCCtx>;
using Dictionary = std::shared_ptr<const ZSTD_CDict>;

// Ids in `dicts`: the dictionary the writer trains on a day's first
// documents, and the range of day dictionaries.
inline constexpr std::int64_t kWriterDictionary = 1;
inline constexpr std::int64_t kFirstDayDictionary = 2;
inline constexpr std::int64_t kLastDayDictionary = 8;

// Whether `stored` is a compressed source (else it is the JSON text).
bool IsCompressedSource(std::string_view stored);

// The dictionary `id` kept in the `dicts` table of `db`'s file; nullopt
// when the file has none of that id.
Result<std::optional<std::string>> ReadStoredDictionary(sqlite3* db,
                                                        std::int64_t id = kWriterDictionary);

// A dictionary of at most `bytes` trained on `samples`. InvalidArgument when
// zstd finds them too few or too alike.
Result<std::string> TrainDictionary(const std::vector<std::string>& samples, std::size_t bytes);

// Compaction's side: documents in the day-dictionary form.
class DayDictionaryEncoder {
 public:
  // Encodes with `dictionary`, stored as `id` (kFirstDayDictionary..
  // kLastDayDictionary), at zstd `level`.
  Status Load(std::int64_t id, std::string_view dictionary, int level);

  // `json` as it is to be stored: in the day-dictionary form when that is
  // smaller, else `json` itself. The view is valid until the next call.
  std::string_view Encode(std::string_view json);

  // Whether `stored` is already in this encoder's form (its dictionary's id
  // first; a stored dictionary never changes).
  bool Encoded(std::string_view stored) const;

  // How many documents Encode compressed.
  std::uint64_t compressed() const { return compressed_; }

 private:
  char id_ = 0;
  std::uint64_t compressed_ = 0;
  CompressionContext cctx_;
  Dictionary cdict_;
  std::string frame_, out_;
};

// The writer's side: collects samples, trains, then compresses.
class SourceCompressor {
 public:
  explicit SourceCompressor(SourceCompression options = {});

  // Whether documents are to be compressed at all (sample_events > 0).
  bool enabled() const { return options_.sample_events > 0; }
  // Whether documents are compressed (a dictionary is loaded).
  bool ready() const { return cdict_ != nullptr; }
  const Dictionary& dictionary() const { return cdict_; }

  // Uses `dictionary` (as stored in `dicts`) from now on.
  Status Load(std::string_view dictionary);

  // Keeps a copy of `source` as a training sample, while not ready and
  // short of samples.
  void AddSample(std::string_view source);
  bool HasEnoughSamples() const;

  // Trains a dictionary on the samples and loads it; returns its bytes, to be
  // stored. The samples stay until Committed. An error (too few or too alike
  // samples) drops them: training starts over with the next documents.
  Result<std::string> Train();

  // The trained dictionary is stored: the samples are no longer needed.
  void Committed();

  // Unloads the dictionary (its transaction did not commit): documents are
  // stored as they are until the next Train, on the samples kept.
  void Forget();

  // `source` as it is to be stored: compressed when ready and smaller, else
  // `source` itself. The view is valid until the next call.
  std::string_view Encode(std::string_view source);

 private:
  SourceCompression options_;
  CompressionContext cctx_;
  Dictionary cdict_;
  std::string samples_;
  std::vector<std::size_t> sample_sizes_;
  std::string out_;
};

// The dictionaries of the day partitions being written, for the threads
// that submit records: Precompress sets Record::stored_source, which the
// partition's writer stores as it is when Record::stored_dictionary is the
// id of its own dictionary (else it compresses the source itself). Ids are
// unique in the process; the same bytes for the same day keep their id.
// Holds the dictionaries of the 16 days published last.
class SharedDictionaries {
 public:
  explicit SharedDictionaries(int level = SourceCompression{}.level) : level_(level) {}

  // `day`'s dictionary from now on: `bytes` as stored, `cdict` made from
  // them. Returns its id (never 0).
  std::uint64_t Publish(std::int64_t day, std::string_view bytes, Dictionary cdict);

  // Compresses the source of every record whose day has a dictionary.
  void Precompress(std::span<Record> records);

 private:
  struct Entry {
    std::uint64_t id = 0;
    std::string bytes;
    Dictionary cdict;
  };
  CompressionContext TakeContext();

  const int level_;
  std::mutex mu_;
  std::map<std::int64_t, Entry> by_day_;
  std::uint64_t next_id_ = 1;
  std::vector<CompressionContext> idle_;  // contexts between Precompress calls
};

// Registers dc_source(source) on `db`: the JSON text of a stored source,
// reading the dictionary from the connection's `dicts` table the first time
// a compressed one comes by. The state is freed with the connection.
Status RegisterSourceFunction(sqlite3* db);

}  // namespace dashcam::storage
