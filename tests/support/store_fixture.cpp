#include "support/store_fixture.h"

#include <cstdlib>

#include "brine/core/json.h"

namespace brine::test::store_fixture {

Value J(const std::string& text) { return ParseJson(text); }

Value Ret(const std::string& jid, const std::string& minion, Value ret_value, int retcode) {
  Value r = Value::EmptyMap();
  r.Set("fun_args", Value::EmptyList());
  r.Set("jid", jid);
  r.Set("return", std::move(ret_value));
  r.Set("retcode", retcode);
  r.Set("success", retcode == 0);
  r.Set("cmd", "_return");
  r.Set("_stamp", "2024-01-01T12:00:01.000001");
  r.Set("fun", "test.ping");
  r.Set("id", minion);
  return r;
}

std::vector<std::string> Strings(std::initializer_list<const char*> l) {
  return std::vector<std::string>(l.begin(), l.end());
}

bool OnPostgres() {
  const char* backend = std::getenv("BRINE_TEST_BACKEND");
  return backend != nullptr && std::string(backend) == "postgresql";
}

}  // namespace brine::test::store_fixture
