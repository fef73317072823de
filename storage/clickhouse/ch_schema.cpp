#include "storage/clickhouse/ch_schema.h"

#include <charconv>

#include <fmt/format.h>

#include "storage/clickhouse/ch_client.h"
#include "storage/clickhouse/ch_literal.h"

namespace dashcam::storage::clickhouse {
namespace {

std::string Trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  return s;
}

std::vector<std::string> SchemaStatements(const ChOptions& o) {
  const std::string db = ChIdentifier(o.database);
  const std::string local = db + "." + ChIdentifier(kLocalTable);
  return {
      "CREATE DATABASE IF NOT EXISTS " + db,
      "CREATE TABLE IF NOT EXISTS " + local +
          " (ts DateTime('UTC'), ms UInt16, seq UInt32, ins UInt64, id String, idx String, level "
          "String, "
          "message String,"
          " has_msg UInt8, tokens String, ftokens String,"
          " str_names Array(String), str_values Array(String),"
          " num_names Array(String), num_values Array(Float64),"
          " snum_names Array(String), snum_values Array(Float64), grp String, grp_end UInt8,"
          " source String)"
          " ENGINE = ReplacingMergeTree() PARTITION BY toYYYYMMDD(ts) ORDER BY (ts, ms, id)",
      fmt::format("CREATE TABLE IF NOT EXISTS {}.{} AS {} ENGINE = Distributed({}, {}, {}, "
                  "sipHash64(id))",
                  db, ChIdentifier(kDistributedTable), local, ChString(o.cluster),
                  ChString(o.database), ChString(kLocalTable)),
  };
}

// Columns added after the first version of the table, each with where it
// goes: a table created before them gets them (ADD COLUMN), on the local
// and the Distributed table alike, or every insert would fail on them.
struct AddedColumn {
  const char* name;
  const char* definition;
};
constexpr AddedColumn kAddedColumns[] = {
    {"grp", "grp String DEFAULT '' AFTER snum_values"},
    {"grp_end", "grp_end UInt8 DEFAULT 0 AFTER grp"},
};

Status AddMissingColumns(const ChClient& node, const ChOptions& o) {
  const std::string db = ChIdentifier(o.database);
  for (const char* table : {kLocalTable, kDistributedTable}) {
    auto names = node.Query(fmt::format(
        "SELECT name FROM system.columns WHERE database = {} AND table = {} FORMAT TabSeparated",
        ChString(o.database), ChString(table)));
    if (!names.ok()) return names.status();
    const std::string have = "\n" + *names;
    for (const AddedColumn& c : kAddedColumns) {
      if (have.find("\n" + std::string(c.name) + "\n") != std::string::npos) continue;
      auto r = node.Query(
          fmt::format("ALTER TABLE {}.{} ADD COLUMN {}", db, ChIdentifier(table), c.definition));
      if (!r.ok()) return r.status();
    }
  }
  return Status::Ok();
}

// What `host` knows of the cluster.
Result<ChNodeReport> Probe(const ChClient& node, const ChOptions& o) {
  ChNodeReport report;
  report.host = node.host();
  auto answer = node.Query(fmt::format(
      "SELECT version(), (SELECT count(DISTINCT shard_num) FROM system.clusters WHERE cluster = "
      "{}) FORMAT TabSeparated",
      ChString(o.cluster)));
  if (!answer.ok()) return answer.status();
  const std::string line = Trimmed(std::move(*answer));
  const std::size_t tab = line.find('\t');
  if (tab == std::string::npos) return Status::Internal("ClickHouse: unexpected answer " + line);
  report.version = line.substr(0, tab);
  const auto [end, ec] =
      std::from_chars(line.data() + tab + 1, line.data() + line.size(), report.shards);
  if (ec != std::errc()) return Status::Internal("ClickHouse: unexpected answer " + line);
  return report;
}

}  // namespace

Result<std::vector<ChNodeReport>> InitClickHouseSchema(const ChOptions& options) {
  std::vector<ChNodeReport> reports;
  for (const ChHost& host : options.hosts) {
    const ChClient node(host, options.timeout);
    auto report = Probe(node, options);
    if (!report.ok()) return report.status();
    if (report->shards == 0) {
      return Status::InvalidArgument(
          fmt::format("ClickHouse {}:{} has no cluster '{}' in its remote_servers config",
                      host.host, host.port, options.cluster));
    }
    if (!reports.empty() && report->shards != reports.front().shards) {
      return Status::InvalidArgument(fmt::format(
          "ClickHouse {}:{} declares cluster '{}' with {} shards, {}:{} with {}", host.host,
          host.port, options.cluster, report->shards, reports.front().host.host,
          reports.front().host.port, reports.front().shards));
    }
    for (const std::string& sql : SchemaStatements(options)) {
      if (auto r = node.Query(sql); !r.ok()) return r.status();
    }
    if (Status s = AddMissingColumns(node, options); !s.ok()) return s;
    reports.push_back(std::move(*report));
  }
  return reports;
}

}  // namespace dashcam::storage::clickhouse
