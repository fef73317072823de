#include "storage/source_codec.h"

#include <zdict.h>

#include <array>
#include <cstring>

#include <fmt/format.h>

#include "storage/sqlite_db.h"
#include "storage/time_format.h"

namespace dashcam::storage {
namespace {

constexpr unsigned char kZstdMagic[4] = {0x28, 0xB5, 0x2F, 0xFD};

// Training stops collecting at this many sample bytes, whatever the count:
// a few large documents train as well as many small ones.
constexpr std::size_t kMaxSampleBytes = 2u << 20;

// A stored document never decompresses to more than this (ingest refuses
// far smaller ones); a frame that claims more is corrupt.
constexpr unsigned long long kMaxSourceBytes = 1ull << 30;

// At most this many days' dictionaries are shared (a backfill of many days
// at once compresses the rest on the writer thread).
constexpr std::size_t kSharedDays = 16;

// A context for frames as stored: the file holds one dictionary, and SQLite
// checks its pages, so a frame needs neither a dictionary id nor a checksum.
// The size is kept, so that a reader allocates once.
CompressionContext NewContext() {
  CompressionContext c(ZSTD_createCCtx());
  if (!c) return c;
  ZSTD_CCtx_setParameter(c.get(), ZSTD_c_dictIDFlag, 0);
  ZSTD_CCtx_setParameter(c.get(), ZSTD_c_checksumFlag, 0);
  ZSTD_CCtx_setParameter(c.get(), ZSTD_c_contentSizeFlag, 1);
  return c;
}

// Compresses `source` into `out` with `cctx`'s dictionary; false (and `out`
// unspecified) when that fails or would not be smaller.
bool Compress(ZSTD_CCtx* cctx, std::string_view source, std::string& out) {
  out.resize(ZSTD_compressBound(source.size()));
  const std::size_t n = ZSTD_compress2(cctx, out.data(), out.size(), source.data(), source.size());
  if (ZSTD_isError(n) || n >= source.size()) return false;
  out.resize(n);
  return true;
}

// `dictionary` made ready for zstd `level`, and referenced by `cctx` (made
// first when null) from now on.
Result<Dictionary> UseDictionary(CompressionContext& cctx, std::string_view dictionary, int level) {
  Dictionary cdict(ZSTD_createCDict(dictionary.data(), dictionary.size(), level), ZSTD_freeCDict);
  if (!cdict) return Status::Corruption("the compression dictionary is unusable");
  if (!cctx) cctx = NewContext();
  if (!cctx) return Status::Internal("zstd: no compression context");
  if (ZSTD_isError(ZSTD_CCtx_refCDict(cctx.get(), cdict.get()))) {
    return Status::Internal("zstd: cannot use the dictionary");
  }
  return cdict;
}

struct FreeDCtx {
  void operator()(ZSTD_DCtx* c) const { ZSTD_freeDCtx(c); }
};
struct FreeDDict {
  void operator()(ZSTD_DDict* d) const { ZSTD_freeDDict(d); }
};

// Whether `stored` starts as a document in the day-dictionary form does,
// and the dictionary's id.
std::optional<std::int64_t> DayDictionaryOf(std::string_view stored) {
  if (stored.size() < 2) return std::nullopt;
  const auto id = static_cast<std::int64_t>(static_cast<unsigned char>(stored[0]));
  if (id < kFirstDayDictionary || id > kLastDayDictionary) return std::nullopt;
  return id;
}

// Trains a dictionary of at most `bytes` on the concatenated `samples`.
Result<std::string> Train(std::string_view samples, const std::vector<std::size_t>& sizes,
                          std::size_t bytes) {
  std::string dictionary(bytes, '\0');
  const std::size_t n = ZDICT_trainFromBuffer(dictionary.data(), dictionary.size(), samples.data(),
                                              sizes.data(), static_cast<unsigned>(sizes.size()));
  if (ZDICT_isError(n)) {
    return Status::InvalidArgument(
        fmt::format("training a compression dictionary: {}", ZDICT_getErrorName(n)));
  }
  dictionary.resize(n);
  return dictionary;
}

// One connection's dc_source state: its file's dictionaries, each read the
// first time a document needs it (none changes once stored).
struct SourceReader {
  std::unique_ptr<ZSTD_DCtx, FreeDCtx> dctx{ZSTD_createDCtx()};
  std::array<std::unique_ptr<ZSTD_DDict, FreeDDict>, kLastDayDictionary + 1> ddicts;
  std::string frame;  // a day-dictionary document with its magic number again
};

// Reads dictionary `id` into `reader`; an error message, or empty.
std::string LoadDictionary(sqlite3* db, std::int64_t id, SourceReader& reader) {
  auto stored = ReadStoredDictionary(db, id);
  if (!stored.ok()) return stored.status().ToString();
  if (!*stored) return fmt::format("a compressed document but no compression dictionary {}", id);
  auto& ddict = reader.ddicts[static_cast<std::size_t>(id)];
  ddict.reset(ZSTD_createDDict((*stored)->data(), (*stored)->size()));
  return ddict ? "" : "the compression dictionary is unusable";
}

void SourceFunction(sqlite3_context* ctx, int, sqlite3_value** argv) {
  if (sqlite3_value_type(argv[0]) == SQLITE_NULL) return sqlite3_result_null(ctx);
  const auto* bytes = static_cast<const char*>(sqlite3_value_blob(argv[0]));
  auto size = static_cast<std::size_t>(sqlite3_value_bytes(argv[0]));
  auto& reader = *static_cast<SourceReader*>(sqlite3_user_data(ctx));
  std::int64_t id = kWriterDictionary;
  if (auto day = DayDictionaryOf({bytes, size})) {
    id = *day;
    reader.frame.assign(reinterpret_cast<const char*>(kZstdMagic), sizeof kZstdMagic);
    reader.frame.append(bytes + 1, size - 1);
    bytes = reader.frame.data();
    size = reader.frame.size();
  } else if (!IsCompressedSource({bytes, size})) {
    return sqlite3_result_value(ctx, argv[0]);
  }
  const auto& ddict = reader.ddicts[static_cast<std::size_t>(id)];
  if (!ddict) {
    if (auto error = LoadDictionary(sqlite3_context_db_handle(ctx), id, reader); !error.empty()) {
      return sqlite3_result_error(ctx, error.c_str(), -1);
    }
  }
  const unsigned long long plain = ZSTD_getFrameContentSize(bytes, size);
  if (plain == ZSTD_CONTENTSIZE_UNKNOWN || plain == ZSTD_CONTENTSIZE_ERROR ||
      plain > kMaxSourceBytes) {
    return sqlite3_result_error(ctx, "a corrupt compressed document", -1);
  }
  // Decompressed straight into the result's buffer, which SQLite frees.
  void* out = sqlite3_malloc64(plain + 1);
  if (!out) return sqlite3_result_error_nomem(ctx);
  const std::size_t n =
      ZSTD_decompress_usingDDict(reader.dctx.get(), out, plain, bytes, size, ddict.get());
  if (ZSTD_isError(n) || n != plain) {
    sqlite3_free(out);
    return sqlite3_result_error(ctx, "a corrupt compressed document", -1);
  }
  sqlite3_result_blob64(ctx, out, plain, sqlite3_free);
}

}  // namespace

Result<std::optional<std::string>> ReadStoredDictionary(sqlite3* db, std::int64_t id) {
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v2(db, "SELECT dict FROM dicts WHERE id = ?1", -1, &stmt, nullptr);
  if (rc == SQLITE_OK) rc = sqlite3_bind_int64(stmt, 1, id);
  if (rc == SQLITE_OK) rc = sqlite3_step(stmt);
  Result<std::optional<std::string>> out = std::optional<std::string>();
  if (rc == SQLITE_ROW) {
    const auto* bytes = static_cast<const char*>(sqlite3_column_blob(stmt, 0));
    out = std::optional<std::string>(
        std::string(bytes, static_cast<std::size_t>(sqlite3_column_bytes(stmt, 0))));
  } else if (rc != SQLITE_DONE) {
    out = SqliteStatus(rc, db, "reading the compression dictionary");
  }
  sqlite3_finalize(stmt);
  return out;
}

bool IsCompressedSource(std::string_view stored) {
  return DayDictionaryOf(stored) ||
         (stored.size() >= sizeof kZstdMagic &&
          std::memcmp(stored.data(), kZstdMagic, sizeof kZstdMagic) == 0);
}

Result<std::string> TrainDictionary(const std::vector<std::string>& samples, std::size_t bytes) {
  std::string all;
  std::vector<std::size_t> sizes;
  sizes.reserve(samples.size());
  for (const std::string& sample : samples) {
    all += sample;
    sizes.push_back(sample.size());
  }
  return Train(all, sizes, bytes);
}

Status DayDictionaryEncoder::Load(std::int64_t id, std::string_view dictionary, int level) {
  if (id < kFirstDayDictionary || id > kLastDayDictionary) {
    return Status::InvalidArgument(fmt::format("no day dictionary can have id {}", id));
  }
  auto cdict = UseDictionary(cctx_, dictionary, level);
  if (!cdict.ok()) return cdict.status();
  cdict_ = std::move(*cdict);
  id_ = static_cast<char>(id);
  return Status::Ok();
}

std::string_view DayDictionaryEncoder::Encode(std::string_view json) {
  // The form drops the magic number and adds the id: 3 bytes less.
  if (!cdict_ || !Compress(cctx_.get(), json, frame_) || frame_.size() - 3 >= json.size()) {
    return json;
  }
  out_.assign(1, id_);
  out_.append(frame_, sizeof kZstdMagic);
  ++compressed_;
  return out_;
}

bool DayDictionaryEncoder::Encoded(std::string_view stored) const {
  return cdict_ && DayDictionaryOf(stored) && stored.front() == id_;
}

SourceCompressor::SourceCompressor(SourceCompression options) : options_(options) {}

Status SourceCompressor::Load(std::string_view dictionary) {
  auto cdict = UseDictionary(cctx_, dictionary, options_.level);
  if (!cdict.ok()) return cdict.status();
  cdict_ = std::move(*cdict);
  return Status::Ok();
}

void SourceCompressor::AddSample(std::string_view source) {
  if (ready() || HasEnoughSamples() || options_.sample_events == 0) return;
  samples_.append(source);
  sample_sizes_.push_back(source.size());
}

bool SourceCompressor::HasEnoughSamples() const {
  return options_.sample_events > 0 &&
         (sample_sizes_.size() >= options_.sample_events || samples_.size() >= kMaxSampleBytes);
}

Result<std::string> SourceCompressor::Train() {
  auto dictionary = storage::Train(samples_, sample_sizes_, options_.dictionary_bytes);
  if (!dictionary.ok()) {
    // Too few or too alike samples: start over with the next documents.
    samples_.clear();
    sample_sizes_.clear();
    return dictionary.status();
  }
  if (auto s = Load(*dictionary); !s.ok()) return s;
  return dictionary;
}

void SourceCompressor::Forget() {
  if (cctx_) ZSTD_CCtx_refCDict(cctx_.get(), nullptr);
  cdict_.reset();
}

void SourceCompressor::Committed() {
  samples_.clear();
  samples_.shrink_to_fit();
  sample_sizes_.clear();
  sample_sizes_.shrink_to_fit();
}

std::string_view SourceCompressor::Encode(std::string_view source) {
  if (!ready() || !Compress(cctx_.get(), source, out_)) return source;
  return out_;
}

std::uint64_t SharedDictionaries::Publish(std::int64_t day, std::string_view bytes,
                                          Dictionary cdict) {
  std::lock_guard lock(mu_);
  Entry& e = by_day_[day];
  if (e.id == 0 || e.bytes != bytes) e = Entry{next_id_++, std::string(bytes), std::move(cdict)};
  const std::uint64_t id = e.id;
  if (by_day_.size() > kSharedDays) {
    // Drop the entry published longest ago (ids grow with time).
    auto oldest = by_day_.begin();
    for (auto it = by_day_.begin(); it != by_day_.end(); ++it) {
      if (it->second.id < oldest->second.id) oldest = it;
    }
    by_day_.erase(oldest);
  }
  return id;
}

CompressionContext SharedDictionaries::TakeContext() {
  if (idle_.empty()) return NewContext();
  CompressionContext c = std::move(idle_.back());
  idle_.pop_back();
  return c;
}

void SharedDictionaries::Precompress(std::span<Record> records) {
  // What the batch needs, taken under the lock; compressed without it.
  std::map<std::int64_t, Entry> wanted;
  CompressionContext cctx;
  {
    std::lock_guard lock(mu_);
    if (by_day_.empty()) return;
    for (const Record& r : records) {
      const std::int64_t day = DayOf(r.ts_ms);
      if (wanted.contains(day)) continue;
      auto it = by_day_.find(day);
      if (it != by_day_.end()) wanted.emplace(day, Entry{it->second.id, {}, it->second.cdict});
    }
    if (wanted.empty()) return;
    cctx = TakeContext();
  }
  if (!cctx) return;
  std::int64_t current = -1;
  const Entry* entry = nullptr;
  for (Record& r : records) {
    const std::int64_t day = DayOf(r.ts_ms);
    if (day != current || !entry) {
      auto it = wanted.find(day);
      entry = it == wanted.end() ? nullptr : &it->second;
      current = day;
      if (entry) ZSTD_CCtx_refCDict(cctx.get(), entry->cdict.get());
    }
    if (!entry) continue;
    if (Compress(cctx.get(), r.source, r.stored_source)) {
      r.stored_dictionary = entry->id;
    } else {
      r.stored_source.clear();
    }
  }
  ZSTD_CCtx_refCDict(cctx.get(), nullptr);  // the dictionaries may go
  std::lock_guard lock(mu_);
  idle_.push_back(std::move(cctx));
}

Status RegisterSourceFunction(sqlite3* db) {
  auto reader = std::make_unique<SourceReader>();
  if (!reader->dctx) return Status::Internal("zstd: no decompression context");
  const int rc = sqlite3_create_function_v2(db, "dc_source", 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC,
                                            reader.get(), SourceFunction, nullptr, nullptr,
                                            [](void* p) { delete static_cast<SourceReader*>(p); });
  // On failure SQLite has already called the destructor.
  reader.release();
  return SqliteStatus(rc, db, "register dc_source");
}

}  // namespace dashcam::storage
