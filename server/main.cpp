// dashcam: parse the command line, build the log, run the server; or run a
// subcommand (`dashcam hash-key`: server/hash_key_command.h; `dashcam
// ch-init`: server/ch_init_command.h).
#include <cstdio>
#include <cstring>
#include <variant>

#include "server/ch_init_command.h"
#include "server/config.h"
#include "server/hash_key_command.h"
#include "server/server.h"
#include "storage/log.h"

int main(int argc, char** argv) {
  if (argc >= 2 && std::strcmp(argv[1], "hash-key") == 0) {
    return dashcam::server::RunHashKeyCommand(argc - 1, argv + 1);
  }
  if (argc >= 2 && std::strcmp(argv[1], "ch-init") == 0) {
    return dashcam::server::RunChInitCommand(argc - 1, argv + 1);
  }
  auto parsed = dashcam::server::ParseCommandLine(argc, argv);
  if (auto* exit_now = std::get_if<dashcam::server::ExitNow>(&parsed)) {
    std::fputs(exit_now->output.c_str(), exit_now->code == 0 ? stdout : stderr);
    return exit_now->code;
  }
  const auto& config = std::get<dashcam::server::Config>(parsed);
  const dashcam::Log log(config.debug);
  return dashcam::server::RunServer(config, log);
}
