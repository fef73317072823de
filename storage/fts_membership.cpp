#include "storage/fts_membership.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "storage/fts_query_compiler.h"
#include "storage/sqlite_db.h"

namespace dashcam::storage {
namespace {

// Seeks out of step before the whole set is read instead: one for a count
// that scans oldest first after the guess of newest first, a few more for
// a scan that restarts.
constexpr int kMaxSeeks = 4;
// Steps a walk takes towards a key before it seeks there instead: a scan
// that asks few, scattered keys (the rows a rare term picked) would
// otherwise step through every match between them. A seek costs tens of
// microseconds, a step about a tenth of one.
constexpr int kStepsBeforeSkip = 256;

// The matches of one expression, walked in step with a scan or held sorted.
class Membership {
 public:
  Membership(sqlite3* db, std::string fts, std::string desc_sql, std::string asc_sql,
             std::string all_sql)
      : db_(db),
        fts_(std::move(fts)),
        desc_sql_(std::move(desc_sql)),
        asc_sql_(std::move(asc_sql)),
        all_sql_(std::move(all_sql)),
        whole_(desc_sql_.empty() || asc_sql_.empty()),
        costly_seeks_(HasPrefixTerm(fts_)) {}

  // Whether `key` is a match; an SQLite error code on failure.
  int Has(std::int64_t key, bool& has) {
    if (costly_seeks_ && !whole_) return HasFromTop(key, has);
    if (!whole_ && started_ && OutOfStep(key) && ++seeks_ > kMaxSeeks) whole_ = true;
    if (whole_) {
      if (!read_) {
        if (const int rc = ReadAll(); rc != SQLITE_OK) return rc;
      }
      has = std::binary_search(all_.begin(), all_.end(), key);
      return SQLITE_OK;
    }
    // Newest first is the guess: hits are read that way.
    const int rc = !started_        ? Seek(true, key)
                   : OutOfStep(key) ? Seek(key < last_, key)
                                    : Advance(key);
    if (rc != SQLITE_OK) return rc;
    started_ = true;
    last_ = key;
    has = !done_ && at_ == key;
    return SQLITE_OK;
  }

 private:
  // An expression with a prefix term: FTS5 merges every doclist of the
  // prefix's terms again at each seek, whatever the rowid bound. So one
  // walk, newest first from the top, goes down as far as the lowest key
  // asked and keeps what it passed: a search that stops early reads little,
  // a count (oldest first) reads the whole set at its first key, and
  // neither merges twice.
  int HasFromTop(std::int64_t key, bool& has) {
    if (!started_) {
      if (const int rc = Seek(true, std::numeric_limits<std::int64_t>::max()); rc != SQLITE_OK) {
        return rc;
      }
      started_ = true;
    }
    while (!done_ && at_ > key) {
      passed_.push_back(at_);
      if (const int rc = Step(); rc != SQLITE_OK) return rc;
    }
    has = (!done_ && at_ == key) ||
          std::binary_search(passed_.begin(), passed_.end(), key, std::greater<>());
    return SQLITE_OK;
  }

  bool OutOfStep(std::int64_t key) const { return descending_ ? key > last_ : key < last_; }

  int Prepare(const std::string& sql, Stmt& stmt) {
    if (stmt) return SQLITE_OK;
    sqlite3_stmt* s = nullptr;
    const int rc =
        sqlite3_prepare_v3(db_, sql.data(), static_cast<int>(sql.size()), 0, &s, nullptr);
    stmt = Stmt(s);
    return rc;
  }

  // Positions the walk at the first match at or past `key` in `descending`
  // order.
  int Seek(bool descending, std::int64_t key) {
    descending_ = descending;
    Stmt& stmt = descending ? desc_ : asc_;
    if (const int rc = Prepare(descending ? desc_sql_ : asc_sql_, stmt); rc != SQLITE_OK) return rc;
    walk_ = &stmt;
    stmt.Reset();
    stmt.BindStatic(1, fts_);
    stmt.Bind(2, key);
    return Step();
  }

