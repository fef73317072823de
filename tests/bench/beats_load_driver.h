// BeatsLoadDriver: sends the corpus once over the Beats protocol (Filebeat's
// output.logstash), the way Filebeat does by default: windows of `batch`
// events, each one zlib-compressed C frame (level 3), two windows in flight
// per connection (pipelining 2), over `connections` connections, one thread
// each. Connections take the next unsent window from a shared counter. A
// window counts as stored when its final ACK (seq == count) arrives;
// keepalive ACKs (seq 0) are skipped.
//
// Windows are encoded before the clock starts, so the client does not steal
// the server's cores while it is measured.
//
// Thread-safety: DriveBeatsLoad blocks until every window is ACKed or given
// up; `corpus` must not change meanwhile.
#pragma once

#include <cstdint>

#include "tests/bench/event_corpus.h"

namespace dashcam::bench {

struct BeatsLoadResult {
  double seconds = 0;  // wall time, first send to last ACK
  int64_t events_ok = 0;
  int64_t failed_windows = 0;  // no final ACK (connection lost or timed out)
};

BeatsLoadResult DriveBeatsLoad(uint16_t port, const EventCorpus& corpus, int batch,
                               int connections);

}  // namespace dashcam::bench
