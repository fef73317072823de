#include "server/ch_init_command.h"

#include <cstdio>
#include <string>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "storage/clickhouse/ch_options.h"
#include "storage/clickhouse/ch_schema.h"

namespace dashcam::server {

int RunChInitCommand(int argc, char** argv) {
  CLI::App app{"Create dashcam's ClickHouse tables on every node of a cluster (idempotent)",
               "dashcam ch-init"};
  std::string storage;
  app.add_option("--storage", storage,
                 "clickhouse://HOST:PORT[,HOST:PORT...]/DATABASE?cluster=NAME[&timeout_ms=N]")
      ->required();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  auto options = storage::clickhouse::ParseClickHouseUrl(storage);
  if (!options.ok()) {
    std::fprintf(stderr, "dashcam ch-init: %s\n", options.status().message().c_str());
    return 2;
  }
  auto reports = storage::clickhouse::InitClickHouseSchema(*options);
  if (!reports.ok()) {
    std::fprintf(stderr, "dashcam ch-init: %s\n", reports.status().message().c_str());
    return 1;
  }
  for (const auto& r : *reports) {
    std::fputs(fmt::format("{}:{}: ClickHouse {}, cluster {} of {} shards: {}.{} and {}.{} ready\n",
                           r.host.host, r.host.port, r.version, options->cluster, r.shards,
                           options->database, storage::clickhouse::kLocalTable, options->database,
                           storage::clickhouse::kDistributedTable)
                   .c_str(),
               stdout);
  }
  return 0;
}

}  // namespace dashcam::server
