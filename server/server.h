// Server: builds every part from a Config, runs until SIGINT or SIGTERM, then
// drains: stop accepting, let requests in flight finish (their events are
// committed before they are answered), close idle connections, commit every
// queued event, close the databases, return 0. A second signal exits at once.
#pragma once

#include "server/config.h"
#include "storage/log.h"

namespace dashcam::server {

// Returns the process exit code.
int RunServer(const Config& config, const Log& log);

}  // namespace dashcam::server
