// The stylesheet, the ES module and the icon, embedded at build time from web/assets
// (cmake/EmbedWebAssetsScript.cmake) and served as
// <base>static/<stem>.<hash>.<ext> with Cache-Control: immutable: a new build
// with a changed file gets a new URL, so a browser never keeps a stale one.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace brine::web {

struct Asset {
  std::string_view name;  // "brine.css"
  std::string_view hash;  // 16 hex digits of its SHA-256
  std::string_view bytes;
};

const std::vector<Asset>& EmbeddedAssets();

// "static/brine.<hash>.css" for "brine.css": the path under the base path.
[[nodiscard]] std::string AssetPath(std::string_view name);
// The asset a path under the base path names ("static/brine.<hash>.css"), or nullptr.
[[nodiscard]] const Asset* FindAsset(std::string_view path);
// Its Content-Type, by extension.
[[nodiscard]] std::string_view AssetType(const Asset& asset);

}  // namespace brine::web
