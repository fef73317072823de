#include "storage/docno_keys.h"

#include <fmt/format.h>

#include "storage/partition.h"

namespace dashcam::storage {
namespace {

constexpr std::uint64_t kKeySeqMask = kMaxSeq;

void PutVarint(std::uint64_t v, std::string& out) {
  while (v >= 0x80) {
    out += static_cast<char>((v & 0x7F) | 0x80);
    v >>= 7;
  }
  out += static_cast<char>(v);
}

// Reads a varint at `*p`, advancing it; false past `end` or over 10 bytes.
bool GetVarint(const unsigned char*& p, const unsigned char* end, std::uint64_t& v) {
  v = 0;
  for (int shift = 0; shift < 64 && p < end; shift += 7) {
    const unsigned char byte = *p++;
    v |= static_cast<std::uint64_t>(byte & 0x7F) << shift;
    if ((byte & 0x80) == 0) return true;
  }
  return false;
}

// Walks a block's keys in order: Next gives each in turn.
class BlockCursor {
 public:
  explicit BlockCursor(std::string_view blob)
      : p_(reinterpret_cast<const unsigned char*>(blob.data())), end_(p_ + blob.size()) {
    std::uint64_t count = 0;
    if (!GetVarint(p_, end_, count) || count == 0 || count > kDocnosPerBlock) {
      Fail();
    } else {
      count_ = static_cast<std::int64_t>(count);
    }
  }

  // The next key; false past the last one, or at one that does not decode
  // (then `bad()`, as when the blob holds more or fewer than its count).
  bool Next(EventKey& key) {
    if (bad_) return false;
    if (read_ == count_) return p_ == end_ ? false : Fail();
    std::uint64_t v;
    if (!GetVarint(p_, end_, v)) return Fail();
    if (read_++ == 0) {
      key_ = v;
    } else {
      std::uint64_t seq = 0;
      if ((v & 1) != 0 && (!GetVarint(p_, end_, seq) || seq == 0 || seq > kKeySeqMask)) {
        return Fail();
      }
      // Unsigned arithmetic: a damaged block wraps instead of overflowing.
      key_ = (((key_ >> kSeqBits) + (v >> 1)) << kSeqBits) | seq;
    }
    key = static_cast<EventKey>(key_);
    return true;
  }
  bool bad() const { return bad_; }

 private:
  bool Fail() {
    bad_ = true;
    return false;
  }
  const unsigned char* p_;
  const unsigned char* end_;
  std::uint64_t key_ = 0;
  std::int64_t count_ = 0;
  std::int64_t read_ = 0;
  bool bad_ = false;
};

constexpr const char* kCorruptBlock = "a damaged docno_keys block";

// One connection's dc_docno_key state: the last block it decoded, whole.
// Statements read docnos in order (a doclist's), so the next call mostly
// names the same block; a block's keys follow from its bytes alone, so
// comparing them (~230 bytes) is the whole check, and nothing goes stale.
struct LastBlock {
  std::string blob;
  std::vector<EventKey> keys;
};

// dc_docno_key(keys, docno): the key of `docno`, whose block `keys` is;
// NULL when `keys` is NULL (a late day's rowid past the docnos).
void DocnoKeyFunction(sqlite3_context* ctx, int, sqlite3_value** argv) {
  if (sqlite3_value_type(argv[0]) == SQLITE_NULL) return sqlite3_result_null(ctx);
  auto& last = *static_cast<LastBlock*>(sqlite3_user_data(ctx));
  const std::string_view blob = ValueBlob(argv[0]);
  if (blob != last.blob) {
    last.keys.clear();
    if (!DecodeDocnoBlock(blob, last.keys)) {
      last.blob.clear();
      return sqlite3_result_error(ctx, kCorruptBlock, -1);
    }
    last.blob.assign(blob);
  }
  const auto at =
      static_cast<std::size_t>((sqlite3_value_int64(argv[1]) - 1) & (kDocnosPerBlock - 1));
  if (at >= last.keys.size()) return sqlite3_result_error(ctx, kCorruptBlock, -1);
  sqlite3_result_int64(ctx, last.keys[at]);
}

// dc_docno_bound(keys, block, key, after): the first docno of block `block`
// (whose keys `keys` are) with a key >= `key` (> with `after`); the docno
// past the block's last when there is none.
void DocnoBoundFunction(sqlite3_context* ctx, int, sqlite3_value** argv) {
  BlockCursor cursor(ValueBlob(argv[0]));
  std::int64_t docno = FirstDocnoOf(sqlite3_value_int64(argv[1]));
  const EventKey bound = sqlite3_value_int64(argv[2]);
  const bool after = sqlite3_value_int(argv[3]) != 0;
  EventKey key = 0;
  while (cursor.Next(key) && (after ? key <= bound : key < bound)) ++docno;
  if (cursor.bad()) return sqlite3_result_error(ctx, kCorruptBlock, -1);
  sqlite3_result_int64(ctx, docno);
}

}  // namespace

std::string EncodeDocnoBlock(std::span<const EventKey> keys) {
  std::string out;
  PutVarint(keys.size(), out);
  std::uint64_t previous = 0;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const auto key = static_cast<std::uint64_t>(keys[i]);
    if (i == 0) {
      PutVarint(key, out);
    } else {
      const std::uint64_t seq = key & kKeySeqMask;
      PutVarint((((key >> kSeqBits) - (previous >> kSeqBits)) << 1) | (seq != 0 ? 1 : 0), out);
      if (seq != 0) PutVarint(seq, out);
    }
    previous = key;
  }
  return out;
}

