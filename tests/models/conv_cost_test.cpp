// conv_cost_test.cpp: what a convolution costs, op by op (models/op_coster.hpp conv, layout;
// models/kernel_rates.cpp): its layout transposes, and the rate of each kind of convolution kernel
// per architecture and precision, against closed forms.
#include <gtest/gtest.h>

#include "models/op_cost.hpp"
#include "op_test_util.hpp"

namespace gradsync {
namespace {

// conv_forward: the forward of ResNet-50's layer `layer` on `gpu` in `p` at `batch`.
KernelCost conv_forward(const char* gpu, Precision p, std::int64_t batch, const std::string& layer,
                        bool channels_last = false, bool master_weights = false) {
  static const Model m = load_model("resnet50");
  ComputeContext ctx = test::context(gpu, p, batch);
  ctx.mode.channels_last = channels_last;
  ctx.mode.master_weights = master_weights;
  return test::layer_cost(m, op_model_cost(m, ctx), layer).forward;
}

// cuDNN's tensor-core convolutions work in NHWC: from NCHW tensors each convolution transposes its
// input and output, in fp16/bf16 and, from Ampere on, in fp32/tf32 (TF32 convolutions), but not on
// GeForce GA102/AD102, whose TF32 tensor rate is no higher than FP32; channels_last has none.
TEST(ConvCost, TransposesWhereItRunsOnTensorCores) {
  // conv1's forward kernels in NCHW beyond those in channels_last (autocast adds the same input
  // and weight casts to both).
  const auto transposes = [](const char* gpu, Precision p) {
    return conv_forward(gpu, p, 1, "conv1").kernels - conv_forward(gpu, p, 1, "conv1", true).kernels;
  };
  EXPECT_EQ(transposes("a100", Precision::kFP32), 2);  // TF32 convolutions: input and output
  EXPECT_EQ(transposes("a100", Precision::kTF32), 2);
  EXPECT_EQ(transposes("a100", Precision::kBF16), 2);
  EXPECT_EQ(transposes("h200", Precision::kTF32), 2);
  EXPECT_EQ(transposes("v100", Precision::kFP32), 0);  // FP32 SIMT before Ampere
  EXPECT_EQ(transposes("v100", Precision::kFP16), 2);
  EXPECT_EQ(transposes("rtx-3090", Precision::kTF32), 0);
  EXPECT_EQ(transposes("rtx-3090", Precision::kFP16), 2);
}

// The 3x3 convolution of layer3.1.conv2, 256 -> 256 channels over 14 x 14 outputs at batch 64:
// 14.8 GFLOP against 28 MB, compute-bound on every GPU below.
constexpr double kFlops = 2.0 * 64 * 14 * 14 * 256 * 256 * 9;

// FP32 convolutions before Ampere run on the SIMT units at conv_fp32 of the FP32 peak: Volta's own
// rate (0.85, from its train cases) and Turing's, whose SM keeps Volta's FP32 datapath.
TEST(ConvCost, Fp32BeforeAmpereRunsAtTheArchitecturesSimtRate) {
  for (const char* gpu : {"v100", "rtx-2080-ti"}) {
    const KernelCost k = conv_forward(gpu, Precision::kFP32, 64, "layer3.1.conv2");
    ASSERT_DOUBLE_EQ(k.flops, kFlops) << gpu;
    const GpuSpec& g = gpu_spec(gpu);
    EXPECT_NEAR(k.gpu_time(), kFlops / (g.fp32_flops * rates_for(g).conv_fp32), 1e-12) << gpu;
  }
  EXPECT_DOUBLE_EQ(rates_for(gpu_spec("v100")).conv_fp32, 0.85);
  EXPECT_DOUBLE_EQ(rates_for(gpu_spec("rtx-2080-ti")).conv_fp32, 0.85);
  EXPECT_DOUBLE_EQ(rates_for(gpu_spec("titan-rtx")).conv_fp32, 0.85);
  // Ampere's data-centre parts run FP32 convolutions as TF32; their SIMT rate stays the scaled one.
  EXPECT_DOUBLE_EQ(rates_for(gpu_spec("a100")).conv_fp32, 0.60 * 0.85 / 0.80);
}

// 16-bit convolutions on GeForce Ampere and Ada run at the GEMMs' rate of the halved (FP32
// accumulate) tensor peak, 0.94; TF32 ones there keep the scaled conv rate, 0.705; a data-centre
// part runs both at its conv rate. In channels_last and, for 16 bits, a 16-bit model: no layout
// transposes and no autocast casts, the convolution's kernel alone.
TEST(ConvCost, SixteenBitOnGeForceRunsAtTheGemmRate) {
  const auto time = [](const char* gpu, Precision p) {
    const bool sixteen = p == Precision::kFP16 || p == Precision::kBF16;
    const KernelCost k = conv_forward(gpu, p, 64, "layer3.1.conv2", true, sixteen);
    EXPECT_DOUBLE_EQ(k.flops, kFlops) << gpu;
    return k.gpu_time();
  };
  for (const char* gpu : {"rtx-3090", "rtx-4090"}) {
    const GpuSpec& g = gpu_spec(gpu);
    EXPECT_NEAR(time(gpu, Precision::kFP16), kFlops / (g.peak_flops(Precision::kFP16) * 0.94), 1e-12) << gpu;
    EXPECT_NEAR(time(gpu, Precision::kBF16), kFlops / (g.peak_flops(Precision::kBF16) * 0.94), 1e-12) << gpu;
    EXPECT_NEAR(time(gpu, Precision::kTF32), kFlops / (g.tf32_flops * 0.60 * 0.94 / 0.80), 1e-12) << gpu;
  }
  const GpuSpec& a100 = gpu_spec("a100");
  EXPECT_NEAR(time("a100", Precision::kFP16), kFlops / (a100.peak_flops(Precision::kFP16) * 0.60), 1e-12);
}

}  // namespace
}  // namespace gradsync
