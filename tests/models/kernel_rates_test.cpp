// kernel_rates_test.cpp: what each architecture's kernels reach of its datasheet peaks
// (models/kernel_rates.cpp): GeForce Ampere and Ada boards, whose FP32-accumulate tensor rate is half
// their FP16-accumulate one, reach more of it than the default.
#include <gtest/gtest.h>

#include "models/op_cost.hpp"
#include "topologies/gpu_spec.hpp"

namespace gradsync {
namespace kernel_rates_test {

TEST(KernelRates, HalfRateFp32AccumulateIsReadFromTheDatasheets) {
  for (const char* g : {"rtx-2080-ti", "rtx-3080", "rtx-3090", "rtx-3090-ti", "rtx-4090"})
    EXPECT_TRUE(gpu_spec(g).half_rate_fp32_accumulate()) << g;  // 107.6/53.8, 142/71, 330.3/165.2
  for (const char* g :
       {"titan-rtx", "quadro-rtx-8000", "a40", "rtx-a6000", "a10", "rtx-6000-ada", "l40s", "a100", "h100"})
    EXPECT_FALSE(gpu_spec(g).half_rate_fp32_accumulate()) << g;
}

TEST(KernelRates, GeForceAmpereAndAdaReachMoreOfTheirHalvedTensorPeak) {
  const KernelRates defaults;
  for (const char* g : {"rtx-3080", "rtx-3090", "rtx-3090-ti", "rtx-4090"}) {
    const KernelRates r = rates_for(gpu_spec(g));
    EXPECT_DOUBLE_EQ(r.gemm_tensor, 0.94) << g;  // cuBLAS bf16 on an RTX 4090, pytorch/pytorch#181718
    EXPECT_DOUBLE_EQ(r.gemm_tf32, 0.94) << g;
    EXPECT_DOUBLE_EQ(r.conv, defaults.conv * 0.94 / defaults.gemm_tensor) << g;
    EXPECT_DOUBLE_EQ(r.conv_16bit, 0.94) << g;  // 16-bit convolutions: the GEMMs' rate
    // FP32 convolutions stay on the SIMT units' rate: the conv rate scaled as SGEMM (0.5 there).
    EXPECT_DOUBLE_EQ(r.conv_fp32, defaults.conv * 0.5 / defaults.gemm_tensor) << g;
  }
  // Full-rate boards of the same architectures, and Turing's GeForce, keep the default.
  for (const char* g : {"a40", "rtx-a6000", "rtx-a4000", "a10", "rtx-6000-ada", "l40s", "rtx-2080-ti", "titan-rtx",
                        "quadro-rtx-6000", "a100"}) {
    const KernelRates r = rates_for(gpu_spec(g));
    EXPECT_DOUBLE_EQ(r.gemm_tensor, defaults.gemm_tensor) << g;
    EXPECT_DOUBLE_EQ(r.conv, defaults.conv) << g;
    EXPECT_DOUBLE_EQ(r.conv_16bit, defaults.conv) << g;
  }
}

// TF32 products reach less of their peak than 16-bit ones on the A100 (0.7 of the 16-bit share) and
// on Hopper (0.8, measured on the lent GPUs); the other architectures run TF32 at the 16-bit share.
TEST(KernelRates, Tf32ProductsOnTheA100AndHopperReachLessThan16BitOnes) {
  for (const char* g : {"a100", "a100-sxm4-40gb", "a100-pcie-80gb"}) {
    const KernelRates r = rates_for(gpu_spec(g));
    EXPECT_DOUBLE_EQ(r.gemm_tf32, 0.7 * r.gemm_tensor) << g;
  }
  for (const char* g : {"h100", "h200-sxm-141gb"}) {
    const KernelRates r = rates_for(gpu_spec(g));
    EXPECT_DOUBLE_EQ(r.gemm_tf32, 0.8 * r.gemm_tensor) << g;
  }
  for (const char* g : {"a40", "l40s", "l4", "a10g"}) {
    const KernelRates r = rates_for(gpu_spec(g));
    EXPECT_DOUBLE_EQ(r.gemm_tf32, r.gemm_tensor) << g;
  }
}

}  // namespace kernel_rates_test
}  // namespace gradsync
