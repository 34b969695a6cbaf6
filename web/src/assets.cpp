#include "assets.h"

namespace brine::web {
namespace {

std::string PathOf(const Asset& a) {
  const std::size_t dot = a.name.rfind('.');
  return "static/" + std::string(a.name.substr(0, dot)) + "." + std::string(a.hash) +
         std::string(a.name.substr(dot));
}

}  // namespace

std::string AssetPath(std::string_view name) {
  for (const Asset& a : EmbeddedAssets()) {
    if (a.name == name) return PathOf(a);
  }
  return "static/missing";
}

const Asset* FindAsset(std::string_view path) {
  for (const Asset& a : EmbeddedAssets()) {
    if (PathOf(a) == path) return &a;
  }
  return nullptr;
}

std::string_view AssetType(const Asset& asset) {
  if (asset.name.ends_with(".css")) return "text/css; charset=utf-8";
  if (asset.name.ends_with(".js")) return "text/javascript; charset=utf-8";
  if (asset.name.ends_with(".svg")) return "image/svg+xml";
  return "application/octet-stream";
}

}  // namespace brine::web
