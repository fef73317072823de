// SQLite's process-wide memory settings. sqlite3_config takes them only
// before the library's first use, so the program makes one SqliteMemory
// before it opens any connection and destroys it after the last has closed.
//
// Memory statistics are turned off. With them on (SQLite's default), every
// sqlite3_malloc and sqlite3_free of every connection takes one mutex of the
// process, and FTS5 allocates for each index page it reads: a search reading
// two days on two threads spent a fifth of its CPU waiting for that mutex or
// waking its waiters (perf, 4M events over 2 days), and took twice as long.
//
// What bounds memory instead: SQLite's own page cache, wrapped
// (SQLITE_CONFIG_PCACHE2) so that the page caches of every connection share
// one budget. Once they hold `page_cache_bytes` together, a cache that
// wants another page reuses one it already holds, as the soft heap limit made
// it do before (that limit needs the statistics); below 7/8 of the budget,
// caches grow again up to their own cache_size. A cache is never held under
// 16 pages, and one whose pages are all in use (read by a statement now, or
// changed by a transaction not yet committed) still gets another: nothing
// fails or waits for want of the budget, so it is a soft bound, exceeded by
// about 16 pages a reading connection. (SQLITE_CONFIG_PAGECACHE's fixed
// pool would bound the same, but SQLite writes to every slot when it starts,
// so the whole pool is resident from the first second.)
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "storage/status.h"

namespace dashcam::storage {

class SqliteMemory {
 public:
  // 0: no budget; each page cache grows to its connection's cache_size.
  // Fails (as a Status) if SQLite is already in use in this process, or a
  // SqliteMemory already exists.
  static Result<std::unique_ptr<SqliteMemory>> Configure(std::size_t page_cache_bytes);

  // Shuts SQLite down: every connection must be closed by now.
  ~SqliteMemory();
  SqliteMemory(const SqliteMemory&) = delete;
  SqliteMemory& operator=(const SqliteMemory&) = delete;

  // Bytes the page caches of every connection hold now. Any thread.
  std::uint64_t PageCacheBytes() const;

 private:
  SqliteMemory() = default;
};

}  // namespace dashcam::storage
