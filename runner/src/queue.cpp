// The queue runner (Salt's salt/runners/queue.py with its sqlite backend,
// spec salt-queue-and-tests.md section 1) over the brine store's queue tables.
//
// Kept from Salt: the names, parameters, defaults and return values; the
// duplicate messages returned as the result (1.3); pop's quantity rules
// ("all", 0 gives [], a negative quantity pops all, floats truncate) and its
// error text; list_queues naming every queue any call named (G9); the
// `Function "<backend>.<op>" is not available` message for other backends.
// Changed on purpose (README "Queue"): FIFO by insertion; a list insert is all
// or nothing; items keep their JSON type; pops are atomic across processes;
// process_queue commits its pop only once the master took the event;
// insert_runner/process_runner default to runner_queue's backend, else sqlite.
#include <pwd.h>
#include <unistd.h>

#include <cmath>
#include <stdexcept>

#include "brine/core/jid.h"
#include "brine/core/json.h"
#include "brine/store/queues.h"
#include "functions.h"
#include "master_bus.h"
#include "proc_file.h"

namespace brine::runner {
namespace {

constexpr const char* kSqlite = "sqlite";
const Value kNone;

// Python's str() of a backend argument, as Salt builds "<backend>.<op>".
std::string BackendName(const Value& v) {
  if (v.is_string()) return v.as_string();
  if (v.is_null()) return "None";
  if (v.is_bool()) return v.as_bool() ? "True" : "False";
  return ToJsonForMessage(v);
}

// Salt's loader lookup: only the sqlite backend exists here (spec 1.1).
void CheckBackend(const std::string& backend, const char* op) {
  if (backend != kSqlite) throw RuntimeFailure("Function \"" + backend + "." + op + "\" is not available");
}

// Python's repr() of a str, for messages that quote Python's own.
std::string PyRepr(const std::string& s) {
  const char quote = (s.find('\'') != std::string::npos && s.find('"') == std::string::npos) ? '"' : '\'';
  std::string out(1, quote);
  static constexpr char kHex[] = "0123456789abcdef";
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (ch == quote || ch == '\\') {
      out += '\\';
      out += ch;
    } else if (ch == '\n') {
      out += "\\n";
    } else if (ch == '\r') {
      out += "\\r";
    } else if (ch == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7F) {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xF];
    } else {
      out += ch;
    }
  }
  return out + quote;
}

std::string QueueName(const Value& v, const std::string& what) {
  const std::string name = StringArg(v, what);
  if (!store::IsValidQueueName(name)) {
    throw UsageError("invalid queue name " + PyRepr(name) +
                     ": a queue name is 1-255 bytes of UTF-8 without '/', NUL or control characters");
  }
  return name;
}

// Python's int(text) for a str: blanks around, an optional sign, digits with
// single underscores between them. nullopt when Python raises ValueError; a
// value beyond 64 bits saturates (a limit that large means "all" anyway).
std::optional<std::int64_t> PythonIntOfText(const std::string& text) {
  const auto b = text.find_first_not_of(" \t\n\r\f\v");
  if (b == std::string::npos) return std::nullopt;
  const auto e = text.find_last_not_of(" \t\n\r\f\v");
  std::string_view t(text.data() + b, e - b + 1);
  bool negative = false;
  if (t.front() == '+' || t.front() == '-') {
    negative = t.front() == '-';
    t.remove_prefix(1);
  }
  if (t.empty() || t.front() == '_' || t.back() == '_') return std::nullopt;
  std::int64_t n = 0;
  bool saturated = false;
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (t[i] == '_') {
      if (t[i - 1] == '_') return std::nullopt;
      continue;
    }
    if (t[i] < '0' || t[i] > '9') return std::nullopt;
    if (n > (INT64_MAX - 9) / 10) saturated = true;
    if (!saturated) n = n * 10 + (t[i] - '0');
  }
  if (saturated) n = INT64_MAX;
  return negative ? -n : n;
}

