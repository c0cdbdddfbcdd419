// gpu_backend_test.cpp: the GPU backend's self-description. Labelled `gpu`; the checks that need
// a GPU skip with a message when none is visible.
#include "real/gpu_backend.hpp"

#include <gtest/gtest.h>

namespace gradsync::real {
namespace {

TEST(GpuBackend, SummarySaysWhetherItIsBuilt) {
  const GpuBackendInfo info = gpu_backend_info();
  if (info.compiled) {
    EXPECT_NE(info.summary.find("GPU backend: built"), std::string::npos) << info.summary;
    EXPECT_NE(info.summary.find("NCCL 2."), std::string::npos) << info.summary;
  } else {
    EXPECT_NE(info.summary.find("GPU backend: not built"), std::string::npos) << info.summary;
    EXPECT_EQ(info.visible_gpus, 0);
  }
}

TEST(GpuBackend, SeesAGpu) {
  const GpuBackendInfo info = gpu_backend_info();
  if (!info.compiled) GTEST_SKIP() << "GPU backend not built in this configuration: " << info.summary;
  if (info.visible_gpus == 0) GTEST_SKIP() << "no GPU visible: " << info.summary;
  EXPECT_GE(info.visible_gpus, 1);
  EXPECT_NE(info.summary.find("GPU0 "), std::string::npos) << info.summary;
}

}  // namespace
}  // namespace gradsync::real
