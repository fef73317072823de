// The one-line text form of an event, for terminals (`format=text`):
//
//   2026-11-29T10:23:15.123Z ERROR gpu-node-07 RuntimeError: CUDA out of memory
//
// timestamp (UTC, milliseconds), level, host (`host.name`, else
// `host.hostname`, else `host` when it is a string), message; a missing
// part is `-`. An event without a message shows its stored document
// instead. Line breaks inside the text are written as \n and \r (and a
// backslash as \\) so that each event is exactly one line.
//
// Thread-safety: an EventLineFormatter is not thread-safe (it owns a
// DocumentReader); use one per request.
#pragma once

#include <string>

#include "storage/document_reader.h"
#include "storage/record.h"

namespace dashcam::api {

class EventLineFormatter {
 public:
  // Appends the event's line, ending in '\n', to `out`.
  void Append(const storage::StoredEvent& ev, std::string& out);

 private:
  storage::DocumentReader reader_;
  storage::DocumentView view_;
};

}  // namespace dashcam::api