// pop's quantity (spec 1.3): exactly "all", or whatever Python's int() takes.
// Returns the store's quantity (store::kAllItems for all). Throws UsageError
// with Salt's text for a ValueError, Python's TypeError text for other types.
std::int64_t Quantity(const Value& v) {
  auto value_error = [](const std::string& python_error) {
    return UsageError("Quantity must be an integer or \"all\".\nError: \"" + python_error + "\".");
  };
  switch (v.kind()) {
    case Value::Kind::kString: {
      if (v.as_string() == "all") return store::kAllItems;
      if (const auto n = PythonIntOfText(v.as_string())) return *n;
      throw value_error("invalid literal for int() with base 10: " + PyRepr(v.as_string()));
    }
    case Value::Kind::kInt: return v.as_int();
    case Value::Kind::kUint: return store::kAllItems;
    case Value::Kind::kBool: return v.as_bool() ? 1 : 0;
    case Value::Kind::kFloat: {
      const double d = v.as_float();
      if (std::isnan(d)) throw value_error("cannot convert float NaN to integer");
      if (std::isinf(d)) throw UsageError("cannot convert float infinity to integer");
      if (d >= 9.2e18 || d <= -9.2e18) return store::kAllItems;
      return static_cast<std::int64_t>(d);  // truncates toward zero, as int() does
    }
    case Value::Kind::kNull:
      throw UsageError("int() argument must be a string, a bytes-like object or a real number, not 'NoneType'");
    case Value::Kind::kList:
      throw UsageError("int() argument must be a string, a bytes-like object or a real number, not 'list'");
    case Value::Kind::kMap:
      throw UsageError("int() argument must be a string, a bytes-like object or a real number, not 'dict'");
  }
  throw UsageError("quantity: unexpected value");
}

// The items of an insert or delete: each element of a list, else the one value.
std::vector<Value> ItemsOf(const Value& items) {
  if (items.is_list()) return items.as_list();
  return {items};
}

std::string DuplicateMessage(const Value& items, const std::string& queue) {
  const std::string tail = "already exists in this queue. sqlite error: UNIQUE constraint failed: " + queue + ".name";
  return items.is_list() ? "One or more items " + tail : "Item " + tail;
}

Value ListOf(const std::vector<Value>& items) { return Value(items); }

