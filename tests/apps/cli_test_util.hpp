// cli_test_util.hpp: running the command line in-process for the CLI tests (cli_test.cpp,
// cli_notes_test.cpp): exit code, stdout and stderr.
#pragma once

#include <gtest/gtest.h>

#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "apps/cli.hpp"

namespace gradsync::apps::test {

struct Result {
  int code;
  std::string out;
  std::string err;
};

inline Result run(std::vector<std::string> args) {
  std::ostringstream out, err;
  const int code = run_cli(args, out, err);
  return {code, out.str(), err.str()};
}

// run_printed: run() with std::cout, where the scenario commands print their tables, caught too.
inline Result run_printed(std::vector<std::string> args) {
  std::ostringstream printed;
  std::streambuf* const saved = std::cout.rdbuf(printed.rdbuf());
  Result r = run(std::move(args));
  std::cout.rdbuf(saved);
  r.out += printed.str();
  return r;
}

// expect_error: the exit code, and the error line's start.
inline void expect_error(std::vector<std::string> args, int code, const std::string& start) {
  const Result r = run(std::move(args));
  EXPECT_EQ(r.code, code) << r.err;
  EXPECT_EQ(r.err.rfind("error: " + start, 0), 0u) << r.err;
}

}  // namespace gradsync::apps::test
