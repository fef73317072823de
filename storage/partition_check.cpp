#include "storage/partition_check.h"

#include <array>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "storage/partition.h"
#include "storage/sqlite_db.h"

namespace dashcam::storage {
namespace {

namespace fs = std::filesystem;

// The database header (https://www.sqlite.org/fileformat.html#the_database_header).
constexpr std::size_t kHeaderBytes = 100;
constexpr char kMagic[] = "SQLite format 3";  // with its NUL: 16 bytes

std::uint32_t BigEndian(const unsigned char* p, int n) {
  std::uint32_t v = 0;
  for (int i = 0; i < n; ++i) v = (v << 8) | p[i];
  return v;
}

// `wal_pending`: a non-empty -wal file lies beside the database (see below).
Status CheckHeader(const std::string& path, std::uint64_t file_bytes, bool wal_pending) {
  std::array<unsigned char, kHeaderBytes> h{};
  std::ifstream in(path, std::ios::binary);
  if (!in.read(reinterpret_cast<char*>(h.data()), h.size())) {
    if (file_bytes < kHeaderBytes) {
      return Status::Corruption(fmt::format("{} bytes: shorter than an SQLite header", file_bytes));
    }
    return Status::IoError("cannot read the header");
  }
  if (std::memcmp(h.data(), kMagic, sizeof kMagic) != 0) {
    return Status::Corruption("not an SQLite database (bad magic)");
  }
  std::uint64_t page_size = BigEndian(&h[16], 2);
  if (page_size == 1) page_size = 65536;
  if (page_size < 512 || (page_size & (page_size - 1)) != 0) {
    return Status::Corruption(fmt::format("bad page size {}", page_size));
  }
  // The in-header size is valid when the change counter matches
  // version-valid-for (always so since SQLite 3.7.0). But a process killed
  // during a WAL checkpoint leaves the file shorter than its header says (page
  // 1, with the new size, is written before the later pages) while the WAL
  // still holds every page: SQLite recovers that, so it is not truncation.
  const std::uint64_t pages = BigEndian(&h[28], 4);
  if (!wal_pending && BigEndian(&h[24], 4) == BigEndian(&h[92], 4) &&
      file_bytes < pages * page_size) {
    return Status::Corruption(fmt::format("truncated: {} bytes, the header says {} pages of {}",
                                          file_bytes, pages, page_size));
  }
  return Status::Ok();
}

Status CheckSchema(const std::string& path) {
  Db db;
  // Read-write (never create): a hot -wal is recovered as SqliteStore::Open
  // would, and the schema is read as it will be used.
  if (auto s = db.Open(path, SQLITE_OPEN_READWRITE); !s.ok()) return s;
  sqlite3_busy_timeout(db.get(), 5000);
  auto stmt = db.Prepare(
      "SELECT (SELECT user_version FROM pragma_user_version), "
      "(SELECT count(*) FROM sqlite_master), "
      "(SELECT count(*) FROM sqlite_master WHERE type = 'table' AND "
      "name IN ('meta', 'events', 'fts', 'replaced'))");
  if (!stmt.ok()) return stmt.status();
  const int rc = stmt->Step();
  if (rc != SQLITE_ROW) return db.Check(rc, "read schema");
  const auto version = stmt->Int(0), objects = stmt->Int(1), ours = stmt->Int(2);
  stmt->Reset();
  if (version > kPartitionSchemaVersion) {
    return Status::InvalidArgument(fmt::format("schema version {} is newer than this dashcam ({})",
                                               version, kPartitionSchemaVersion));
  }
  if (version == 0 && objects == 0) return Status::Ok();  // created, never written
  if (version == 0 || ours != 4) {
    return Status::Corruption(fmt::format(
        "not a dashcam partition (user_version {}, {} of its 4 tables)", version, ours));
  }
  return Status::Ok();
}

}  // namespace

Status CheckPartitionFile(const std::string& path) {
  std::error_code ec;
  const std::uint64_t bytes = fs::file_size(path, ec);
  if (ec) return Status::IoError(fmt::format("size of {}: {}", path, ec.message()));
  if (bytes == 0) return Status::Ok();  // SQLite takes it as an empty database
  const std::uint64_t wal_bytes = fs::file_size(path + "-wal", ec);
  if (auto s = CheckHeader(path, bytes, !ec && wal_bytes > 0); !s.ok()) return s;
  return CheckSchema(path);
}

}  // namespace dashcam::storage
