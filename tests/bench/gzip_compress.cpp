// GzipCompress: see gzip_compress.h.
#include "tests/bench/gzip_compress.h"

#include <zlib.h>

namespace dashcam::bench {
namespace {

constexpr int kGzipWindowBits = 15 + 16;  // +16 asks zlib for the gzip wrapper
constexpr int kMemLevel = 8;

}  // namespace

Result<std::string> GzipCompress(std::string_view data, int level) {
  z_stream zs{};
  if (deflateInit2(&zs, level, Z_DEFLATED, kGzipWindowBits, kMemLevel, Z_DEFAULT_STRATEGY) !=
      Z_OK) {
    return Status::Internal("deflateInit2 failed");
  }
  std::string out(deflateBound(&zs, static_cast<uLong>(data.size())), '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  int rc = deflate(&zs, Z_FINISH);  // one call: the output buffer is deflateBound-sized
  out.resize(zs.total_out);
  deflateEnd(&zs);
  if (rc != Z_STREAM_END) return Status::Internal("deflate did not finish: " + std::to_string(rc));
  return out;
}

}  // namespace dashcam::bench
