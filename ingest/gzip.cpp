#include "ingest/gzip.h"

#include <zlib.h>

#include <fmt/format.h>

namespace dashcam::ingest {

Result<std::string> Inflate(std::string_view input, std::size_t max_output) {
  z_stream zs{};
  // 32 + MAX_WBITS: accept both gzip and zlib headers.
  if (inflateInit2(&zs, 32 + MAX_WBITS) != Z_OK) return Status::Internal("inflateInit2 failed");
  std::string out;
  out.resize(std::min<std::size_t>(std::max<std::size_t>(input.size() * 4, 4096), max_output + 1));
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(input.data()));
  zs.avail_in = static_cast<uInt>(input.size());
  std::size_t produced = 0;
  Status status;
  for (;;) {
    if (produced == out.size()) {
      if (out.size() > max_output) {
        status =
            Status::TooLarge(fmt::format("decompressed body is larger than {} bytes", max_output));
        break;
      }
      out.resize(std::min(out.size() * 2, max_output + 1));
    }
    zs.next_out = reinterpret_cast<Bytef*>(out.data() + produced);
    zs.avail_out = static_cast<uInt>(out.size() - produced);
    const int rc = inflate(&zs, Z_NO_FLUSH);
    produced = out.size() - zs.avail_out;
    if (rc == Z_STREAM_END) {
      if (zs.avail_in == 0) break;
      inflateReset(&zs);  // another gzip member follows
      continue;
    }
    if (rc == Z_BUF_ERROR && zs.avail_in == 0) {
      status = Status::InvalidArgument("compressed body is truncated");
      break;
    }
    if (rc != Z_OK && rc != Z_BUF_ERROR) {
      status = Status::InvalidArgument(
          fmt::format("compressed body is corrupt: {}", zs.msg ? zs.msg : "inflate failed"));
      break;
    }
  }
  inflateEnd(&zs);
  if (!status.ok()) return status;
  if (produced > max_output) {
    return Status::TooLarge(fmt::format("decompressed body is larger than {} bytes", max_output));
  }
  out.resize(produced);
  return out;
}

}  // namespace dashcam::ingest
