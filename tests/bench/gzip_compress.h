// GzipCompress: one-shot gzip (RFC 1952) compression with zlib, the way
// Filebeat compresses bulk bodies (`compression_level: 1` by default).
//
// Thread-safety: stateless; may be called concurrently.
#pragma once

#include <string>
#include <string_view>

#include "storage/status.h"

namespace dashcam::bench {

// REQUIRES: 0 <= level <= 9. Fails only if zlib cannot allocate its state.
Result<std::string> GzipCompress(std::string_view data, int level);

}  // namespace dashcam::bench