Value Insert(Context& ctx, const std::string& queue, const Value& items) {
  store::InsertOutcome outcome;
  try {
    outcome = ctx.Queues().Insert(queue, ItemsOf(items));
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  if (outcome.kind == store::InsertOutcome::Kind::kDuplicate) return DuplicateMessage(items, queue);
  return true;
}

// The `runner_queue` config block's `key` (spec 1.2), or nullptr.
const Value* RunnerQueueSetting(const Context& ctx, const char* key) {
  const Value* block = ctx.config().raw.Find("runner_queue");
  if (block == nullptr || !block->is_map()) return nullptr;
  const Value* v = block->Find(key);
  return v == nullptr || v->is_null() ? nullptr : v;
}

// insert_runner/process_runner's queue: the argument, else runner_queue.queue.
std::string RunnerQueue(const Context& ctx, const Value& arg) {
  if (!arg.is_null()) return QueueName(arg, "queue");
  if (const Value* configured = RunnerQueueSetting(ctx, "queue")) return QueueName(*configured, "runner_queue.queue");
  throw UsageError("no queue given: pass queue=NAME or set runner_queue: {queue: NAME} in the master config");
}

// ... and backend: the argument, else runner_queue.backend, else sqlite (Salt: pgjsonb).
std::string RunnerBackend(const Context& ctx, const Value& arg) {
  if (!arg.is_null()) return BackendName(arg);
  if (const Value* configured = RunnerQueueSetting(ctx, "backend")) return BackendName(*configured);
  return kSqlite;
}

std::string ProcessTag(const std::string& queue) { return "salt/queue/" + queue + "/process"; }

// The event payload of process_queue with Salt's `_stamp` (spec 1.2, step 5).
Value Payload(Context& ctx, const std::vector<Value>& items, const std::string& backend, const std::string& queue) {
  Value data = Value::Map({{"items", ListOf(items)}, {"backend", backend}, {"queue", queue}});
  data.Set("_stamp", FormatStamp(ctx.clock().Now()));
  return data;
}

// Sends the event of a held pop; on failure the caller's PopBatch rolls back.
void Fire(Context& ctx, const std::string& queue, const Value& data) {
  try {
    FireMasterEvent(ctx.config(), ProcessTag(queue), data);
  } catch (const RuntimeFailure& e) {
    throw RuntimeFailure(std::string(e.what()) + "; nothing was popped from queue " + queue);
  } catch (const std::invalid_argument& e) {
    throw RuntimeFailure("cannot send the items of queue " + queue + " as an event: " + e.what() +
                         "; nothing was popped");
  }
}

// The pop is held open while the event goes out, so the items leave the queue
// only once the master has them: a down master loses nothing. The event
// cannot be taken back, so a failed commit after a sent event leaves the items
// queued and they may be delivered again (at least once, never lost).
Value ProcessQueue(Context& ctx, const std::string& queue, std::int64_t quantity, const std::string& backend) {
  store::PopBatch batch = ctx.Queues().BeginPop(queue, quantity);
  Value data = Payload(ctx, batch.items(), backend, queue);
  Fire(ctx, queue, data);
  batch.Commit();
  return data;
}

// One queued runner call, checked and bound before anything is popped.
struct RunnerCall {
  const FunctionSpec* spec;
  Args args;  // bound to spec->params
};

RunnerCall CheckRunnerCall(const Value& item, const std::string& queue) {
  const std::string left = "; it was left in queue " + queue;
  const std::string* fun = item.FindString("fun");
  if (fun == nullptr) {
    throw RuntimeFailure("the item " + ToJsonForMessage(item) +
                         " is not a runner call ({\"fun\": ..., \"args\": [...], \"kwargs\": {...}})" + left);
  }
  const FunctionSpec* spec = FindFunction(*fun);
  if (spec == nullptr) {
    throw RuntimeFailure("the queued runner function " + *fun + " is not available in brine-run" + left);
  }
  ParsedArgs parsed;
  if (const Value* args = item.Find("args"); args != nullptr && !args->is_null()) {
    if (!args->is_list()) throw RuntimeFailure("the args of the queued call to " + *fun + " are not a list" + left);
    parsed.positional = args->as_list();
  }
  if (const Value* kwargs = item.Find("kwargs"); kwargs != nullptr && !kwargs->is_null()) {
    if (!kwargs->is_map()) throw RuntimeFailure("the kwargs of the queued call to " + *fun + " are not a dict" + left);
    parsed.keyword = kwargs->as_map();
  }
  try {
    return {spec, BindArgs(*fun, spec->params, parsed)};
  } catch (const UsageError& e) {
    throw RuntimeFailure("the queued call to " + *fun + " has invalid arguments: " + e.what() + left);
  }
}

std::string UserName() {
  if (const passwd* pw = ::getpwuid(::geteuid()); pw != nullptr && pw->pw_name != nullptr) return pw->pw_name;
  return "UNKNOWN";
}

Value ProcessRunner(Context& ctx, std::int64_t quantity, const std::string& queue, const std::string& backend) {
  const Micros now = ctx.clock().Now();
  const std::string jid = FormatJid(now);
  const ProcFile proc(ctx.config().cachedir, jid,
                      Value::Map({{"fun", "runner.queue.process_runner"},
                                  {"jid", jid},
                                  {"user", UserName()},
                                  {"fun_args", Value::List({Value::Map({{"quantity", quantity},
                                                                        {"queue", queue},
                                                                        {"backend", backend}})})},
                                  {"_stamp", FormatStamp(now)}}));
  std::vector<RunnerCall> calls;
  {
    store::PopBatch batch = ctx.Queues().BeginPop(queue, quantity);
    // Every popped call must be runnable here before any leaves the queue.
    for (const Value& item : batch.items()) calls.push_back(CheckRunnerCall(item, queue));
    Fire(ctx, queue, Payload(ctx, batch.items(), backend, queue));
    batch.Commit();
  }
  // As in Salt, the calls run after the pop: one that fails has left the queue.
  for (const RunnerCall& call : calls) {
    try {
      (void)call.spec->call(ctx, call.args);
    } catch (const std::exception& e) {
      throw RuntimeFailure("the queued call to " + call.spec->name + " failed: " + e.what() +
                           " (it was already popped from queue " + queue + ")");
    }
  }
  return Value();
}

}  // namespace

