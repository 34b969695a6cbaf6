// manage.up, manage.down, manage.present and manage.not_present, answered
// from the store (store/presence.h says from what, and what it costs).
// Salt's runner publishes test.ping to every minion and waits `timeout`;
// brine reads what the bus already said, so it answers at once, without the
// Salt master, and from a replica (brine.read_database).
#include <set>

#include "brine/core/glob.h"
#include "brine/store/presence.h"
#include "functions.h"

namespace brine::runner {
namespace {

std::string Database(const Context& ctx) {
  return ctx.config().brine.read_database.value_or(ctx.config().brine.database).string();
}

store::Presence Read(Context& ctx) {
  const auto& config = ctx.config();
  const store::PresenceOptions options{
      .prefer = config.presence_events ? store::PresenceOptions::Source::kPresenceEvents
                                       : store::PresenceOptions::Source::kActivity,
      .window = std::chrono::seconds(config.brine.presence_window_s)};
  try {
    store::Presence p = store::ReadPresence(Database(ctx), ctx.clock().Now(), options);
    ctx.Debug("presence: " + p.explanation + " (presence_events " + (config.presence_events ? "on" : "off") +
              ", brine.presence_window_s " + std::to_string(config.brine.presence_window_s) + ")");
    return p;
  } catch (const store::StoreError& e) {
    throw RuntimeFailure(e.what());
  }
}

// A list of minion ids, as a list or Salt's comma-separated text.
std::set<std::string> IdList(const Value& v, const std::string& name) {
  std::set<std::string> out;
  if (v.is_list()) {
    for (const Value& x : v.as_list()) out.insert(StringArg(x, name));
    return out;
  }
  const std::string text = StringArg(v, name);
  std::size_t start = 0;
  while (start <= text.size()) {
    const auto comma = text.find(',', start);
    out.insert(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

// The minions of `ids` that tgt/tgt_type match: glob (fnmatch, Salt's default)
// and list. Other target types need grains, pillar or the key list, which the
// store does not hold.
Value Targeted(const std::vector<std::string>& ids, const Args& a) {
  const std::string tgt_type = StringArg(a["tgt_type"], "tgt_type");
  Value out = Value::EmptyList();
  if (tgt_type == "glob") {
    const std::string tgt = StringArg(a["tgt"], "tgt");
    for (const auto& id : ids) {
      if (FnMatch(tgt, id)) out.as_list().emplace_back(id);
    }
  } else if (tgt_type == "list") {
    const std::set<std::string> wanted = IdList(a["tgt"], "tgt");
    for (const auto& id : ids) {
      if (wanted.count(id) > 0) out.as_list().emplace_back(id);
    }
  } else {
    throw UsageError("tgt_type " + tgt_type +
                     ": brine answers manage.up and manage.down from the store, which can match a glob or a list "
                     "of minion ids only");
  }
  return out;
}

// present/not_present's `subset`: only these minion ids, when given.
Value Subset(const std::vector<std::string>& ids, const Value& subset) {
  Value out = Value::EmptyList();
  std::set<std::string> wanted;
  if (!subset.is_null()) wanted = IdList(subset, "subset");
  for (const auto& id : ids) {
    if (subset.is_null() || wanted.count(id) > 0) out.as_list().emplace_back(id);
  }
  return out;
}

}  // namespace

void AddManageFunctions(std::vector<FunctionSpec>& out) {
  // salt/runners/manage.py's signatures. timeout and gather_job_timeout are
  // the ping's: accepted and not used, since nothing is pinged.
  out.push_back({"manage.up",
                 {{"tgt", Value("*")}, {"tgt_type", Value("glob")}, {"timeout", Value()},
                  {"gather_job_timeout", Value()}},
                 [](Context& ctx, const Args& a) -> Value { return Targeted(Read(ctx).up, a); }});
  out.push_back({"manage.down",
                 {{"removekeys", Value(false)}, {"tgt", Value("*")}, {"tgt_type", Value("glob")},
                  {"timeout", Value()}, {"gather_job_timeout", Value()}},
                 [](Context& ctx, const Args& a) -> Value {
                   if (a["removekeys"].Truthy()) {
                     throw UsageError(
                         "removekeys: brine does not hold the Salt master's keys; run salt-run manage.down "
                         "removekeys=True on the Salt master");
                   }
                   return Targeted(Read(ctx).down, a);
                 }});
  // show_ip: Salt maps each id to the address it connects from, which no
  // event carries: accepted, and the answer stays a list.
  out.push_back({"manage.present", {{"subset", Value()}, {"show_ip", Value(false)}},
                 [](Context& ctx, const Args& a) -> Value { return Subset(Read(ctx).up, a["subset"]); }});
  out.push_back({"manage.not_present", {{"subset", Value()}, {"show_ip", Value(false)}},
                 [](Context& ctx, const Args& a) -> Value { return Subset(Read(ctx).down, a["subset"]); }});
}

}  // namespace brine::runner