  int Advance(std::int64_t key) {
    for (int steps = 0; !done_ && (descending_ ? at_ > key : at_ < key); ++steps) {
      if (steps == kStepsBeforeSkip) return Seek(descending_, key);
      if (const int rc = Step(); rc != SQLITE_OK) return rc;
    }
    return SQLITE_OK;
  }

  int Step() {
    const int rc = walk_->Step();
    done_ = rc != SQLITE_ROW;
    if (rc == SQLITE_ROW) at_ = walk_->Int(0);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? SQLITE_OK : rc;
  }

  int ReadAll() {
    Stmt stmt;
    if (const int rc = Prepare(all_sql_, stmt); rc != SQLITE_OK) return rc;
    stmt.BindStatic(1, fts_);
    int rc = SQLITE_OK;
    while ((rc = stmt.Step()) == SQLITE_ROW) all_.push_back(stmt.Int(0));
    if (rc != SQLITE_DONE) return rc;
    std::sort(all_.begin(), all_.end());
    read_ = true;
    return SQLITE_OK;
  }

  sqlite3* db_;
  std::string fts_, desc_sql_, asc_sql_, all_sql_;
  Stmt desc_, asc_;
  Stmt* walk_ = nullptr;              // desc_ or asc_, once a seek ran
  bool whole_;                        // answer from all_
  bool read_ = false;                 // all_ holds every match
  bool costly_seeks_;                 // a seek reads every match (a prefix term)
  std::vector<std::int64_t> passed_;  // HasFromTop's matches above at_, descending
  std::vector<std::int64_t> all_;
  bool started_ = false;
  bool descending_ = true;
  std::int64_t last_ = 0;  // the key asked last
  bool done_ = true;       // the walk is past its last match
  std::int64_t at_ = 0;    // the walk's current match
  int seeks_ = 0;
};

void Fail(sqlite3_context* ctx, sqlite3* db, int rc) {
  sqlite3_result_error(ctx, sqlite3_errmsg(db), -1);
  sqlite3_result_error_code(ctx, rc);
}

void FtsHasFunction(sqlite3_context* ctx, int, sqlite3_value** argv) {
  sqlite3* db = sqlite3_context_db_handle(ctx);
  auto* state = static_cast<Membership*>(sqlite3_get_auxdata(ctx, 1));
  std::unique_ptr<Membership> once;  // when SQLite keeps no auxiliary data
  if (state == nullptr) {
    auto fresh = std::make_unique<Membership>(
        db, std::string(ValueText(argv[1])), std::string(ValueText(argv[2])),
        std::string(ValueText(argv[3])), std::string(ValueText(argv[4])));
    sqlite3_set_auxdata(ctx, 1, fresh.release(),
                        [](void* p) { delete static_cast<Membership*>(p); });
    state = static_cast<Membership*>(sqlite3_get_auxdata(ctx, 1));
    if (state == nullptr) {
      once = std::make_unique<Membership>(
          db, std::string(ValueText(argv[1])), std::string(ValueText(argv[2])),
          std::string(ValueText(argv[3])), std::string(ValueText(argv[4])));
      state = once.get();
    }
  }
  bool has = false;
  if (const int rc = state->Has(sqlite3_value_int64(argv[0]), has); rc != SQLITE_OK) {
    return Fail(ctx, db, rc);
  }
  sqlite3_result_int(ctx, has ? 1 : 0);
}

}  // namespace

Status RegisterFtsMembership(sqlite3* db) {
  const int rc = sqlite3_create_function_v2(db, "dc_fts_has", 5, SQLITE_UTF8, nullptr,
                                            &FtsHasFunction, nullptr, nullptr, nullptr);
  return SqliteStatus(rc, db, "register dc_fts_has");
}

}  // namespace dashcam::storage