bool DecodeDocnoBlock(std::string_view blob, std::vector<EventKey>& out) {
  BlockCursor cursor(blob);
  EventKey key;
  while (cursor.Next(key)) out.push_back(key);
  return !cursor.bad();
}

std::string DocnoKeysTableSql(std::string_view table) {
  return fmt::format(
      "CREATE TABLE {}(block INTEGER PRIMARY KEY, first INTEGER NOT NULL, keys BLOB NOT NULL)",
      table);
}

Status RegisterDocnoKeyFunctions(sqlite3* db) {
  constexpr int kFlags = SQLITE_UTF8 | SQLITE_DETERMINISTIC;
  // On failure SQLite calls the destructor itself.
  int rc = sqlite3_create_function_v2(db, "dc_docno_key", 2, kFlags, new LastBlock,
                                      &DocnoKeyFunction, nullptr, nullptr,
                                      [](void* p) { delete static_cast<LastBlock*>(p); });
  if (rc == SQLITE_OK) {
    rc = sqlite3_create_function_v2(db, "dc_docno_bound", 4, kFlags, nullptr, &DocnoBoundFunction,
                                    nullptr, nullptr, nullptr);
  }
  return SqliteStatus(rc, db, "register the docno key functions");
}

DocnoKeysWriter::DocnoKeysWriter(Db& db, std::string_view table) : db_(db), table_(table) {
  pending_.reserve(kDocnosPerBlock);
}

Status DocnoKeysWriter::Add(EventKey key) {
  pending_.push_back(key);
  return static_cast<std::int64_t>(pending_.size()) == kDocnosPerBlock ? Flush() : Status::Ok();
}

Status DocnoKeysWriter::Finish() {
  return pending_.empty() ? Status::Ok() : Flush();
}

Status DocnoKeysWriter::Flush() {
  if (!insert_) {
    auto insert = db_.Prepare(
        fmt::format("INSERT INTO {}(block, first, keys) VALUES(?1, ?2, ?3)", table_), true);
    if (!insert.ok()) return insert.status();
    insert_ = std::move(*insert);
  }
  const std::string blob = EncodeDocnoBlock(pending_);
  insert_.Bind(1, block_);
  insert_.Bind(2, pending_.front());
  insert_.BindBlobStatic(3, blob);
  const int rc = insert_.Step();
  insert_.Reset();
  if (rc != SQLITE_DONE) return db_.Check(rc, "store the docnos' keys");
  ++block_;
  pending_.clear();
  return Status::Ok();
}

}  // namespace dashcam::storage
