// nccl_release_test.cpp: the NCCL release a run links: PyTorch's bundled one, and the key's values.
#include "core/nccl_release.hpp"

#include <gtest/gtest.h>

#include "core/error.hpp"

namespace gradsync {
namespace {

std::string bundled_with(std::string_view pytorch) { return bundled_nccl(parse_pytorch_version(pytorch)).text(); }

TEST(NcclRelease, PytorchBundlesTheReleaseOfItsPin) {
  EXPECT_EQ(bundled_with("1.4"), "2.4");  // pytorch#23186
  EXPECT_EQ(bundled_with("1.5"), "2.4");
  EXPECT_EQ(bundled_with("1.6"), "2.7");  // pytorch#40621: 2.7.3
  EXPECT_EQ(bundled_with("1.9"), "2.7");  // pytorch#45251: 2.7.8
  EXPECT_EQ(bundled_with("1.10"), "2.10");
  EXPECT_EQ(bundled_with("1.12"), "2.10");
  EXPECT_EQ(bundled_with("1.13.0a0"), "2.14");
  EXPECT_EQ(bundled_with("2.0"), "2.14");
  EXPECT_EQ(bundled_with("2.1"), "2.18");
  EXPECT_EQ(bundled_with("2.4.1+cu121"), "2.20");
  EXPECT_EQ(bundled_with("2.6"), "2.21");  // the last release before NCCL 2.23's P2P level
  EXPECT_EQ(bundled_with("2.7"), "2.26");
  EXPECT_EQ(bundled_with("2.10"), "2.27");
  EXPECT_EQ(bundled_with("2.11"), "2.28");
  EXPECT_EQ(resolve_nccl_release("auto", "2.5").text(), "2.21");
  EXPECT_EQ(resolve_nccl_release("2.19.3", "2.5").text(), "2.19");  // a given release wins
}

TEST(NcclRelease, ReadsNcclsTagsAndRefusesTheRest) {
  EXPECT_EQ(canonical_nccl_version("auto"), "auto");
  EXPECT_EQ(canonical_nccl_version("2.21"), "2.21");
  EXPECT_EQ(canonical_nccl_version("2.18.3"), "2.18");
  EXPECT_EQ(canonical_nccl_version("2.18.3-1"), "2.18");
  EXPECT_EQ(canonical_nccl_version("2.30.7-1"), "2.30");  // the newest release read
  for (const char* bad :
       {"",         "2",    "2.",    "2.x", "two",  "1.9",  "2.3",   "2.18.", "2.18.3-", "2.18.3-x", "2.18 ",
        "2.18.3.4", "10.1", "2.100", "3.0", "2.99", "2.31", "2.021", "02.21", "2.18.03", "2.030"}) {
    try {
      canonical_nccl_version(bad);
      ADD_FAILURE() << "accepted \"" << bad << "\"";
    } catch (const ConfigError& e) {
      // Said once: the key and the text are the caller's prefix (scenario keys, flags).
      EXPECT_EQ(std::string(e.what()).find("nccl_version"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("expected auto or an NCCL release"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("from 2.4 to 2.30"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace gradsync
