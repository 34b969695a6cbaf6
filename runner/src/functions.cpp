#include "functions.h"

#include <algorithm>
#include <chrono>

#include "brine/core/json.h"
#include "help_texts.h"
#include "brine/args/times.h"

namespace brine::runner {

void Context::Debug(const std::string& text) {
  if (debug_) err_ << "[DEBUG   ] " << text << "\n";
}

void Context::Print(const Value& v) {
  if (!print_value_ || !print_value_(v)) throw RuntimeFailure("cannot write the output");
}

void Context::PrintText(const std::string& text) {
  if (!print_text_ || !print_text_(text)) throw RuntimeFailure("cannot write the output");
}

store::Store& Context::Store() {
  if (!store_) {
    // brine.read_database (a replica) when set: these reads never write.
    const auto& path = config_.brine.read_database.value_or(config_.brine.database);
    const auto started = std::chrono::steady_clock::now();
    Debug("opening the store " + store::RedactDatabase(path) + " read-only");
    try {
      // A query reads each page about once, so the operating system's page
      // cache serves it as well as SQLite's; a small one of our own keeps a
      // 50 MB return from being held twice.
      store_ = store::OpenStore(path, {.access = store::OpenOptions::Access::kReadOnly, .sqlite = {.cache_kib = 4 * 1024}});
    } catch (const store::StoreError& e) {
      throw RuntimeFailure(e.what());
    }
    Debug("store open in " +
          std::to_string(std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - started)
                             .count()) +
          " us");
  }
  return *store_;
}

store::Queues& Context::Queues() {
  if (!queues_) {
    Debug("opening the queue tables in " + store::RedactDatabase(config_.brine.database) + " read-write");
    try {
      queues_ = store::OpenQueues(config_.brine.database, {.sync = config_.brine.sync});
    } catch (const store::StoreError& e) {
      throw RuntimeFailure(e.what());
    }
  }
  return *queues_;
}

std::unique_ptr<store::Store> OpenWritableStore(const config::MasterConfig& config, store::OpenOptions options) {
  options.access = store::OpenOptions::Access::kReadWrite;
  options.sync = config.brine.sync;
  try {
    return store::OpenStore(config.brine.database, options);
  } catch (const store::StoreError& e) {
    throw RuntimeFailure(e.what());
  }
}

store::Batch BeginBatchPatiently(store::Store& store) {
  for (int attempt = 1;; ++attempt) {
    try {
      return store.BeginBatch();
    } catch (const store::BusyError&) {
      if (attempt == 6) throw;
    }
  }
}

const std::vector<FunctionSpec>& AllFunctions() {
  static const std::vector<FunctionSpec> kAll = [] {
    std::vector<FunctionSpec> all;
    AddJobsFunctions(all);
    AddBrineFunctions(all);
    AddQueueFunctions(all);
    AddEventFunctions(all);
    AddSqlFunctions(all);
    AddManageFunctions(all);
    std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
    AttachHelpTexts(all, HelpTexts());
    return all;
  }();
  return kAll;
}

const FunctionSpec* FindFunction(const std::string& name) {
  for (const auto& f : AllFunctions()) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

std::string ToJsonForMessage(const Value& v) { return ToJson(v, JsonStyle::Python(-1)); }

std::string StringArg(const Value& v, const std::string& name) {
  switch (v.kind()) {
    case Value::Kind::kString: return v.as_string();
    case Value::Kind::kInt: return std::to_string(v.as_int());
    case Value::Kind::kUint: return std::to_string(v.as_uint());
    default: throw UsageError(name + " must be a string, got " + ToJsonForMessage(v));
  }
}

std::optional<std::string> OptionalStringArg(const Value& v, const std::string& name) {
  if (v.is_null()) return std::nullopt;
  return StringArg(v, name);
}

std::int64_t IntArg(const Value& v, const std::string& name) {
  if (v.kind() == Value::Kind::kInt) return v.as_int();
  if (v.is_string()) {
    try {
      std::size_t used = 0;
      const long long n = std::stoll(v.as_string(), &used);
      if (used == v.as_string().size()) return n;
    } catch (const std::exception&) {
    }
  }
  throw UsageError(name + " must be an integer, got " + ToJsonForMessage(v));
}

Micros TimeArg(const Value& v, const std::string& name) {
  const std::string text = StringArg(v, name);
  auto t = args::ParseTimeArg(text);
  if (!t) {
    throw UsageError(name + ": cannot read '" + text +
                     "' as a time (ISO 8601, 'YYYY-MM-DD HH:MM', 'YYYY-MM-DD', 'Nov 23 2026', '23 Nov 2026 10:00', "
                     "'2026/11/23' or '2024, Jan 01 12:00:00.123456')");
  }
  return *t;
}

std::vector<std::string> GlobListArg(const Value& v, const std::string& name) {
  std::vector<std::string> out;
  auto add = [&](std::string s) {
    const auto b = s.find_first_not_of(" \t");
    const auto e = s.find_last_not_of(" \t");
    out.push_back(b == std::string::npos ? "" : s.substr(b, e - b + 1));
  };
  if (v.is_list()) {
    for (const Value& item : v.as_list()) add(StringArg(item, name));
    return out;
  }
  const std::string s = StringArg(v, name);
  std::size_t start = 0;
  while (true) {
    const auto comma = s.find(',', start);
    add(s.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

}  // namespace brine::runner
