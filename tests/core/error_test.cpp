// error_test.cpp: the Error hierarchy and its exit codes.
#include "core/error.hpp"

#include <gtest/gtest.h>

namespace gradsync {
namespace {

TEST(Error, ExitCodesFollowTheKind) {
  EXPECT_EQ(ConfigError("x").exit_code(), kExitRuntime);
  EXPECT_EQ(RuntimeError("x").exit_code(), kExitRuntime);
  EXPECT_EQ(UsageError("x").exit_code(), kExitUsage);
}

TEST(Error, ChildrenAreCaughtAsError) {
  try {
    throw UsageError("--gpus \"0\" must be >= 1");
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "--gpus \"0\" must be >= 1");
    EXPECT_EQ(e.exit_code(), 2);
  }
}

}  // namespace
}  // namespace gradsync