void AddQueueFunctions(std::vector<FunctionSpec>& out) {
  out.push_back({
      "queue.insert",
      {{"queue", std::nullopt}, {"items", std::nullopt}, {"backend", kSqlite}},
      [](Context& ctx, const Args& a) {
        CheckBackend(BackendName(a["backend"]), "insert");
        return Insert(ctx, QueueName(a["queue"], "queue"), a["items"]);
      },
  });
  out.push_back({
      "queue.delete",
      {{"queue", std::nullopt}, {"items", std::nullopt}, {"backend", kSqlite}},
      [](Context& ctx, const Args& a) -> Value {
        CheckBackend(BackendName(a["backend"]), "delete");
        const std::string queue = QueueName(a["queue"], "queue");
        try {
          (void)ctx.Queues().Delete(queue, ItemsOf(a["items"]));
        } catch (const std::invalid_argument& e) {
          throw UsageError(e.what());
        }
        return true;
      },
  });
  out.push_back({
      "queue.list_queues",
      {{"backend", kSqlite}},
      [](Context& ctx, const Args& a) {
        CheckBackend(BackendName(a["backend"]), "list_queues");
        ValueList names;
        for (auto& n : ctx.Queues().ListQueues()) names.emplace_back(std::move(n));
        return Value(std::move(names));
      },
  });
  out.push_back({
      "queue.list_length",
      {{"queue", std::nullopt}, {"backend", kSqlite}},
      [](Context& ctx, const Args& a) {
        CheckBackend(BackendName(a["backend"]), "list_length");
        return Value(ctx.Queues().Length(QueueName(a["queue"], "queue")));
      },
  });
  out.push_back({
      "queue.list_items",
      {{"queue", std::nullopt}, {"backend", kSqlite}},
      [](Context& ctx, const Args& a) {
        CheckBackend(BackendName(a["backend"]), "list_items");
        return ListOf(ctx.Queues().Items(QueueName(a["queue"], "queue")));
      },
  });
  out.push_back({
      "queue.pop",
      {{"queue", std::nullopt}, {"quantity", 1}, {"backend", kSqlite}, {"is_runner", false}},
      [](Context& ctx, const Args& a) {
        CheckBackend(BackendName(a["backend"]), "pop");
        const std::string queue = QueueName(a["queue"], "queue");
        return ListOf(ctx.Queues().Pop(queue, Quantity(a["quantity"])));
      },
  });
  out.push_back({
      "queue.process_queue",
      {{"queue", std::nullopt}, {"quantity", 1}, {"backend", kSqlite}, {"is_runner", false}},
      [](Context& ctx, const Args& a) {
        const std::string backend = BackendName(a["backend"]);
        CheckBackend(backend, "pop");
        const std::string queue = QueueName(a["queue"], "queue");
        return ProcessQueue(ctx, queue, Quantity(a["quantity"]), backend);
      },
  });
  out.push_back({
      "queue.insert_runner",
      {{"fun", std::nullopt}, {"args", kNone}, {"kwargs", kNone}, {"queue", kNone}, {"backend", kNone}},
      [](Context& ctx, const Args& a) {
        const std::string fun = StringArg(a["fun"], "fun");
        const Value& args = a["args"];
        const Value& kwargs = a["kwargs"];
        Value call_args = Value::EmptyList();
        if (args.is_string()) {
          // Salt splits on "," and keeps the blanks.
          const std::string& text = args.as_string();
          std::size_t start = 0;
          for (std::size_t comma; (comma = text.find(',', start)) != std::string::npos; start = comma + 1) {
            call_args.as_list().emplace_back(text.substr(start, comma - start));
          }
          call_args.as_list().emplace_back(text.substr(start));
        } else if (args.is_list()) {
          call_args = args;
        } else if (!args.is_null()) {
          throw UsageError("args must be a list or a comma-separated string, got " + ToJsonForMessage(args));
        }
        Value call_kwargs = Value::EmptyMap();
        if (kwargs.is_map()) {
          call_kwargs = kwargs;
        } else if (!kwargs.is_null()) {
          throw UsageError("kwargs must be a dict, got " + ToJsonForMessage(kwargs));
        }
        const std::string backend = RunnerBackend(ctx, a["backend"]);
        CheckBackend(backend, "insert");
        const std::string queue = RunnerQueue(ctx, a["queue"]);
        return Insert(ctx, queue, Value::Map({{"fun", fun}, {"args", call_args}, {"kwargs", call_kwargs}}));
      },
  });
  out.push_back({
      "queue.process_runner",
      {{"quantity", 1}, {"queue", kNone}, {"backend", kNone}},
      [](Context& ctx, const Args& a) {
        const std::string backend = RunnerBackend(ctx, a["backend"]);
        CheckBackend(backend, "pop");
        const std::string queue = RunnerQueue(ctx, a["queue"]);
        return ProcessRunner(ctx, Quantity(a["quantity"]), queue, backend);
      },
  });
}

}  // namespace brine::runner
