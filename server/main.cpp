// dashcam: parse the command line, build the log, run the server.
#include <cstdio>
#include <variant>

#include "server/config.h"
#include "server/server.h"
#include "storage/log.h"

int main(int argc, char** argv) {
  auto parsed = dashcam::server::ParseCommandLine(argc, argv);
  if (auto* exit_now = std::get_if<dashcam::server::ExitNow>(&parsed)) {
    std::fputs(exit_now->output.c_str(), exit_now->code == 0 ? stdout : stderr);
    return exit_now->code;
  }
  const auto& config = std::get<dashcam::server::Config>(parsed);
  const dashcam::Log log(config.debug);
  return dashcam::server::RunServer(config, log);
}
