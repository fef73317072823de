// DocumentParser: one JSON document (a `_bulk` source line, an NDJSON line,
// a Beats event) -> a storage::Record. This is dashcam's event model (the
// field rules live in storage/document_reader.h, shared with query-time
// readers of stored documents):
//
//   ts_ms    `@timestamp`: an RFC 3339 string (any fraction, any offset) or
//            epoch milliseconds; missing -> arrival time; malformed or outside
//            [1970, 2200) -> error (as Elasticsearch rejects it).
//   message  `message`, else `msg`, else `log` when it is a string.
//   level    `log.level`, else `level` (a string).
//   fields   every other value, nested objects flattened to dotted names
//            (`host.name`), arrays giving one field per element, numbers and
//            booleans kept typed, nulls dropped. `message` and `@timestamp`
//            are not repeated as fields; `msg`/`log`/`level` are.
//   source   the document's text, unchanged unless redaction masked
//            something in it (see document_redactor.h).
//
// With a Redactor, every document is redacted before it is read, so the
// message, the fields and the source all hold the masked text; error
// messages are redacted too, since they may quote the document.
//
// With InsightDetectors, the (redacted) message, else `error.message`, is
// run through them; a detected failure adds the fields `insight.kind`,
// `insight.severity` and `insight.<fact>` (numbers typed), and the source
// gets a top-level object {"kind":..,"severity":..,<fact>:..} under
// "insight". dashcam owns that name: a client's top-level `insight` member
// (or `insight.*` dotted key) is dropped from the fields and the source, so
// no client can forge or hide the server's verdict. Without detectors the
// documents are kept as sent, `insight` being an ordinary field.
//
// With detectors, training runs are followed too:
//   - the metrics of train_metrics.h that the client did not send as
//     `train.<name>` go into the source as `"train":{"loss":0.43,...}`,
//     and only there: storage does not index `train.*` (attrs_codec.h), so
//     every query on them reads the stored document
//     (storage/row_predicate.h), and they are not added to Record::fields.
//     A document with its own top-level `train` is kept as sent (the
//     client's values are then the ones queries see);
//   - run_identity.h gives `run.id`, `run.rank` and `run.end` fields
//     (those the client did not send), Record::group = run.id and
//     Record::group_end for a finishing line; when a run.id, rank or end
//     was derived and the document has no top-level `run` of its own, the
//     source gets `"run":{"id":..,"rank":..,"end":"finished"}`;
//     the order is: the document's members, `train`, `run`, `insight`;
//   - with TrainingAnomalies, a NaN loss, a loss spike or a grad-norm
//     explosion becomes the event's insight (nan_loss / loss_spike /
//     grad_explosion) when no detector pattern already gave it a kind.
//
// Parsing uses simdjson On Demand. A parser is not thread-safe: use one per
// thread (ParserPool hands them out).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string_view>
#include <vector>

#include <simdjson.h>

#include "ingest/document_redactor.h"
#include "ingest/insight_detectors.h"
#include "ingest/redactor.h"
#include "ingest/run_identity.h"
#include "ingest/train_metrics.h"
#include "ingest/training_anomalies.h"
#include "storage/document_reader.h"
#include "storage/record.h"

namespace dashcam::ingest {

using storage::DocumentLimits;

class DocumentParser {
 public:
  // `redactor` may be null (no redaction), `detectors` too (no insights,
  // metrics or runs), `anomalies` too (no numeric insights; used only with
  // detectors); all must outlive the parser.
  explicit DocumentParser(DocumentLimits limits = {}, const Redactor* redactor = nullptr,
                          const InsightDetectors* detectors = nullptr,
                          TrainingAnomalies* anomalies = nullptr);

  // REQUIRES: `capacity - json.size() >= simdjson::SIMDJSON_PADDING`, i.e. the
  // bytes after `json` up to `capacity` are readable (their content is not).
  // Errors: InvalidArgument naming the problem.
  Result<storage::Record> Parse(std::string_view json, std::size_t capacity, TimeMs arrival);

 private:
  void AddInsight(std::string_view json, std::size_t capacity, storage::Record& rec);
  void DropClientInsight(std::string_view json, std::size_t capacity, storage::Record& rec);
  // Adds the derived `train` and `run` members and run.* fields; true when
  // an anomaly was found (in insight_).
  bool AddTraining(bool has_kind, storage::Record& rec);
  void AddRun(const RunIdentity& run, storage::Record& rec);
  // Whether the client's document has its own top-level member `name`.
  bool HasOwnMember(std::uint32_t member, std::string_view name,
                    const std::vector<storage::Field>& fields) const;

  storage::DocumentReader reader_;
  storage::DocumentView view_;  // reused between documents
  const Redactor* redactor_;
  std::unique_ptr<DocumentRedactor> doc_redactor_;  // set when redactor_ is
  std::string redacted_;                            // the rewritten document, padded
  RedactionHits hits_;
  const InsightDetectors* detectors_;
  Insight insight_;  // reused between documents
  TrainingAnomalies* anomalies_;
  TrainMetrics metrics_;
  Insight anomaly_;                 // reused between documents
  std::uint32_t members_ = 0;       // the document's watched top-level members
  simdjson::ondemand::parser top_;  // for rewriting a client's top-level members
};

// A pool of parsers so worker threads need not own one each.
class ParserPool {
 public:
  explicit ParserPool(DocumentLimits limits = {}, const Redactor* redactor = nullptr,
                      const InsightDetectors* detectors = nullptr,
                      TrainingAnomalies* anomalies = nullptr)
      : limits_(limits), redactor_(redactor), detectors_(detectors), anomalies_(anomalies) {}

  class Lease {
   public:
    Lease(ParserPool& pool, std::unique_ptr<DocumentParser> p) : pool_(pool), p_(std::move(p)) {}
    ~Lease();
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    DocumentParser& operator*() { return *p_; }
    DocumentParser* operator->() { return p_.get(); }

   private:
    ParserPool& pool_;
    std::unique_ptr<DocumentParser> p_;
  };

  Lease Acquire();

 private:
  const DocumentLimits limits_;
  const Redactor* const redactor_;
  const InsightDetectors* const detectors_;
  TrainingAnomalies* const anomalies_;
  std::mutex mu_;
  std::vector<std::unique_ptr<DocumentParser>> idle_;  // guarded by mu_
};

// A copy of `data` with simdjson's padding after it.
std::string PadForParsing(std::string_view data);

}  // namespace dashcam::ingest
