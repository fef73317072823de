#include "storage/fts_tokenizer.h"

#include <algorithm>
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
  // The sink is told the term as the vocabulary spells it (UnledTerm).
  bool EmitExpandable(std::string_view token, std::size_t begin, std::size_t end) {
    if (sink_ != nullptr) sink_->OnIndexedTerm(UnledTerm(token));
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

// One attrs record: name 0x1F type value. `base` is its offset in the column;
// `lead`: the terms start with kFieldTermLead (attrs_codec.h).
bool TokenizeRecord(std::string_view rec, std::size_t base, std::string_view prev_name, bool lead,
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
  buf.assign(lead ? 1 : 0, kFieldTermLead);
  buf.append(name);
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

bool TokenizeAttrs(std::string_view text, std::size_t base, bool lead, Emitter& out) {
  std::string buf;
  std::string_view prev_name;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    std::size_t end = text.find(kRecordSeparator, pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view rec = text.substr(pos, end - pos);
    if (!TokenizeRecord(rec, base + pos, prev_name, lead, buf, out)) return false;
    prev_name = rec.substr(0, rec.find(kNameSeparator));
    pos = end + 1;
  }
  return true;
}

// A one-column event (attrs_codec.h): the message, then the records.
bool TokenizeEvent(std::string_view text, bool lead, Emitter& out) {
  if (text.size() < 4) return true;  // malformed: nothing to index
  std::size_t n = 0;
  for (int i = 0; i < 4; ++i) n |= std::size_t{static_cast<unsigned char>(text[i])} << (8 * i);
  n = std::min(n, text.size() - 4);
  if (!TokenizeText(text.substr(4, n), 5, out)) return false;
  return n + 4 == text.size() || TokenizeAttrs(text.substr(4 + n), 5 + n, lead, out);
}

// A raw term, led when it is a field's (attrs_codec.h).
bool EmitRaw(std::string_view term, bool field, bool lead, Emitter& out) {
  if (term.empty()) return true;
  if (!lead || !(field || term.find(kNameSeparator) != std::string_view::npos)) {
    return out.Emit(term, 0, term.size() + 1);
  }
  std::string led(1, kFieldTermLead);
  led.append(term);
  return out.Emit(led, 0, term.size() + 1);
}

// What FTS5 keeps per table and connection: the connection's sink (null
// when it has none), and whether the table spells field terms with the lead.
struct Handle {
  IndexedTermSink* sink;
  bool lead;
};

// The one argument a table may give the tokenizer (attrs_codec.h).
constexpr std::string_view kFieldLeadArgument = "field_lead";

int XCreate(void* context, const char** args, int n_args, Fts5Tokenizer** out) {
  bool lead = false;
  for (int i = 0; i < n_args; ++i) {
    if (args[i] == kFieldLeadArgument) {
      lead = true;
    } else {
      return SQLITE_ERROR;  // a table of a newer dashcam: not read wrongly
    }
  }
  *out = reinterpret_cast<Fts5Tokenizer*>(new Handle{static_cast<IndexedTermSink*>(context), lead});
  return SQLITE_OK;
}

void XDelete(Fts5Tokenizer* handle) {
  delete reinterpret_cast<Handle*>(handle);
}

int XTokenize(Fts5Tokenizer* tokenizer, void* ctx, int flags, const char* text, int n,
              TokenCallback cb) {
  if (n <= 0) return SQLITE_OK;
  const std::string_view all(text, static_cast<std::size_t>(n));
  const Handle& handle = *reinterpret_cast<const Handle*>(tokenizer);
  IndexedTermSink* sink = (flags & FTS5_TOKENIZE_DOCUMENT) != 0 ? handle.sink : nullptr;
  Emitter out(ctx, cb, sink);
  switch (all[0]) {
    case kRawTermMarker:
    case kRawFieldTermMarker:
      EmitRaw(all.substr(1), all[0] == kRawFieldTermMarker, handle.lead, out);
      break;
    case kEventMarker:
      TokenizeEvent(all.substr(1), handle.lead, out);
      break;
    case kAttrsMarker:
      TokenizeAttrs(all.substr(1), 1, handle.lead, out);
      break;
    case kMessageMarker:
      TokenizeText(all.substr(1), 1, out);
      break;
    default:
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
