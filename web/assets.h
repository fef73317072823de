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
  // The body gzip-compressed, for text types where that pays; else empty.
  std::string_view gzip_body;
  std::string_view gzip_etag;  // "\"3f2a...-gz\"" when gzip_body is set
};

// The Content-Security-Policy the page is served with: its own scripts,
// styles and API only; no inline script, no framing, no form posts.
inline constexpr std::string_view kContentSecurityPolicy =
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

// The asset served at `path`; "/" serves "/index.html". nullptr when none.
const Asset* FindAsset(std::string_view path);

}  // namespace dashcam::web
