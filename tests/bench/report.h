// Report: how dashcam_bench prints its results. One metric per line,
//   <name> <value> <unit>
// with the name padded to a fixed column so the output reads as a table and
// `grep '^ingest.events_per_s' | awk '{print $2}'` extracts a number.
// Names are dotted and stable; scripts may depend on them.
//
// Thread-safety: printing functions write to stdout with one call each and
// may be used from any thread; lines never interleave mid-line.
#pragma once

#include <string_view>
#include <vector>

namespace dashcam::bench {

// `precision` digits after the decimal point.
void PrintMetric(std::string_view name, double value, std::string_view unit, int precision = 0);
void PrintText(std::string_view name, std::string_view value);

// Nearest-rank percentile, p in [0, 100]. Returns 0 for an empty input.
double Percentile(std::vector<double> values, double p);

}  // namespace dashcam::bench
