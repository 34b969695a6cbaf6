#include <iostream>

#include "brine/web/daemon.h"

int main(int argc, char** argv) { return brine::web::Main(argc, argv, std::cout, std::cerr); }
