// gpu_backend_test.cpp: the GPU backend's self-description. Labelled `gpu`; the checks that need
// a GPU skip with a message when none is visible.
#include "real/gpu_backend.hpp"

#include <gtest/gtest.h>

#include "core/error.hpp"
#include "real/rig.hpp"
#ifdef GRADSYNC_HAVE_CUDA
#include "real/cublas_loader.hpp"
#endif

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

// cuBLAS is loaded on first use, not linked (cublas_loader.hpp): every function real mode calls
// resolves, and the library answers without a GPU.
TEST(Cublas, LoadsOnFirstUse) {
#ifdef GRADSYNC_HAVE_CUDA
  const Cublas& b = cublas();
  EXPECT_NE(b.path.find("libcublas.so."), std::string::npos) << b.path;
  ASSERT_NE(b.create, nullptr);
  ASSERT_NE(b.destroy, nullptr);
  ASSERT_NE(b.set_stream, nullptr);
  ASSERT_NE(b.gemm_ex, nullptr);
  ASSERT_NE(b.status_string, nullptr);
  EXPECT_STREQ(b.status_string(CUBLAS_STATUS_SUCCESS), "success");
  EXPECT_NE(std::string(b.status_string(CUBLAS_STATUS_NOT_INITIALIZED)).find("not initialized"), std::string::npos);
  EXPECT_EQ(&cublas(), &b);  // loaded once
#else
  GTEST_SKIP() << "GPU backend not built in this configuration: " << gpu_backend_info().summary;
#endif
}

// needs_gpus skips the calling test unless the backend is built and n GPUs are visible.
#define NEEDS_GPUS(n)                                                                                    \
  do {                                                                                                   \
    const GpuBackendInfo info = gpu_backend_info();                                                      \
    if (!info.compiled) GTEST_SKIP() << "GPU backend not built in this configuration: " << info.summary; \
    if (info.visible_gpus < (n)) GTEST_SKIP() << "needs " << (n) << " GPU(s): " << info.summary;         \
  } while (0)

TEST(GpuRig, OneGpuTimesGemmMemoryKernelAndAllreduce) {
  NEEDS_GPUS(1);
  RigOptions o;
  o.backend = "gpu";
  o.precision = "bf16";
  o.parameter_bytes = 64 << 20;
  o.gradient_bytes = 64 << 20;
  auto rig = make_gpu_rig(o);
  Device& d = rig->device(0);
  ComputeOp gemm{"fwd:test", OpKind::kMatmul, 2e12, 0, 1, 0, 0, -1};
  ComputeOp mem{"optimizer", OpKind::kMemory, 0, 1e9, 1, 0, 0, -1};
  d.compute(gemm);
  d.compute(mem);
  WorkPtr ar = rig->rank_group(0).allreduce({"allreduce:bucket0", 25 << 20, DType::kFloat32, 0});
  ar->wait();
  EXPECT_TRUE(ar->done());
  d.synchronize();
  const Trace t = rig->recorder().take();
  ASSERT_EQ(t.events.size(), 3u);
  for (const TraceEvent& e : t.events) EXPECT_GT(e.duration_s(), 0) << e.name;
  // A 2 TFLOP bf16 GEMM on an A100/H100-class GPU: between 1 ms and 1 s.
  EXPECT_GT(t.events[0].duration_s(), 1e-3);
  EXPECT_LT(t.events[0].duration_s(), 1.0);
  EXPECT_GE(t.events[2].start_s, t.events[0].end_s);  // the allreduce waited for compute
  EXPECT_GT(rig->peak_bytes(0), 128.0 * (1 << 20));
}

TEST(GpuRig, OutOfMemoryIsAnErrorNamingTheAllocation) {
  NEEDS_GPUS(1);
  RigOptions o;
  o.backend = "gpu";
  o.parameter_bytes = static_cast<Bytes>(1) << 50;  // a petabyte
  try {
    make_gpu_rig(o);
    FAIL() << "a petabyte was allocated";
  } catch (const RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("out of GPU memory"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("parameters"), std::string::npos) << e.what();
  }
}

TEST(GpuRig, DataParallelGroupBroadcastsAndReducesAcrossTwoGpus) {
  NEEDS_GPUS(2);
  RigOptions o;
  o.backend = "gpu";
  o.world = o.local = 2;
  o.parameter_bytes = o.gradient_bytes = 16 << 20;
  auto rig = make_gpu_rig(o);
  ProcessGroup& g = rig->local_group(2);
  g.broadcast({"dp:replicate", 10 << 20, DType::kFloat32, -1}, 0)->wait();
  g.reduce({"dp:reduce", 10 << 20, DType::kFloat32, -1}, 0)->wait();
  rig->device(0).copy_to(rig->device(1), {"dp:scatter", 4 << 20})->wait();
  for (int i = 0; i < 2; ++i) rig->device(i).synchronize();
  EXPECT_EQ(rig->recorder().take().events.size(), 5u);  // 2 members x 2 collectives + 1 copy
}

}  // namespace
}  // namespace gradsync::real
