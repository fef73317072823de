// ChClient: one request at a time to one ClickHouse node over its HTTP
// interface (ClickHouse ships no C++ client library in Debian).
//
//   ChClient node(host, timeout);
//   auto rows = node.Query("SELECT count() FROM t FORMAT TabSeparated");
//   auto done = node.Insert("INSERT INTO t FORMAT JSONEachRow", ndjson,
//                           {{"insert_distributed_sync", "1"}});
//
// Each call opens a connection, sends one POST and reads the answer within
// the client's timeout (the whole exchange; the name lookup before it is
// bounded only by the resolver's own timeouts). The SQL must already hold
// its values as literals (ch_literal.h). Answers are complete before they
// are sent (wait_end_of_query), so a failure midway is an error, not a
// truncated result.
//
// Errors:
//   Unavailable        the node could not be reached or answered too late,
//                      or ClickHouse reports a network failure of its own
//                      (e.g. Code 279: a shard of a Distributed table down);
//   Internal           any other ClickHouse error ("Code: N, ..."): the
//                      message starts "ClickHouse Code N" and quotes the
//                      first line of its text. Only the `Code: N` prefix is
//                      parsed, since newer versions word the rest otherwise.
//
// Thread-safety: a ChClient holds no connection; calls from several threads
// are independent.
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "storage/clickhouse/ch_options.h"
#include "storage/status.h"

namespace dashcam::storage::clickhouse {

// ClickHouse settings sent as URL parameters (name, value).
using ChSettings = std::vector<std::pair<std::string, std::string>>;

class ChClient {
 public:
  ChClient(ChHost host, std::chrono::milliseconds timeout);

  // Runs `sql` (sent as the request body); returns the response body.
  Result<std::string> Query(std::string_view sql, const ChSettings& settings = {}) const;

  // Runs `sql` (an INSERT ... FORMAT ..., sent as the `query` parameter)
  // with `data` as the request body.
  Status Insert(std::string_view sql, std::string_view data, const ChSettings& settings = {}) const;

  const ChHost& host() const { return host_; }

 private:
  Result<std::string> Post(std::string_view query_param, std::string_view body,
                           const ChSettings& settings) const;

  ChHost host_;
  std::chrono::milliseconds timeout_;
};

// The error code at the start of a ClickHouse error body ("Code: 62, ..."),
// or -1 when there is none.
int ChErrorCode(std::string_view body);

}  // namespace dashcam::storage::clickhouse
