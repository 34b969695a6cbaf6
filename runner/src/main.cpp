#include <iostream>

#include "brine/runner/cli.h"

int main(int argc, char** argv) { return brine::runner::Main(argc, argv, std::cout, std::cerr); }
