// main.cpp: the gradsync executable. Everything but the process boundary lives in cli.cpp.
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "apps/cli.hpp"

int main(int argc, char** argv) {
  try {
    std::vector<std::string> args(argv + 1, argv + argc);
    return gradsync::apps::run_cli(args, std::cout, std::cerr);
  } catch (const std::exception& e) {
    // A bug, not a user error: say so rather than crash.
    std::cerr << "error: internal error: " << e.what() << '\n';
    return 1;
  }
}
