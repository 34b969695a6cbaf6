// Classifying Salt event tags (spec salt-jobs.md 9.5): which job, and which
// step of it, an event belongs to. Pure functions over the tag text.
#pragma once

#include <string>
#include <string_view>

namespace brine::wire {

struct TagInfo {
  enum class Kind {
    kNew,           // salt/job/<jid>/new: the master published a job
    kReturn,        // salt/job/<jid>/ret/<minion>: one minion's return
    kBareJid,       // <jid>: the master's publish notice (data: minions)
    kLegacyNewJob,  // new_job: 2015.x-and-earlier twin of salt/job/<jid>/new (jid in data)
    kRunNew,        // salt/run/<jid>/new: a runner started
    kRunReturn,     // salt/run/<jid>/ret: a runner finished
    kJobOther,      // salt/job/<jid>/<anything else>: prog, sub, publish, error, ...
    kOther,         // everything else (salt/auth, salt/run/<jid>/progress, ...)
  };
  Kind kind = Kind::kOther;
  std::string jid;     // set for every kind but kLegacyNewJob and kOther
  std::string minion;  // set for kReturn only
};

// Classifies `tag`:
//   salt/job/<jid>/new           -> {kNew, jid}
//   salt/job/<jid>/ret/<minion>  -> {kReturn, jid, minion}; minion is everything
//                                   after "/ret/" (may contain '/'), non-empty
//   salt/job/<jid>/<other>       -> {kJobOther, jid} (incl. ".../ret/" with no minion)
//   salt/run/<jid>/new | ret     -> {kRunNew | kRunReturn, jid}
//   <tag> where IsJid(tag)       -> {kBareJid, tag}
//   new_job                      -> {kLegacyNewJob}
//   anything else                -> {kOther}
// <jid> inside salt/job/ and salt/run/ is the non-empty text up to the next '/';
// it is not checked with IsJid (callers that care check it). Never throws
// except std::bad_alloc.
[[nodiscard]] TagInfo ParseTag(std::string_view tag);

}  // namespace brine::wire
