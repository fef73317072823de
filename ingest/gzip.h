// Decompression of `Content-Encoding: gzip` (and `deflate`) request bodies,
// with a bound on the inflated size so a small "zip bomb" cannot exhaust
// memory. Thread-safe (no shared state).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "storage/status.h"

namespace dashcam::ingest {

// Inflates gzip or zlib data (detected from the header); concatenated gzip
// members are all inflated. Errors: TooLarge past `max_output` bytes,
// InvalidArgument for corrupt or truncated data.
Result<std::string> Inflate(std::string_view input, std::size_t max_output);

}  // namespace dashcam::ingest
