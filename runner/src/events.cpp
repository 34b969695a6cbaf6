// Watching and firing bus events: state.event and event.send.
#include <signal.h>
#include <unistd.h>

#include <atomic>

#include <cstdlib>
#include <zmq.h>

#include "brine/config/bus_endpoints.h"
#include "brine/core/glob.h"
#include "brine/core/jid.h"
#include "brine/core/json.h"
#include "brine/wire/codec.h"
#include "functions.h"
#include "master_bus.h"
#include "proc_file.h"
#include "zmq_socket.h"

namespace brine::runner {
namespace {

const Value kNone;

// state.event runs until count events matched or it is told to stop; a signal
// handler only sets this, and the loop leaves so the proc file is removed.
std::atomic<bool> g_stop_watching{false};

extern "C" void OnWatchSignal(int) { g_stop_watching = true; }

std::string CurrentUser() {
  const char* user = std::getenv("SUDO_USER");
  if (user == nullptr) user = std::getenv("USER");
  return user != nullptr ? user : "root";
}

Value StateEvent(Context& ctx, const Args& a) {
  const std::string tagmatch = a["tagmatch"].is_null() ? "*" : StringArg(a["tagmatch"], "tagmatch");
  std::int64_t count = IntArg(a["count"], "count");
  const bool quiet = a["quiet"].Truthy();
  const auto sock_dir = OptionalStringArg(a["sock_dir"], "sock_dir");
  const bool pretty = a["pretty"].Truthy();
  if (StringArg(a["node"], "node") != "master") {
    throw UsageError("node must be 'master': brine-run watches the master's bus only");
  }
  const auto endpoints = config::EndpointsFor(ctx.config(), sock_dir.value_or(""));

  // Listed by jobs.master while it runs, as Salt lists its runners.
  JidGenerator jids(ctx.clock(), JidUniqueness::kPlain, static_cast<long>(::getpid()));
  const std::string jid = jids.Next();
  ValueList fun_args{Value(tagmatch)};
  ProcFile proc(ctx.config().cachedir, jid,
                Value::Map({{"fun", "runner.state.event"}, {"jid", jid}, {"user", CurrentUser()},
                            {"fun_args", Value(fun_args)}, {"_stamp", FormatStamp(ctx.clock().Now())}}));

  // Attached (brine.bus: attach or none), the master's own publisher is read
  // directly; bound, brine-master's PUB. Either wakes up now and then to
  // notice SIGINT/SIGTERM.
  std::optional<ZmqSocket> sub;
  std::optional<SaltBusSubscriber> salt;
  if (ctx.config().brine.bus == config::MasterConfig::BusMode::kBind) {
    sub.emplace(ZmqSocket::Type::kSub);
    sub->Set(ZMQ_SUBSCRIBE, std::string_view(""));
    sub->Set(ZMQ_LINGER, 0);
    // ZeroMQ reconnects by itself when the master restarts.
    sub->Set(ZMQ_RECONNECT_IVL, 100);
    sub->Connect(endpoints.pub);
    sub->Set(ZMQ_RCVTIMEO, 200);
  } else {
    config::SaltBus bus = config::SaltBusFor(ctx.config());
    if (sock_dir && bus.pub_port == 0) bus.pub_path = std::filesystem::path(*sock_dir) / "master_event_pub.ipc";
    salt.emplace(std::move(bus), static_cast<std::size_t>(ctx.config().brine.max_frame_bytes));
  }
  struct sigaction sa {};
  sa.sa_handler = OnWatchSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  const JsonStyle style = pretty ? JsonStyle{.indent = 4, .spaced = true, .sort_keys = true, .python_nonfinite = true}
                                 : JsonStyle::Python(-1);
  std::ostream& out = ctx.out();
  while (count != 0 && !g_stop_watching) {
    const std::optional<std::string> msg = sub ? sub->Receive() : salt->Receive(200);
    if (!msg) continue;
    auto decoded = wire::DecodeFrame(*msg);
    auto* event = std::get_if<wire::DecodedEvent>(&decoded);
    if (event == nullptr || !FnMatch(tagmatch, event->tag)) continue;
    if (!quiet) {
      out << event->tag << '\t' << ToJson(event->data, style) << '\n';
      out.flush();
    }
    if (count > 0) --count;
  }
  ctx.SuppressResult();
  return Value();
}

Value EventSend(Context& ctx, const Args& a) {
  const std::string tag = StringArg(a["tag"], "tag");
  Value data = a["data"].is_null() ? Value::EmptyMap() : a["data"];
  if (!data.is_map()) throw UsageError("Dict object expected, not '" + ToJsonForMessage(data) + "'.");
  if (tag.empty()) throw UsageError("Empty tag.");
  data.Set("_stamp", FormatStamp(ctx.clock().Now()));
  try {
    FireMasterEvent(ctx.config(), tag, data);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  return true;
}

}  // namespace

void AddEventFunctions(std::vector<FunctionSpec>& fns) {
  fns.push_back({
      "state.event",
      {{"tagmatch", "*"}, {"count", -1}, {"quiet", false}, {"sock_dir", kNone}, {"pretty", false},
       {"node", "master"}},
      StateEvent,
  });
  fns.push_back({
      "event.send",
      {{"tag", std::nullopt}, {"data", kNone}},
      EventSend,
  });
}

}  // namespace brine::runner
