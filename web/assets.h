// The web page's static files, embedded into the binary at build time from
// web/static/ (see web/CMakeLists.txt and web/embed_assets.cmake).
//
// Thread-safety: the table is immutable; FindAsset may be called from any
// thread. Returned pointers and views live for the whole program.
#pragma once

#include <string_view>

namespace dashcam::web {

struct Asset {
  std::string_view path;          // "/index.html"
  std::string_view content_type;  // "text/html; charset=utf-8"
  std::string_view body;
  std::string_view etag;  // quoted strong validator, e.g. "\"3f2a...\""
};

// The asset served at `path`; "/" serves "/index.html". nullptr when none.
const Asset* FindAsset(std::string_view path);

}  // namespace dashcam::web
