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
// Readers see only JSON: the SQL function dc_source(source) returns the text
// of either form, for every statement that reads documents.
//
// Thread-safety: a SourceCompressor belongs to its PartitionWriter's thread,
// a connection's dc_source state to the connection's.
#pragma once

#include <sqlite3.h>
#include <zstd.h>

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "storage/status.h"

namespace dashcam::storage {

struct SourceCompression {
  // Documents a partition stores as they are, as the dictionary's training
  // samples, before it compresses. 0: never compress. Default: 2000.
  std::size_t sample_events = 2000;
  std::size_t dictionary_bytes = 32 * 1024;
  int level = 3;  // zstd level
};

// Whether `stored` is a compressed source (else it is the JSON text).
bool IsCompressedSource(std::string_view stored);

// The writer's side: collects samples, trains, then compresses.
class SourceCompressor {
 public:
  explicit SourceCompressor(SourceCompression options = {});

  // Whether documents are compressed (a dictionary is loaded).
  bool ready() const { return cdict_ != nullptr; }

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
  struct FreeCCtx {
    void operator()(ZSTD_CCtx* c) const { ZSTD_freeCCtx(c); }
  };
  struct FreeCDict {
    void operator()(ZSTD_CDict* d) const { ZSTD_freeCDict(d); }
  };
  SourceCompression options_;
  std::unique_ptr<ZSTD_CCtx, FreeCCtx> cctx_;
  std::unique_ptr<ZSTD_CDict, FreeCDict> cdict_;
  std::string samples_;
  std::vector<std::size_t> sample_sizes_;
  std::string out_;
};

// Registers dc_source(source) on `db`: the JSON text of a stored source,
// reading the dictionary from the connection's `dicts` table the first time
// a compressed one comes by. The state is freed with the connection.
Status RegisterSourceFunction(sqlite3* db);

}  // namespace dashcam::storage
