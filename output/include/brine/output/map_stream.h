// A top-level map printed entry by entry, for results too big to hold as one
// Value (jobs.list_jobs over a day of a big fleet). The bytes written are
// exactly what Render(outputter, <the whole map>, options) returns.
#pragma once

#include <memory>
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "brine/core/json.h"
#include "brine/core/value.h"
#include "brine/output/outputters.h"

namespace brine::output {

class MapStream {
 public:
  // Writes to `out`, which must outlive the stream. Throws UnknownOutputter
  // for an unsupported name.
  MapStream(std::string_view outputter, const OutputOptions& options, std::ostream& out);
  ~MapStream();
  MapStream(const MapStream&) = delete;
  MapStream& operator=(const MapStream&) = delete;

  // Adds one entry. Keys must be distinct and, because nested and yaml print
  // maps sorted, added in ascending code-point order (for ASCII keys such as
  // jids: byte order); an out-of-order key throws std::logic_error. json,
  // nested and block-style yaml are written as entries arrive; the other
  // outputters (and flow-style yaml) need the whole map and print on Finish.
  void Add(std::string key, Value value);
  // Add with the value given as JSON text: json copies it into its output
  // without building a Value (WriteJsonText); the others parse it. Throws
  // JsonError for malformed text.
  void AddJson(std::string key, std::string_view json);
  // One member of an object given as JSON texts (AddJsonObject).
  struct JsonMember {
    std::string_view name;  // written as a JSON string
    std::string_view json;  // the member's value as JSON text
    // `json` is already laid out as JsonMemberStyle() lays out a value at
    // level 2 (the other outputters parse it all the same).
    bool laid_out = false;
  };
  // Add with the value an object of these members, in this order (names
  // distinct): the same bytes as AddJson of the object's text, but json
  // writes each member's text once, in place, without the object's text
  // being put together and scanned again. Throws JsonError for malformed text.
  void AddJsonObject(std::string key, std::span<const JsonMember> members);
  // In json, the style AddJsonObject lays members out in (at level 2), for
  // callers that lay a member out while they scan for it; nullopt for the
  // other outputters.
  [[nodiscard]] std::optional<JsonStyle> JsonMemberStyle() const;
  // Whether AddJson copies the text into the output (json) rather than
  // parsing it into a Value (the others): a caller holding the text in a
  // buffer it could free first may parse it itself and Add the Value later.
  [[nodiscard]] bool CopiesJsonText() const { return mode_ == Mode::kJson; }
  // Writes what is still held back (at most the trailing whitespace Salt's
  // display_output strips, or the buffered map). Call once, after the last Add.
  void Finish();

 private:
  enum class Mode { kJson, kNested, kYamlBlock, kBuffered };
  void Write(std::string_view text);
  void CheckOrder(const std::string& key);
  // The start of an entry in json: the separator, the indent and the key.
  void JsonEntryHead(const std::string& key, std::string& text) const;
  // Appends `"name": ` for a member of AddJsonObject, encoded once per name.
  void AppendMemberHead(std::string_view name, const JsonStyle& style, std::string& text);
  void Flush();
  // Below glibc's mmap threshold (128 KiB), so the buffer is one heap block
  // reused for the whole listing: at 1 MiB it grew through fresh mmaps whose
  // first touch faulted ~250 pages in, a third of a 1,400-job listing's time.
  static constexpr std::size_t kFlushBytes = std::size_t{64} << 10;

  std::string outputter_;
  OutputOptions options_;
  std::ostream& out_;
  Mode mode_;
  std::size_t count_ = 0;
  std::string last_key_;
  std::string held_;       // trailing whitespace not yet known to be interior
  bool wrote_ = false;     // something other than whitespace was written
  ValueMap buffered_;      // kBuffered: the whole map
  std::string scratch_;    // one entry's text, reused
  // AppendMemberHead's texts by name: a listing repeats the same few names.
  std::vector<std::pair<std::string, std::string>> member_heads_;
  std::size_t next_head_ = 0;  // where the next lookup starts
  static constexpr std::size_t kMemberHeads = 16;
  std::string pending_;    // text not yet handed to out_
};

}  // namespace brine::output
