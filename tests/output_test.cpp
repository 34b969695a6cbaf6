#include <catch2/catch.hpp>

#include "brine/output/outputters.h"

TEST_CASE("output: placeholder", "[output]") {
  CHECK(brine::output::IsKnownOutputter("nested"));
}
