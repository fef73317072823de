// TrainingOptions: the settings of the training insight endpoints
// (insights_handler.h, runs_handler.h), from --incident-gap, --stall-after
// and --run-link.
//
// Thread-safety: plain values, immutable once the server runs.
#pragma once

#include <string>
#include <string_view>

#include "storage/time_format.h"

namespace dashcam::api {

struct TrainingOptions {
  // Events of one kind and run (or host) this close to an incident's
  // previous event fold into it. Default: 5 minutes.
  TimeMs incident_gap_ms = 5 * 60'000;
  // A run with no event for longer than this, and no finishing line, is
  // stalled. Default: 10 minutes.
  TimeMs stall_after_ms = 10 * 60'000;
  // A URL template: "{run.id}" is replaced by the URL-encoded run id.
  // Default: empty, no links.
  std::string run_link;
};

// `options.run_link` filled in for `run_id`; empty when there is no template.
std::string RunLink(const TrainingOptions& options, std::string_view run_id);

}  // namespace dashcam::api
