#include "brine/sim/tally.h"

namespace brine::sim {
namespace {

constexpr std::string_view kFindJob = "saltutil.find_job";

bool IsFindJob(const Value& data) {
  const std::string* fun = data.FindString("fun");
  return fun != nullptr && *fun == kFindJob;
}

std::int64_t ListSize(const Value* v) {
  return v != nullptr && v->is_list() ? static_cast<std::int64_t>(v->as_list().size()) : 0;
}

}  // namespace

void Tally::Count(const SimEvent& event, std::size_t frame_bytes) {
  ++t_.events;
  t_.bytes += static_cast<std::int64_t>(frame_bytes);
  if (!t_.first) t_.first = event.at;
  t_.last = event.at;
  switch (event.kind) {
    case SimEvent::Kind::kPublish: {
      // Counted as a salt job's until its new event says otherwise; a run cut
      // between the two leaves expected minions that no job row shows, which
      // jid_missing lists all the same.
      const std::int64_t n = ListSize(event.data.Find("minions"));
      announced_[event.tag] = n;
      t_.missing += n;
      break;
    }
    case SimEvent::Kind::kNew: {
      const std::string* jid = event.data.FindString("jid");
      const bool find_job = IsFindJob(event.data);
      if (find_job) {
        ++t_.find_job_polls;
      } else {
        ++t_.jobs;
      }
      if (jid != nullptr) {
        if (auto it = announced_.find(*jid); it != announced_.end()) {
          if (find_job) {
            t_.missing -= it->second;
            t_.find_job_missing += it->second;
          }
          announced_.erase(it);
        }
      }
      break;
    }
    case SimEvent::Kind::kReturn: {
      if (IsFindJob(event.data)) {
        ++t_.find_job_returns;
        --t_.find_job_missing;
      } else {
        ++t_.returns;
        --t_.missing;
        const Value* retcode = event.data.Find("retcode");
        if (retcode != nullptr && retcode->is_int() && retcode->kind() == Value::Kind::kInt && retcode->as_int() != 0) {
          ++t_.failed;
        }
      }
      break;
    }
    case SimEvent::Kind::kRunnerReturn: ++t_.runner_jobs; break;
    default: break;
  }
}

}  // namespace brine::sim
