// pg_test_server: the tests' private PostgreSQL server (postgres_server.h) for
// tests written in Python (tests/salt): prints one database's libpq URI on a
// line, then serves until its standard input closes (the test closing the
// pipe, or dying), and stops the server and removes its dir. Prints
// "SKIP <reason>" instead when Debian's PostgreSQL is not installed.
#include <cstdio>
#include <exception>
#include <iostream>
#include <string>

#include "support/postgres_server.h"

int main() {
  using brine::test::PostgresServer;
  if (auto why = PostgresServer::Unavailable()) {
    std::cout << "SKIP " << *why << std::endl;
    return 0;
  }
  try {
    PostgresServer server;
    std::cout << server.CreateDatabase() << std::endl;
    std::string line;
    while (std::getline(std::cin, line)) {
    }
  } catch (const std::exception& e) {
    std::cerr << "pg_test_server: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
