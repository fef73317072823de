// Reading ClickHouse answers line by line: a TabSeparated body (one row a
// line) or a JSONEachRow body (one JSON object a line).
//
//   Status s = ForEachJsonRow(body, [&](const boost::json::object& row) {
//     ...
//     return Status::Ok();
//   });
//
// Each stops at the first error its callback returns, and returns it.
// Thread-safety: pure functions.
#pragma once

#include <string_view>

#include <boost/json.hpp>

#include "storage/status.h"

namespace dashcam::storage::clickhouse {

// Calls line(std::string_view) for every non-empty line of `body`.
template <class Line>
Status ForEachLine(std::string_view body, Line&& line) {
  std::size_t begin = 0;
  while (begin < body.size()) {
    std::size_t end = body.find('\n', begin);
    if (end == std::string_view::npos) end = body.size();
    if (end > begin) {
      if (Status s = line(body.substr(begin, end - begin)); !s.ok()) return s;
    }
    begin = end + 1;
  }
  return Status::Ok();
}

// Calls row(const boost::json::object&) for every line of `body`; a line
// that is not a JSON object is an Internal error.
template <class Row>
Status ForEachJsonRow(std::string_view body, Row&& row) {
  return ForEachLine(body, [&](std::string_view text) {
    boost::system::error_code ec;
    const boost::json::value v = boost::json::parse(text, ec);
    if (ec || !v.is_object()) return Status::Internal("ClickHouse: unreadable row");
    return row(v.get_object());
  });
}

}  // namespace dashcam::storage::clickhouse
