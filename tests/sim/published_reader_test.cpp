// published_reader_test.cpp: validation/published/nccl_tests.yaml's reader (sim/published.cpp) on
// the field gpus_per_thread: read where given, 1 where absent, a located error where it cannot be.
// No simulation: nothing here starts a SimGrid engine.
#include <gtest/gtest.h>

#include <string>

#include "core/error.hpp"
#include "sim/published.hpp"

namespace gradsync::sim {
namespace {

// nccl_table: one allreduce case of 8 GPUs, with `extra` lines added to it.
std::string nccl_table(const std::string& extra) {
  return "format: gradsync-published-nccl-tests/1\n"
         "cases:\n"
         "  - id: a100x8-test\n"
         "    split: train\n"
         "    source: \"https://example.org/run\"\n"
         "    hardware: \"8x A100\"\n"
         "    gpu: a100-sxm4-80gb\n"
         "    nodes: 1\n"
         "    gpus_per_node: 8\n" +
         extra +
         "    nccl_version: \"2.19.3\"\n"
         "    collective: allreduce\n"
         "    algo: default\n"
         "    proto: default\n"
         "    placement: out-of-place\n"
         "    busbw_GBps: {1MiB: 27.26}\n"
         "    simulate: {topology: dgx-a100}\n";
}

TEST(PublishedReader, GpusPerThreadIsReadAndDefaultsToOne) {
  EXPECT_EQ(read_published(nccl_table(""), "t.yaml").at(0).gpus_per_thread, 1);
  EXPECT_EQ(read_published(nccl_table("    gpus_per_thread: 8\n"), "t.yaml").at(0).gpus_per_thread, 8);
}

TEST(PublishedReader, AGpusPerThreadThatDoesNotDivideTheNodeIsALocatedError) {
  try {
    (void)read_published(nccl_table("    gpus_per_thread: 3\n"), "t.yaml");
    FAIL() << "gpus_per_thread 3 of 8 GPUs per node was read";
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("t.yaml:10"), std::string::npos) << what;
    EXPECT_NE(what.find("gpus_per_thread 3"), std::string::npos) << what;
    EXPECT_NE(what.find("divides gpus_per_node 8"), std::string::npos) << what;
  }
}

TEST(PublishedReader, AGpusPerThreadOfZeroIsRefused) {
  EXPECT_THROW((void)read_published(nccl_table("    gpus_per_thread: 0\n"), "t.yaml"), ConfigError);
}

}  // namespace
}  // namespace gradsync::sim
