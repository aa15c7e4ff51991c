// The status page's files (runtime/node/ui/), compiled into the binary by
// cmake/embed_ui.cmake: no files to install beside it, nothing fetched.
#pragma once

#include <cstddef>
#include <string_view>

namespace conclave::node {

struct ui_asset {
  const char* path; ///< "/ui/index.html"
  const char* content_type;
  const unsigned char* data;
  size_t size;
};

extern const ui_asset ui_assets[];
extern const size_t ui_asset_count;

/// The asset a request path names: "/", "/ui" and "/ui/" give index.html;
/// null for anything else.
inline const ui_asset* find_ui_asset(std::string_view path) {
  if (path == "/" || path == "/ui" || path == "/ui/")
    path = "/ui/index.html";
  for (size_t i = 0; i < ui_asset_count; ++i)
    if (path == ui_assets[i].path)
      return &ui_assets[i];
  return nullptr;
}

} // namespace conclave::node
