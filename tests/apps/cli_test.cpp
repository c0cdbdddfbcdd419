// cli_test.cpp: exit codes and error lines of the command line.
#include "apps/cli.hpp"

#include <gtest/gtest.h>

#include <sstream>

#include "core/version.hpp"

namespace gradsync::apps {
namespace {

struct Result {
  int code;
  std::string out;
  std::string err;
};

Result run(std::vector<std::string> args) {
  std::ostringstream out, err;
  const int code = run_cli(args, out, err);
  return {code, out.str(), err.str()};
}

TEST(Cli, VersionPrintsTheVersion) {
  const Result r = run({"--version"});
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out, std::string("gradsync ") + kVersion + "\n");
  EXPECT_EQ(r.err, "");
}

TEST(Cli, HelpExitsZero) {
  const Result r = run({"--help"});
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("Usage: gradsync"), std::string::npos) << r.out;
}

TEST(Cli, UnknownFlagIsAUsageError) {
  const Result r = run({"--frobnicate"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "error: unknown option '--frobnicate' for 'gradsync'\nRun 'gradsync --help' for usage.\n");
}

TEST(Cli, UnknownCommandIsAUsageError) {
  const Result r = run({"frobnicate"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "error: unknown command 'frobnicate'\nRun 'gradsync --help' for usage.\n");
}

TEST(Cli, NoCommandIsAUsageError) {
  const Result r = run({});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "error: no command given\nRun 'gradsync --help' for usage.\n");
}

}  // namespace
}  // namespace gradsync::apps
