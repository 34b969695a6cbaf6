#include "brine/wire/tags.h"

#include "brine/core/jid.h"

namespace brine::wire {
namespace {

constexpr std::string_view kJobPrefix = "salt/job/";
constexpr std::string_view kRunPrefix = "salt/run/";
constexpr std::string_view kReturnPart = "ret/";

// Splits "<jid>/<rest>" after a prefix; false when the jid part is empty or
// has no '/' after it.
bool SplitJid(std::string_view after_prefix, std::string_view& jid, std::string_view& rest) {
  const std::size_t slash = after_prefix.find('/');
  if (slash == 0 || slash == std::string_view::npos) return false;
  jid = after_prefix.substr(0, slash);
  rest = after_prefix.substr(slash + 1);
  return true;
}

}  // namespace

TagInfo ParseTag(std::string_view tag) {
  using Kind = TagInfo::Kind;
  std::string_view jid;
  std::string_view rest;
  if (tag.starts_with(kJobPrefix) && SplitJid(tag.substr(kJobPrefix.size()), jid, rest)) {
    if (rest == "new") return {.kind = Kind::kNew, .jid = std::string(jid), .minion = {}};
    if (rest.starts_with(kReturnPart) && rest.size() > kReturnPart.size()) {
      return {.kind = Kind::kReturn,
              .jid = std::string(jid),
              .minion = std::string(rest.substr(kReturnPart.size()))};
    }
    return {.kind = Kind::kJobOther, .jid = std::string(jid), .minion = {}};
  }
  if (tag.starts_with(kRunPrefix) && SplitJid(tag.substr(kRunPrefix.size()), jid, rest)) {
    if (rest == "new") return {.kind = Kind::kRunNew, .jid = std::string(jid), .minion = {}};
    if (rest == "ret") return {.kind = Kind::kRunReturn, .jid = std::string(jid), .minion = {}};
    return {};
  }
  // The bare-jid publish notice and `new_job` are the 2014-era tags (9.5).
  if (IsJid(tag)) return {.kind = Kind::kBareJid, .jid = std::string(tag), .minion = {}};
  if (tag == "new_job") return {.kind = Kind::kLegacyNewJob, .jid = {}, .minion = {}};
  return {};
}

}  // namespace brine::wire
