// `dashcam hash-key`: makes an entry for the --auth-file (server/api_keys.h).
//
//   dashcam hash-key --id ID --role ROLE [--filter QUERY] [--iterations N]
//                    [--generate]
// Reads the key from stdin (one line), or with --generate makes a random one
// and prints it, with the ready-made ApiKey token, on stderr. Prints the
// YAML list item (id, role, filter, iterations, salt, hash) on stdout, to be
// appended under `keys:`. The key itself is never part of the output on
// stdout. Iterations default to kGeneratedKeyIterations for a generated key
// and kChosenKeyIterations for one read from stdin (server/key_hash.h says
// why).
#pragma once

namespace dashcam::server {

// `argv[0]` is "hash-key". Returns the process exit code.
int RunHashKeyCommand(int argc, char** argv);

}  // namespace dashcam::server
