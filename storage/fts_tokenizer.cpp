#include "storage/fts_tokenizer.h"

#include <string>
#include <string_view>

#include "storage/attrs_codec.h"
#include "storage/sqlite_db.h"
#include "storage/text_tokenizer.h"

namespace dashcam::storage {
namespace {

using TokenCallback = int (*)(void*, int, const char*, int, int, int);

// Feeds tokens to FTS5 (and expandable ones to the sink, if any);
// remembers the first non-OK code so tokenizing stops.
class Emitter {
 public:
  Emitter(void* ctx, TokenCallback cb, IndexedTermSink* sink) : ctx_(ctx), cb_(cb), sink_(sink) {}

  bool Emit(std::string_view token, std::size_t begin, std::size_t end) {
    rc_ = cb_(ctx_, 0, token.data(), static_cast<int>(token.size()), static_cast<int>(begin),
              static_cast<int>(end));
    return rc_ == SQLITE_OK;
  }
  bool EmitExpandable(std::string_view token, std::size_t begin, std::size_t end) {
    if (sink_ != nullptr) sink_->OnIndexedTerm(token);
    return Emit(token, begin, end);
  }
  void FieldValue(std::string_view name, char type, std::string_view value) {
    if (sink_ != nullptr) sink_->OnFieldValue(name, type, value);
  }
  int rc() const { return rc_; }

 private:
  void* ctx_;
  TokenCallback cb_;
  IndexedTermSink* sink_;
  int rc_ = SQLITE_OK;
};

bool TokenizeText(std::string_view text, std::size_t base, Emitter& out) {
  bool ok = true;
  TextTokenizer::Tokenize(text, [&](const TokenSpan& t) {
    ok = out.EmitExpandable(t.token, base + t.begin, base + t.end);
    return ok;
  });
  return ok;
}

// One attrs record: name 0x1F type value. `base` is its offset in the column.
bool TokenizeRecord(std::string_view rec, std::size_t base, std::string_view prev_name,
                    std::string& buf, Emitter& out) {
  const std::size_t sep = rec.find(kNameSeparator);
  if (sep == std::string_view::npos || sep + 1 >= rec.size()) {
    return true;  // malformed or empty record: nothing to index
  }
  const std::string_view name = rec.substr(0, sep);
  const char type = rec[sep + 1];
  const std::string_view value = rec.substr(sep + 2);
  const std::size_t value_base = base + sep + 2;
  out.FieldValue(name, type, value);
  buf.assign(name);
  buf.push_back(kNameSeparator);
  const std::size_t prefix_len = buf.size();
  if (type == 'k') {  // one term; no phrase can span two of an array's values
    buf.push_back(kKeywordMark);
    buf.append(CutUtf8(value, kMaxKeywordBytes));
    return out.EmitExpandable(buf, value_base, value_base + value.size());
  }
  if (name == prev_name) {
    buf.push_back(kArraySeparator);
    if (!out.Emit(buf, base, base)) return false;
    buf.resize(prefix_len);
  }
  if (type == 'n') {
    buf.push_back(kNumberMark);
    buf.append(value.substr(0, TextTokenizer::kMaxTokenBytes));
    return out.Emit(buf, value_base, value_base + value.size());
  }
  bool ok = true, any = name == prev_name;
  TextTokenizer::Tokenize(value, [&](const TokenSpan& t) {
    buf.resize(prefix_len);
    buf.append(t.token);
    ok = out.EmitExpandable(buf, value_base + t.begin, value_base + t.end);
    any = true;
    return ok;
  });
  if (ok && !any) {  // a value of no tokens still says the field is there
    buf.resize(prefix_len);
    buf.push_back(kArraySeparator);
    ok = out.Emit(buf, value_base, value_base);
  }
  return ok;
}

bool TokenizeAttrs(std::string_view text, std::size_t base, Emitter& out) {
  std::string buf;
  std::string_view prev_name;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    std::size_t end = text.find(kRecordSeparator, pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view rec = text.substr(pos, end - pos);
    if (!TokenizeRecord(rec, base + pos, prev_name, buf, out)) return false;
    prev_name = rec.substr(0, rec.find(kNameSeparator));
    pos = end + 1;
  }
  return true;
}

// The handle FTS5 keeps per table and connection: the connection's sink, or
// this placeholder when it has none (FTS5 needs a non-null handle).
int no_sink;

int XCreate(void* context, const char**, int, Fts5Tokenizer** out) {
  *out = reinterpret_cast<Fts5Tokenizer*>(context != nullptr ? context : &no_sink);
  return SQLITE_OK;
}

void XDelete(Fts5Tokenizer*) {}

int XTokenize(Fts5Tokenizer* handle, void* ctx, int flags, const char* text, int n,
              TokenCallback cb) {
  if (n <= 0) return SQLITE_OK;
  const std::string_view all(text, static_cast<std::size_t>(n));
  IndexedTermSink* sink = nullptr;
  if ((flags & FTS5_TOKENIZE_DOCUMENT) != 0 && reinterpret_cast<void*>(handle) != &no_sink) {
    sink = reinterpret_cast<IndexedTermSink*>(handle);
  }
  Emitter out(ctx, cb, sink);
  if (all[0] == kRawTermMarker) {
    if (all.size() > 1) out.Emit(all.substr(1), 0, all.size());
  } else if (all[0] == kAttrsMarker) {
    TokenizeAttrs(all.substr(1), 1, out);
  } else if (all[0] == kMessageMarker) {
    TokenizeText(all.substr(1), 1, out);
  } else {
    TokenizeText(all, 0, out);
  }
  return out.rc();
}

}  // namespace

Result<fts5_api*> Fts5Api(sqlite3* db) {
  sqlite3_stmt* raw = nullptr;
  int rc = sqlite3_prepare_v2(db, "SELECT fts5(?1)", -1, &raw, nullptr);
  if (rc != SQLITE_OK) return SqliteStatus(rc, db, "fts5 api");
  Stmt stmt(raw);
  fts5_api* api = nullptr;
  sqlite3_bind_pointer(raw, 1, &api, "fts5_api_ptr", nullptr);
  stmt.Step();
  if (api == nullptr) return Status::Internal("FTS5 is not available in this SQLite build");
  return api;
}

Status RegisterFtsTokenizer(sqlite3* db, IndexedTermSink* sink) {
  auto api = Fts5Api(db);
  if (!api.ok()) return api.status();
  static fts5_tokenizer tokenizer{XCreate, XDelete, XTokenize};
  const int rc = (*api)->xCreateTokenizer(*api, kFtsTokenizerName, sink, &tokenizer, nullptr);
  return SqliteStatus(rc, db, "register tokenizer");
}

}  // namespace dashcam::storage
