// SpawnLogged: starts a program for a test (the server under test, a
// ClickHouse node) with stdin from /dev/null and stdout and stderr appended
// to one log file. posix_spawn rather than fork: the caller may be
// multithreaded.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace dashcam::testing {

// `args[0]` is the program's path. Returns 0 and sets `pid`, or the error
// number posix_spawn gave.
int SpawnLogged(std::vector<std::string> args, const std::string& log_path, pid_t& pid);

}  // namespace dashcam::testing
