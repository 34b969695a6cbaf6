# Run as: cmake -DFILES=<a.css,b.js,...> -DOUT=<cpp file> -P EmbedWebAssetsScript.cmake
# Writes web/src/assets.h's table: each file's bytes as a string literal, its
# name, and the first 16 hex digits of its SHA-256 (the URL's content hash).
string(REPLACE "," ";" files "${FILES}")
set(body "")
foreach(f ${files})
  get_filename_component(name ${f} NAME)
  file(SHA256 ${f} sha)
  string(SUBSTRING ${sha} 0 16 hash)
  file(READ ${f} hex HEX)
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "\\\\x\\1" escaped "${hex}")
  string(REGEX REPLACE "((\\\\x[0-9a-f][0-9a-f]){200})" "\\1\"\n    \"" escaped "${escaped}")
  string(APPEND body "    {\"${name}\", \"${hash}\",\n    std::string_view(\"${escaped}\", sizeof(\"${escaped}\") - 1)},\n")
endforeach()
file(WRITE ${OUT}.tmp "// Generated from web/assets by cmake/EmbedWebAssetsScript.cmake.\n#include \"assets.h\"\n\nnamespace brine::web {\n\nconst std::vector<Asset>& EmbeddedAssets() {\n  static const std::vector<Asset> kAssets = {\n${body}  };\n  return kAssets;\n}\n\n}  // namespace brine::web\n")
file(COPY_FILE ${OUT}.tmp ${OUT} ONLY_IF_DIFFERENT)
file(REMOVE ${OUT}.tmp)
