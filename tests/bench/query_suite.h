// QuerySuite: phase 6 of dashcam_bench. A fixed table of requests a person
// exploring training logs makes, one of each kind the query language and the
// exploration API offer (rare phrase, common term, phrase AND fields, field
// values, prefix, leading wildcard, regex, numeric ranges, _exists_ and
// missing, histogram of everything and of a query, facets of everything, and
// a context request around a hit), each timed by TimeGet (query_latency.h):
// median client wall time, median server CPU per run, and the answer's total.
//
// Where the corpus can say what a search must find (the generator's messages
// and JSON are regular enough for a substring test) the reference count is
// printed beside the answer's total. ExpectedTotals counts those as the
// events are generated, chunk by chunk, so the corpus need not be kept. Where the issue sets a
// target (selective searches of <= 1000 hits: 20 ms median; a histogram of every event: 300 ms) it
// is printed in the unit text beside the figure; nothing is asserted.
//
// Output lines, per probe `query.<name>.`: `q` (the request), `median_ms`,
// `server_cpu_ms`, `total`, `expected`; a failed probe prints `error`.
//
// Thread-safety: blocks; one call at a time per server.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "tests/bench/event_corpus.h"
#include "tests/bench/watchdog.h"

namespace dashcam::bench {

struct QuerySuiteOptions {
  std::string prefix = "query";  // of every metric's name
  int limit = 100;               // search hits per answer (newest first)
  int warmups = 1;
  int runs = 7;
};

// Per probe of the table, how many events it must find, for the probes
// whose reference the corpus gives.
class ExpectedTotals {
 public:
  ExpectedTotals();
  // Adds what `chunk`'s events contribute. Every event must be counted once.
  void Count(const EventCorpus& chunk);
  // Indexed like the probe table (query_suite.cpp).
  const std::vector<std::int64_t>& per_probe() const { return per_probe_; }

 private:
  std::vector<std::int64_t> per_probe_;
};

// Runs every probe against the server on `port` (`server_pid` for CPU time),
// ticking `watchdog` after each. Returns the number of probes that failed
// (any answer other than 200, e.g. a 503 query_timeout).
int RunQuerySuite(const ExpectedTotals& expected, std::uint16_t port, pid_t server_pid,
                  const QuerySuiteOptions& options, Watchdog& watchdog);

}  // namespace dashcam::bench
