#include <iostream>

#include "brine/sim/cli.h"

int main(int argc, char** argv) { return brine::sim::Main(argc, argv, std::cout, std::cerr); }
