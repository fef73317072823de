// Fuzz target: secret redaction (runs on every untrusted string before it is
// stored). Checks, with the default rules:
//   - no crash;
//   - RedactText reports a change exactly when it records a hit, and its
//     output is at most kMaxGrowth times the input plus one mask;
//   - idempotent: redacting the output again changes nothing;
//   - for input that is a JSON object, DocumentRedactor's output is within
//     the same bound and stable: a second pass masks no text (only
//     secret-named fields, whose mask is rewritten as it was), yields the
//     same document apart from the top-level "redacted" list (which dashcam
//     rebuilds from each pass's own hits), and a third pass changes nothing.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

#include <simdjson.h>

#include "ingest/document_redactor.h"
#include "ingest/redactor.h"

namespace {

using dashcam::ingest::DocumentRedactor;
using dashcam::ingest::RedactionHits;
using dashcam::ingest::Redactor;

const Redactor& DefaultRedactor() {
  static const std::unique_ptr<Redactor> r = [] {
    auto created = Redactor::Create({});
    if (!created.ok()) std::abort();
    return std::move(*created);
  }();
  return *r;
}

bool WithinBound(std::size_t in, std::size_t out) {
  return out <= in * Redactor::kMaxGrowth + 64;
}

void CheckText(const Redactor& r, std::string_view in) {
  std::string out;
  RedactionHits hits;
  if (!r.RedactText(in, out, hits)) {
    if (!hits.empty()) std::abort();
    return;
  }
  if (hits.empty() || !WithinBound(in.size(), out.size())) std::abort();
  std::string again;
  RedactionHits again_hits;
  if (r.RedactText(out, again, again_hits)) std::abort();
}

// One DocumentRedactor pass; the document itself when it is kept as it is.
struct Pass {
  bool ok = false;
  std::string doc;
  RedactionHits hits;
};

Pass RedactDocument(DocumentRedactor& d, std::string_view json) {
  std::string padded(json);
  padded.append(simdjson::SIMDJSON_PADDING, ' ');
  Pass p;
  auto changed =
      d.Redact(std::string_view(padded.data(), json.size()), padded.size(), p.doc, p.hits);
  p.ok = changed.ok();
  if (p.ok && !*changed) p.doc = std::string(json);
  return p;
}

// `doc` without the `"redacted":[...]` member that DocumentRedactor appends
// last (rule names hold no brackets, so the last occurrence is that one).
std::string WithoutHitList(const std::string& doc) {
  const auto at = doc.rfind("\"redacted\":[");
  if (at == std::string::npos || doc.size() < 2 || doc.compare(doc.size() - 2, 2, "]}") != 0) {
    return doc;
  }
  const std::size_t from = doc[at - 1] == ',' ? at - 1 : at;
  return doc.substr(0, from) + "}";
}

void CheckDocument(const Redactor& r, std::string_view in) {
  const auto first = in.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos || in[first] != '{') return;
  static DocumentRedactor d(r);
  const Pass once = RedactDocument(d, in);
  if (!once.ok) return;
  if (!WithinBound(in.size(), once.doc.size())) std::abort();
  const Pass twice = RedactDocument(d, once.doc);
  if (!twice.ok) std::abort();
  for (auto id : twice.hits.ids()) {
    if (id != r.secret_field_rule()) std::abort();  // text masked twice
  }
  if (WithoutHitList(twice.doc) != WithoutHitList(once.doc)) std::abort();
  const Pass thrice = RedactDocument(d, twice.doc);
  if (!thrice.ok || thrice.doc != twice.doc) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const Redactor& r = DefaultRedactor();
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  CheckText(r, in);
  CheckDocument(r, in);
  return 0;
}
