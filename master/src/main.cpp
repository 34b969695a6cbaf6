#include <iostream>

#include "brine/master/daemon.h"

int main(int argc, char** argv) { return brine::master::Main(argc, argv, std::cout, std::cerr); }
