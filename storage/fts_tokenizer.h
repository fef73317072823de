// Registers the "dashcam" FTS5 tokenizer on a connection. Every connection
// that writes or queries a partition's FTS table must call this first. The
// formats it reads are documented in attrs_codec.h.
#pragma once

#include <sqlite3.h>

#include "storage/status.h"

namespace dashcam::storage {

inline constexpr const char* kFtsTokenizerName = "dashcam";

Status RegisterFtsTokenizer(sqlite3* db);

}  // namespace dashcam::storage
