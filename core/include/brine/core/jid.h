// Salt job ids (spec salt-jobs.md section 2).
//
// A jid is the UTC start time of the job as 20 digits, `%Y%m%d%H%M%S%f`,
// optionally followed by `_<pid>` when the master runs with `unique_jid`.
#pragma once

#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "brine/core/time.h"

namespace brine {

// Thrown by JidToTime where Salt raises (a non-numeric or out-of-range month).
class JidError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

enum class JidUniqueness {
  kPlain,    // the time only; two jids in one microsecond collide (Salt's default)
  kWithPid,  // `_<pid>` suffix and strictly increasing times (Salt's unique_jid)
};

// Makes jids from a clock. Thread-safe.
class JidGenerator {
 public:
  // `clock` must outlive the generator.
  JidGenerator(const Clock& clock, JidUniqueness uniqueness, long pid);

  // A fresh jid. With kWithPid a time not after the previous one is moved to
  // the previous one plus 1 µs, as Salt's unique_jid does.
  [[nodiscard]] std::string Next();

 private:
  const Clock& clock_;
  JidUniqueness uniqueness_;
  long pid_;
  std::mutex mu_;
  std::optional<Micros> last_;
};

// The 20-digit form of an instant.
[[nodiscard]] std::string FormatJid(Micros t);

// Salt's is_jid: a string of length 20, or longer than 21 with `_` at index 20,
// whose first 20 characters Python's int() accepts.
[[nodiscard]] bool IsJid(std::string_view jid);

// Salt's jid_to_time: `""` when the length rule fails, else
// `"YYYY, Mon DD hh:mm:ss.uuuuuu"` with the fields copied from the jid. Month
// `00` gives an empty month name (Salt's quirk, kept). Throws JidError where
// Salt raises: a month Python's int() rejects, or one above 12.
[[nodiscard]] std::string JidToTime(std::string_view jid);
// JidToTime's text appended to `out` (nothing on the length rule's ""); on
// JidError `out` is unchanged. For listings that write 100k of them.
void AppendJidTime(std::string_view jid, std::string& out);

// The instant a well-formed jid names (its 20 leading digits as a UTC time);
// nullopt for anything else (`req`, local names, bad dates).
[[nodiscard]] std::optional<Micros> JidToMicros(std::string_view jid);

}  // namespace brine
