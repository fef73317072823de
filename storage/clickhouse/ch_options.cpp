#include "storage/clickhouse/ch_options.h"

#include <charconv>

#include <fmt/format.h>
#include <boost/url/parse.hpp>

namespace dashcam::storage::clickhouse {
namespace {

constexpr std::string_view kScheme = "clickhouse://";

Status Bad(std::string_view url, std::string_view why) {
  return Status::InvalidArgument(fmt::format("--storage {}: {}", url, why));
}

// HOST[:PORT] or [IPv6][:PORT].
Result<ChHost> ParseHost(std::string_view text, std::string_view url) {
  ChHost h;
  std::string_view rest;
  if (text.starts_with('[')) {
    const std::size_t close = text.find(']');
    if (close == std::string_view::npos) return Bad(url, "an IPv6 address lacks its ']'");
    h.host = std::string(text.substr(1, close - 1));
    rest = text.substr(close + 1);
  } else {
    const std::size_t colon = text.find(':');
    h.host = std::string(text.substr(0, colon));
    rest = colon == std::string_view::npos ? std::string_view() : text.substr(colon);
  }
  if (h.host.empty()) return Bad(url, "a host is empty");
  if (rest.empty()) return h;
  if (!rest.starts_with(':')) return Bad(url, "expected ':' and a port after a host");
  rest.remove_prefix(1);
  unsigned port = 0;
  const auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), port);
  if (ec != std::errc() || end != rest.data() + rest.size() || port == 0 || port > 65535) {
    return Bad(url, fmt::format("bad port '{}'", rest));
  }
  h.port = static_cast<std::uint16_t>(port);
  return h;
}

}  // namespace

bool IsClickHouseUrl(std::string_view storage) {
  return storage.starts_with(kScheme);
}

Result<ChOptions> ParseClickHouseUrl(std::string_view url) {
  if (!IsClickHouseUrl(url))
    return Bad(url, "expected clickhouse://host:port/database?cluster=name");
  const std::string_view after = url.substr(kScheme.size());
  const std::size_t path_at = after.find_first_of("/?");
  const std::string_view hosts = after.substr(0, path_at);
  ChOptions out;
  std::size_t pos = 0;
  while (pos <= hosts.size()) {
    const std::size_t comma = std::min(hosts.find(',', pos), hosts.size());
    auto host = ParseHost(hosts.substr(pos, comma - pos), url);
    if (!host.ok()) return host.status();
    out.hosts.push_back(std::move(*host));
    pos = comma + 1;
  }
  // The path and query, parsed (and percent-decoded) as a URL's.
  // (The view refers to `rest`, which must outlive it.)
  std::string rest(path_at == std::string_view::npos ? "/" : after.substr(path_at));
  if (!rest.starts_with('/')) rest = "/" + rest;
  auto ref = boost::urls::parse_origin_form(rest);
  if (!ref) return Bad(url, "bad path or query");
  std::string database = ref->path();
  if (database.starts_with('/')) database.erase(0, 1);
  if (!database.empty()) out.database = std::move(database);
  if (out.database.find('/') != std::string::npos) return Bad(url, "the path must be one database");
  for (const auto& param : ref->params()) {
    if (param.key == "cluster") {
      out.cluster = param.value;
    } else if (param.key == "timeout_ms") {
      unsigned long ms = 0;
      const auto [end, ec] =
          std::from_chars(param.value.data(), param.value.data() + param.value.size(), ms);
      if (ec != std::errc() || end != param.value.data() + param.value.size() || ms == 0 ||
          ms > 3'600'000) {
        return Bad(url, "bad timeout_ms (1 to 3600000)");
      }
      out.timeout = std::chrono::milliseconds(ms);
    } else {
      return Bad(url, fmt::format("unknown parameter '{}'", param.key));
    }
  }
  if (out.cluster.empty()) return Bad(url, "cluster=NAME is required (the remote_servers entry)");
  return out;
}

}  // namespace dashcam::storage::clickhouse
