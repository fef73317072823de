#include "storage/sqlite_memory.h"

#include <sqlite3.h>

#include <algorithm>
#include <atomic>
#include <new>

#include <fmt/format.h>

namespace dashcam::storage {
namespace {

// Below this many pages a cache is never held back (see the header).
constexpr int kMinPages = 16;

// SQLite calls page cache methods without a context pointer (xCreate has
// none), so what they share lives here: set by Configure before SQLite
// starts, reset by ~SqliteMemory after it stops, and only read in between
// (held_bytes is atomic: connections on any thread change it).
struct SharedBudget {
  sqlite3_pcache_methods2 inner{};  // SQLite's own page cache
  std::int64_t budget_bytes = 0;    // 0: none
  std::atomic<std::int64_t> held_bytes{0};
  bool configured = false;
};

SharedBudget& Shared() {
  static SharedBudget shared;
  return shared;
}

// One connection's cache: SQLite's own, and what the budget needs of it.
// Used by one thread at a time, as every page cache is.
struct BudgetedCache {
  sqlite3_pcache* inner;
  std::int64_t page_bytes;
  bool purgeable;
  int own_max = 0;    // the cache_size SQLite last asked for, in pages
  int pages = 0;      // pages `inner` held at the last count
  bool held = false;  // inner's size is lowered to what it held then
};

BudgetedCache* Of(sqlite3_pcache* p) {
  return reinterpret_cast<BudgetedCache*>(p);
}

// Brings the shared count up to date with the pages `c` holds now.
void Recount(BudgetedCache* c) {
  const int now = Shared().inner.xPagecount(c->inner);
  if (now != c->pages) {
    Shared().held_bytes.fetch_add((now - c->pages) * c->page_bytes, std::memory_order_relaxed);
    c->pages = now;
  }
}

// Before `c` may take a page: hold it to what it has once the budget is
// reached; let it grow again once the caches are back under 7/8 of it.
void Steer(BudgetedCache* c) {
  const SharedBudget& s = Shared();
  if (s.budget_bytes <= 0 || !c->purgeable) return;
  const std::int64_t held = s.held_bytes.load(std::memory_order_relaxed);
  if (!c->held && held >= s.budget_bytes) {
    const int cap = std::max(c->pages, kMinPages);
    if (cap < c->own_max) {
      s.inner.xCachesize(c->inner, cap);
      c->held = true;
    }
  } else if (c->held && held < s.budget_bytes / 8 * 7) {
    s.inner.xCachesize(c->inner, c->own_max);
    c->held = false;
  }
}

int Init(void*) {
  return Shared().inner.xInit(Shared().inner.pArg);
}

void Shutdown(void*) {
  if (Shared().inner.xShutdown) Shared().inner.xShutdown(Shared().inner.pArg);
}

sqlite3_pcache* Create(int page_size, int extra_size, int purgeable) {
  sqlite3_pcache* inner = Shared().inner.xCreate(page_size, extra_size, purgeable);
  if (inner == nullptr) return nullptr;
  auto* c = new (std::nothrow)
      BudgetedCache{inner, static_cast<std::int64_t>(page_size) + extra_size, purgeable != 0};
  if (c == nullptr) Shared().inner.xDestroy(inner);
  return reinterpret_cast<sqlite3_pcache*>(c);
}

void Cachesize(sqlite3_pcache* p, int pages) {
  BudgetedCache* c = Of(p);
  c->own_max = pages;
  c->held = false;  // Steer holds it again if the budget is still reached
  Shared().inner.xCachesize(c->inner, pages);
  Recount(c);
}

int Pagecount(sqlite3_pcache* p) {
  return Shared().inner.xPagecount(Of(p)->inner);
}

sqlite3_pcache_page* Fetch(sqlite3_pcache* p, unsigned key, int create) {
  BudgetedCache* c = Of(p);
  if (create == 0) return Shared().inner.xFetch(c->inner, key, 0);
  Steer(c);
  sqlite3_pcache_page* page = Shared().inner.xFetch(c->inner, key, create);
  Recount(c);
  return page;
}

void Unpin(sqlite3_pcache* p, sqlite3_pcache_page* page, int discard) {
  BudgetedCache* c = Of(p);
  Shared().inner.xUnpin(c->inner, page, discard);
  Recount(c);  // SQLite's cache may free the page even without `discard`
}

void Rekey(sqlite3_pcache* p, sqlite3_pcache_page* page, unsigned old_key, unsigned new_key) {
  Shared().inner.xRekey(Of(p)->inner, page, old_key, new_key);
}

void Truncate(sqlite3_pcache* p, unsigned limit) {
  BudgetedCache* c = Of(p);
  Shared().inner.xTruncate(c->inner, limit);
  Recount(c);
}

void Destroy(sqlite3_pcache* p) {
  BudgetedCache* c = Of(p);
  Shared().held_bytes.fetch_sub(c->pages * c->page_bytes, std::memory_order_relaxed);
  Shared().inner.xDestroy(c->inner);
  delete c;
}

void Shrink(sqlite3_pcache* p) {
  BudgetedCache* c = Of(p);
  Shared().inner.xShrink(c->inner);
  Recount(c);
}

Status ConfigError(int rc, const char* what) {
  return Status::Internal(
      fmt::format("sqlite3_config({}): {} (SQLite already in use?)", what, sqlite3_errstr(rc)));
}

}  // namespace

Result<std::unique_ptr<SqliteMemory>> SqliteMemory::Configure(std::size_t page_cache_bytes) {
  SharedBudget& s = Shared();
  if (s.configured) return Status::Internal("SQLite's memory is configured already");
  if (int rc = sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0); rc != SQLITE_OK) {
    return ConfigError(rc, "MEMSTATUS");
  }
  if (int rc = sqlite3_config(SQLITE_CONFIG_GETPCACHE2, &s.inner); rc != SQLITE_OK) {
    return ConfigError(rc, "GETPCACHE2");
  }
  s.budget_bytes = static_cast<std::int64_t>(page_cache_bytes);
  s.held_bytes = 0;
  const sqlite3_pcache_methods2 budgeted{1,         nullptr,   Init,  Shutdown, Create,
                                         Cachesize, Pagecount, Fetch, Unpin,    Rekey,
                                         Truncate,  Destroy,   Shrink};
  if (int rc = sqlite3_config(SQLITE_CONFIG_PCACHE2, &budgeted); rc != SQLITE_OK) {
    return ConfigError(rc, "PCACHE2");
  }
  s.configured = true;
  // From here on, its destructor undoes the above if what follows fails.
  std::unique_ptr<SqliteMemory> memory(new SqliteMemory());
  if (int rc = sqlite3_initialize(); rc != SQLITE_OK) {
    return Status::Internal(fmt::format("sqlite3_initialize: {}", sqlite3_errstr(rc)));
  }
  return memory;
}

SqliteMemory::~SqliteMemory() {
  sqlite3_shutdown();
  // SQLite's defaults again, for whatever runs SQLite in this process next.
  SharedBudget& s = Shared();
  sqlite3_config(SQLITE_CONFIG_PCACHE2, &s.inner);
  sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 1);
  s.budget_bytes = 0;
  s.configured = false;
}

std::uint64_t SqliteMemory::PageCacheBytes() const {
  return static_cast<std::uint64_t>(
      std::max<std::int64_t>(0, Shared().held_bytes.load(std::memory_order_relaxed)));
}

}  // namespace dashcam::storage
