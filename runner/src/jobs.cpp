// The jobs runner (Salt's salt/runners/jobs.py, spec salt-jobs.md section 8),
// answered from the store's indexes instead of a walk over the job cache.
#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "brine/core/jid.h"
#include "brine/core/json.h"
#include "brine/store/active_jobs.h"
#include "functions.h"
#include "brine/args/times.h"

namespace brine::runner {
namespace {

constexpr const char* kNoJob = "Cannot contact returner or no job with this jid";

// Salt's StartTime for a jid. A jid whose month Salt's jid_to_time would
// choke on shows "" here rather than failing a whole listing.
void AppendStartTime(std::string_view jid, std::string& out) {
  try {
    AppendJidTime(jid, out);
  } catch (const JidError&) {
    // out is unchanged: ""
  }
}

std::string StartTime(std::string_view jid) {
  std::string out;
  AppendStartTime(jid, out);
  return out;
}

// The fields both of Salt's job formatters start with: each shows a load key,
// or Salt's default when the load has none. Arguments is always a list: the
// load's `arg` when it is one, [] when absent or null, else [arg].
struct JobField {
  std::string_view name;
  std::string_view key;
  const char* fallback;  // nullptr: Arguments' rule
};
constexpr JobField kJobFields[] = {{"Function", "fun", "unknown-function"},
                                   {"Arguments", "arg", nullptr},
                                   {"Target", "tgt", "unknown-target"},
                                   {"Target-type", "tgt_type", "list"},
                                   {"User", "user", "root"}};
// The load keys of kJobFields, in its order (JobFieldsJson indexes both alike).
constexpr std::string_view kListedKeys[] = {"fun", "arg", "tgt", "tgt_type", "user"};
static_assert(std::size(kListedKeys) == std::size(kJobFields));

// The job fields as a map, moved out of `load`.
Value JobFields(Value& load) {
  ValueMap fields;
  fields.reserve(8);  // room for Metadata, Minions, StartTime and EndTime after these
  for (const JobField& f : kJobFields) {
    Value* v = load.Find(f.key);
    if (f.fallback != nullptr) {
      fields.emplace_back(f.name, v != nullptr ? std::move(*v) : Value(f.fallback));
    } else if (v == nullptr || v->is_null()) {
      fields.emplace_back(f.name, Value::EmptyList());
    } else {
      fields.emplace_back(f.name, v->is_list() ? std::move(*v) : Value::List({std::move(*v)}));
    }
  }
  return Value(std::move(fields));
}

// What a listed field shows, by the rules of JobFields, given the JSON text
// of its load member's value (empty: the load has no such member).
enum class FieldShows {
  kText,       // the text itself
  kFallback,   // Salt's default for the field
  kEmptyList,  // [] (Arguments: no arg, or null)
  kInList,     // [text] (Arguments: an arg that is not a list)
};

FieldShows Shows(const JobField& f, std::string_view text) {
  if (f.fallback != nullptr) return text.empty() ? FieldShows::kFallback : FieldShows::kText;
  if (text.empty() || text == "null") return FieldShows::kEmptyList;
  return text.front() == '[' ? FieldShows::kText : FieldShows::kInList;
}

// The job fields as JSON members (Function ... User) from the load's JSON
// text, with the rules of JobFields, for listings that print JSON. The texts
// are slices of `load_json` or of `scratch`, which must outlive `members`
// and is reserved here so that appending to it moves nothing.
void JobFieldsJson(std::string_view load_json, std::string& scratch,
                   std::vector<output::MapStream::JsonMember>& members) {
  std::string_view found[std::size(kListedKeys)];
  JsonMemberValues(load_json, kListedKeys, found);
  scratch.clear();
  scratch.reserve(load_json.size() + 64);
  for (std::size_t i = 0; i < std::size(kJobFields); ++i) {
    const JobField& f = kJobFields[i];
    std::string_view text = found[i];
    const std::size_t at = scratch.size();
    switch (Shows(f, text)) {
      case FieldShows::kText: break;
      case FieldShows::kFallback:
        WriteJsonString(f.fallback, JsonStyle::Storage(), scratch);
        text = std::string_view(scratch).substr(at);
        break;
      case FieldShows::kEmptyList: text = "[]"; break;
      case FieldShows::kInList:
        scratch.append("[").append(text).append("]");
        text = std::string_view(scratch).substr(at);
        break;
    }
    members.push_back({f.name, text});
  }
}

// JobFieldsJson with each listed member laid out, in `style` at level 2
// (MapStream::JsonMemberStyle), as the load is scanned for it: one pass over
// each load instead of a scan and then a layout. The texts are slices of
// `laid`. False when the load's arg is an object, which Arguments' rule
// wraps in a list, deepening its layout: JobFieldsJson takes that load.
bool JobFieldsLaidOut(std::string_view load_json, const JsonStyle& style, std::string& laid,
                      std::vector<output::MapStream::JsonMember>& members) {
  JsonSpan spans[std::size(kListedKeys)];
  laid.clear();
  JsonMemberLayout(load_json, kListedKeys, style, 2, laid, spans);
  for (std::size_t i = 0; i < std::size(kJobFields); ++i) {
    const JobField& f = kJobFields[i];
    JsonSpan& span = spans[i];
    const std::string_view text =
        span.begin == std::string::npos ? std::string_view() : std::string_view(laid).substr(span.begin, span.end - span.begin);
    const std::size_t at = laid.size();
    switch (Shows(f, text)) {
      case FieldShows::kText: continue;
      case FieldShows::kFallback: WriteJsonString(f.fallback, style, laid); break;
      case FieldShows::kEmptyList: laid += "[]"; break;
      case FieldShows::kInList: {
        if (text.front() == '{') return false;
        // A scalar's own text is the same at any level.
        const std::string item(text);
        laid += '[';
        if (style.indent >= 0) laid.append("\n").append(static_cast<std::size_t>(style.indent) * 3, ' ');
        laid += item;
        if (style.indent >= 0) laid.append("\n").append(static_cast<std::size_t>(style.indent) * 2, ' ');
        laid += ']';
        break;
      }
    }
    span = {at, laid.size()};
  }
  // Slices only now: the appends above may have moved `laid`.
  for (std::size_t i = 0; i < std::size(kJobFields); ++i) {
    members.push_back({kJobFields[i].name, std::string_view(laid).substr(spans[i].begin, spans[i].end - spans[i].begin),
                       true});
  }
  return true;
}

// salt.utils.jid.format_job_instance with the record's metadata: the job
// fields, then [Metadata].
Value FormatJob(Value load, Value metadata) {
  Value out = JobFields(load);
  if (!metadata.is_null()) out.as_map().emplace_back("Metadata", std::move(metadata));
  return out;
}

// The jobs runner's private _format_job_instance (list_job, print_job): the
// metadata only from the load's keys, and Minions copied from get_load.
Value FormatJobPrivate(Value load) {
  if (!load.is_map() || load.as_map().empty()) return Value::Map({{"Error", kNoJob}});
  Value out = JobFields(load);
  if (const Value* m = load.Find("metadata")) {
    out.Set("Metadata", *m);
  } else if (const Value* kw = load.Find("kwargs"); kw != nullptr && kw->Find("metadata") != nullptr) {
    out.Set("Metadata", *kw->Find("metadata"));
  }
  if (const Value* minions = load.Find("Minions")) out.Set("Minions", *minions);
  return out;
}

Value Wrap(const Value& outputter, Value data) {
  if (outputter.is_null() || (outputter.is_string() && outputter.as_string().empty())) return data;
  // Moved into place, not listed in an initializer list, which would copy the data.
  ValueMap wrapped(2);
  wrapped[0] = {"outputter", outputter};
  wrapped[1].first = "data";
  wrapped[1].second = std::move(data);
  return Value(std::move(wrapped));
}

bool StoreEndtime(Context& ctx) { return ctx.config().job_cache_store_endtime; }

// list_jobs prints {jid: record} as it reads: a day of a big fleet is 100k
// jobs, whose records as one Value would take far more memory than their
// text. Each record's members are slices of the stored load's text, and the
// json outputter lays each one out once, in place, without building a Value
// (the record's own text was put together and scanned again before).
void ListJobs(Context& ctx, store::JobFilter filter, const Value& outputter) {
  filter.json_text = true;
  const bool endtime = StoreEndtime(ctx);
  const auto stream = ctx.OpenMapStream(outputter);
  std::string scratch;
  std::string laid;
  const std::optional<JsonStyle> laid_style = stream->JsonMemberStyle();
  std::string time_text;
  std::string start_time;
  std::string end_time;
  std::vector<output::MapStream::JsonMember> members;
  ctx.Store().ForEachJob(filter, [&](store::JobRecord&& job) {
    members.clear();
    if (!laid_style || !JobFieldsLaidOut(job.load_json, *laid_style, laid, members)) {
      members.clear();
      JobFieldsJson(job.load_json, scratch, members);
    }
    if (job.metadata_json) members.push_back({"Metadata", *job.metadata_json});
    time_text.clear();
    AppendStartTime(job.jid, time_text);
    start_time.clear();
    WriteJsonString(time_text, JsonStyle::Storage(), start_time);
    members.push_back({"StartTime", start_time});
    if (endtime && job.endtime && !job.endtime->empty()) {
      end_time.clear();
      WriteJsonString(*job.endtime, JsonStyle::Storage(), end_time);
      members.push_back({"EndTime", end_time});
    }
    stream->AddJsonObject(std::move(job.jid), members);
  });
  stream->Finish();
  ctx.SuppressResult();
}

// jobs.list_job: {"jid", <formatted load>, "StartTime", "Result", ["EndTime"]}.
Value ListJob(Context& ctx, const std::string& jid) {
  auto& store = ctx.Store();
  Value out = Value::Map({{"jid", jid}});
  Value formatted = FormatJobPrivate(store.GetLoad(jid));
  for (auto& [k, v] : formatted.as_map()) out.Set(k, std::move(v));
  out.Set("StartTime", StartTime(jid));
  out.Set("Result", store.GetJid(jid));
  if (StoreEndtime(ctx)) {
    if (auto end = store.GetEndtime(jid); end && !end->empty()) out.Set("EndTime", *end);
  }
  return out;
}

Value LookupOne(Context& ctx, const std::string& jid, bool returned, bool missing) {
  // Salt's lookup_jid goes through list_job; only its Result (and, for
  // missing=True, its Minions) shows, so the load is read only then: a job
  // sent to 10,000 minions has a load of 10,000 names.
  Value data = Value::EmptyMap();
  if (missing) {
    data = ListJob(ctx, jid);
  } else {
    data.as_map().emplace_back("Result", ctx.Store().GetJid(jid));
  }
  const Value* targeted = data.Find("Minions");
  Value* returns = data.Find("Result");
  // Salt prints nothing for a jid it does not know; a script's author wants
  // to tell that from a job nobody answered yet, so say it on stderr.
  if ((returns == nullptr || returns->as_map().empty()) && ctx.Store().GetLoad(jid).as_map().empty()) {
    ctx.Notice("no job with jid " + jid + " in the store");
  }
  // Minion names are unique in both lists; maps are built by appending, with
  // a set for membership, so a job of 10,000 returns stays linear.
  Value ret = Value::EmptyMap();
  std::unordered_set<std::string_view> answered;
  if (returns != nullptr) {
    ret.as_map().reserve(returns->as_map().size());
    for (auto& [minion, r] : returns->as_map()) {
      answered.insert(minion);
      if (!returned) continue;
      Value* v = r.Find("return");
      ret.as_map().emplace_back(minion, v != nullptr ? std::move(*v) : Value());
    }
  }
  if (missing && targeted != nullptr && targeted->is_list()) {
    for (const Value& m : targeted->as_list()) {
      if (m.is_string() && answered.count(m.as_string()) == 0) {
        ret.as_map().emplace_back(m.as_string(), "Minion did not return");
      }
    }
  }
  // The outputter of the first return, when it asked for one (state runs: highstate).
  if (returns != nullptr && !returns->as_map().empty()) {
    const Value* out = returns->as_map().front().second.Find("out");
    if (out != nullptr && out->Truthy()) return Wrap(*out, std::move(ret));
  }
  return ret;
}

// lookup_jid of one jid with Salt's defaults (returned, not missing), as
// LookupOne prints it: each stored return's `return` is a slice of its text,
// copied into the output by json without building a Value, so a job of
// 10,000 returns or one 50 MB dict is never held as Values (nested and yaml
// still parse each return, as before). The store hands the returns out in minion-name
// order, the order the outputters print a map in.
void LookupStreamed(Context& ctx, const std::string& jid) {
  static constexpr std::string_view kKeys[] = {"return", "out"};
  std::unique_ptr<output::MapStream> stream;
  // The outputters that parse the text get the Values after the read: the
  // store's copy of a 50 MB return is freed by then, as on the Value path.
  ValueMap parsed;
  ctx.Store().ForEachReturnJson(jid, [&](std::string_view minion, std::string_view full_ret) {
    std::string_view found[std::size(kKeys)];
    JsonMemberValues(full_ret, kKeys, found);
    if (!stream) {
      // The outputter of the first return, when it asked for one (state runs: highstate).
      const Value out = found[1].empty() ? Value() : ParseJson(found[1]);
      stream = ctx.OpenMapStream(out.Truthy() ? out : Value());
    }
    const std::string_view text = found[0].empty() ? std::string_view("null") : found[0];
    if (stream->CopiesJsonText()) {
      stream->AddJson(std::string(minion), text);
    } else {
      parsed.emplace_back(std::string(minion), ParseJson(text));
    }
  });
  for (auto& [minion, value] : parsed) stream->Add(std::move(minion), std::move(value));
  if (!stream) {
    if (ctx.Store().GetLoad(jid).as_map().empty()) ctx.Notice("no job with jid " + jid + " in the store");
    stream = ctx.OpenMapStream(Value());
  }
  stream->Finish();
  ctx.SuppressResult();
}

store::JobFilter BuildFilter(Context& ctx, const Value& search_metadata, const Value& search_function,
                             const Value& search_target, const Value& start_time, const Value& end_time) {
  store::JobFilter f;
  if (!search_function.is_null()) f.function_globs = GlobListArg(search_function, "search_function");
  if (!search_target.is_null()) f.target_globs = GlobListArg(search_target, "search_target");
  if (!search_metadata.is_null()) f.metadata = search_metadata;
  if (!start_time.is_null()) f.jid_min = FormatJid(TimeArg(start_time, "start_time"));
  // Inclusive: a jid of that very microsecond with a _pid suffix sorts after the bare 20 digits.
  if (!end_time.is_null()) f.jid_max = FormatJid(TimeArg(end_time, "end_time")) + "~";
  if (ctx.debugging()) {
    auto globs = [](const std::vector<std::string>& g) {
      Value l = Value::EmptyList();
      for (const auto& x : g) l.as_list().emplace_back(x);
      return ToJsonForMessage(l);
    };
    ctx.Debug("query: jids " + f.jid_min.value_or("(oldest)") + " to " + f.jid_max.value_or("(newest)") +
              ", functions " + globs(f.function_globs) + ", targets " + globs(f.target_globs) + ", metadata " +
              (f.metadata ? ToJsonForMessage(*f.metadata) : std::string("(any)")));
  }
  return f;
}

Value Active(Context& ctx) {
  const auto window = std::chrono::seconds(ctx.config().brine.active_window_s);
  Value out = Value::EmptyMap();
  for (store::ActiveJob& job : store::FindActiveJobs(ctx.Store(), ctx.clock().Now(), window)) {
    Value rec = FormatJobPrivate(job.load);
    rec.Erase("Minions");
    rec.Set("StartTime", StartTime(job.jid));
    Value running = Value::EmptyList();
    for (auto& [minion, pid] : job.running) running.as_list().push_back(Value(ValueMap{{minion, std::move(pid)}}));
    rec.Set("Running", std::move(running));
    Value returned = Value::EmptyList();
    for (const std::string& minion : job.returned) returned.as_list().emplace_back(minion);
    rec.Set("Returned", std::move(returned));
    out.as_map().emplace_back(job.jid, std::move(rec));
  }
  return out;
}

const Value kNone;

}  // namespace

void AddJobsFunctions(std::vector<FunctionSpec>& fns) {
  fns.push_back({
      "jobs.list_jobs",
      {{"ext_source", kNone}, {"outputter", kNone}, {"search_metadata", kNone}, {"search_function", kNone},
       {"search_target", kNone}, {"start_time", kNone}, {"end_time", kNone}, {"display_progress", false},
       {"limit", kNone}, {"returned", kNone}, {"failed", kNone}},
      [](Context& ctx, const Args& a) {
        const Value& outputter = a["outputter"];
        const Value& search_metadata = a["search_metadata"];
        const Value& limit = a["limit"];
        const Value& returned = a["returned"];
        const Value& failed = a["failed"];
        // Salt's quirk, kept: a search_metadata that is not a dict filters out every job.
        if (!search_metadata.is_null() && !search_metadata.is_map()) return Wrap(outputter, Value::EmptyMap());
        store::JobFilter f = BuildFilter(ctx, search_metadata, a["search_function"], a["search_target"],
                                         a["start_time"], a["end_time"]);
        if (!limit.is_null()) {
          const auto n = IntArg(limit, "limit");
          if (n < 0) throw UsageError("limit must not be negative");
          f.limit = static_cast<std::size_t>(n);
        }
        if (!returned.is_null()) f.has_returns = returned.Truthy();
        if (!failed.is_null()) f.has_failures = failed.Truthy();
        ListJobs(ctx, std::move(f), outputter);
        return Value();
      },
  });
  fns.push_back({
      "jobs.list_jobs_filter",
      {{"count", std::nullopt}, {"filter_find_job", true}, {"ext_source", kNone}, {"outputter", kNone},
       {"display_progress", false}},
      [](Context& ctx, const Args& a) {
        const auto count = IntArg(a["count"], "count");
        if (count < 0) throw UsageError("count must not be negative");
        const auto find_jobs =
            a["filter_find_job"].Truthy() ? store::Store::FindJobs::kDrop : store::Store::FindJobs::kKeep;
        const auto jobs = ctx.Store().GetJidsFilter(static_cast<std::size_t>(count), find_jobs);
        Value list = Value::EmptyList();
        for (const auto& job : jobs) {
          Value rec = FormatJob(job.load, job.metadata);
          rec.Set("JID", job.jid);
          rec.Set("StartTime", StartTime(job.jid));
          list.as_list().push_back(std::move(rec));
        }
        return Wrap(a["outputter"], std::move(list));
      },
  });
  fns.push_back({
      "jobs.list_job",
      {{"jid", std::nullopt}, {"ext_source", kNone}, {"display_progress", false}},
      [](Context& ctx, const Args& a) { return ListJob(ctx, StringArg(a["jid"], "jid")); },
  });
  fns.push_back({
      "jobs.lookup_jid",
      {{"jid", std::nullopt}, {"ext_source", kNone}, {"returned", true}, {"missing", false},
       {"display_progress", false}},
      [](Context& ctx, const Args& a) {
        const Value& jids = a["jid"];
        const bool returned = a["returned"].Truthy();
        const bool missing = a["missing"].Truthy();
        if (jids.is_list()) {
          Value out = Value::EmptyMap();
          for (const Value& j : jids.as_list()) {
            const std::string jid = StringArg(j, "jid");
            out.Set(jid, LookupOne(ctx, jid, returned, missing));
          }
          return out;
        }
        const std::string jid = StringArg(jids, "jid");
        if (returned && !missing) {
          LookupStreamed(ctx, jid);
          return Value();
        }
        return LookupOne(ctx, jid, returned, missing);
      },
  });
  fns.push_back({
      "jobs.print_job",
      {{"jid", std::nullopt}, {"ext_source", kNone}},
      [](Context& ctx, const Args& a) {
        const std::string jid = StringArg(a["jid"], "jid");
        auto& store = ctx.Store();
        Value rec = FormatJobPrivate(store.GetLoad(jid));
        rec.Set("StartTime", StartTime(jid));
        rec.Set("Result", store.GetJid(jid));
        if (StoreEndtime(ctx)) {
          if (auto end = store.GetEndtime(jid); end && !end->empty()) rec.Set("EndTime", *end);
        }
        return Value::Map({{jid, std::move(rec)}});
      },
  });
  fns.push_back({
      "jobs.exit_success",
      {{"jid", std::nullopt}, {"ext_source", kNone}},
      [](Context& ctx, const Args& a) {
        const Value data = ListJob(ctx, StringArg(a["jid"], "jid"));
        const Value* minions = data.Find("Minions");
        const Value* result = data.Find("Result");
        // Salt: every expected minion False, then True for each truthy return.
        Value out = Value::EmptyMap();
        std::unordered_map<std::string, std::size_t> slot;
        auto set = [&](const std::string& minion, bool ok) {
          auto [it, fresh] = slot.emplace(minion, out.as_map().size());
          if (fresh) {
            out.as_map().emplace_back(minion, ok);
          } else {
            out.as_map()[it->second].second = ok;
          }
        };
        if (minions != nullptr && minions->is_list()) {
          for (const Value& m : minions->as_list()) set(m.as_string(), false);
        }
        for (const auto& [minion, r] : result->as_map()) {
          const Value* ret = r.Find("return");
          if (ret != nullptr && ret->Truthy()) set(minion, true);
        }
        return out;
      },
  });
  fns.push_back({
      "jobs.last_run",
      {{"ext_source", kNone}, {"outputter", kNone}, {"metadata", kNone}, {"function", kNone}, {"target", kNone},
       {"display_progress", false}},
      [](Context& ctx, const Args& a) -> Value {
        const Value& metadata = a["metadata"];
        if (!metadata.is_null() && !metadata.is_map()) return false;
        store::JobFilter f = BuildFilter(ctx, metadata, a["function"], a["target"], kNone, kNone);
        f.limit = 1;
        const auto jobs = ctx.Store().GetJids(f);
        if (jobs.empty()) return false;
        const std::string& jid = jobs.back().jid;
        auto& store = ctx.Store();
        Value rec = FormatJobPrivate(store.GetLoad(jid));
        rec.Set("StartTime", StartTime(jid));
        rec.Set("Result", store.GetJid(jid));
        return Wrap(a["outputter"], Value::Map({{jid, std::move(rec)}}));
      },
  });
  fns.push_back({
      "jobs.active",
      {{"display_progress", false}, {"timeout", kNone}},
      [](Context& ctx, const Args&) { return Active(ctx); },
  });
}

}  // namespace brine::runner
