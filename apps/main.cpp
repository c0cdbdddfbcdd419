// main.cpp: the gradsync executable. Everything but the process boundary lives in cli.cpp.
#include <exception>
#include <new>
#include <iostream>
#include <string>
#include <vector>

#include "apps/cli.hpp"

int main(int argc, char** argv) {
  try {
    std::vector<std::string> args(argv + 1, argv + argc);
    return gradsync::apps::run_cli(args, std::cout, std::cerr);
  } catch (const std::bad_alloc&) {
    // Whatever asked for it, the answer is the same: this run does not fit in this machine.
    std::cerr << "error: out of memory: this run needs more memory than the machine (or its limits) allows; "
                 "use a smaller model, batch, size or fewer ranks per process\n";
    return 1;
  } catch (const std::exception& e) {
    // A bug, not a user error: say so rather than crash.
    std::cerr << "error: internal error: " << e.what() << '\n';
    return 1;
  }
}
