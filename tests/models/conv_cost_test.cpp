// conv_cost_test.cpp: what a convolution costs, op by op (models/op_conv.cpp, models/op_coster.hpp
// layout; models/kernel_rates.cpp): its layout transposes, and the rate of each kind of convolution kernel
// per architecture and precision, against closed forms.
#include <gtest/gtest.h>

#include "models/kernel_waves.hpp"
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

// conv_layer: ResNet-50's layer `layer` on `gpu` in fp32 at `batch`, forward and backward.
LayerCost conv_layer(const char* gpu, std::int64_t batch, const std::string& layer) {
  static const Model m = load_model("resnet50");
  return test::layer_cost(m, op_model_cost(m, test::context(gpu, Precision::kFP32, batch)), layer);
}

// simt_time: a GEMM-shaped FP32 kernel of `flops` direct-convolution FLOPs on `gpu` at conv_fp32,
// `gain` times fewer multiplies, in whole waves of `shape`'s tiles.
double simt_time(const char* gpu, double flops, GemmShape shape, double gain) {
  const GpuSpec& g = gpu_spec(gpu);
  const KernelRates r = rates_for(g);
  return flops / (g.fp32_flops * r.conv_fp32 * gain) / gemm_waves_of(shape, r.tile, g.sms).efficiency;
}

// FP32 convolutions before Ampere run on the SIMT units at conv_fp32 of the FP32 peak, one rate for
// Volta and Turing (0.75, from their train cases), in whole waves of 128 x 128 tiles; a 3x3 one at
// stride 1 as Winograd's F(2x2, 3x3), 16 multiplies for 4 outputs against 36 (op_conv.cpp).
TEST(ConvCost, Fp32BeforeAmpereRunsAtTheArchitecturesSimtRate) {
  EXPECT_DOUBLE_EQ(rates_for(gpu_spec("v100")).conv_fp32, 0.75);
  EXPECT_DOUBLE_EQ(rates_for(gpu_spec("rtx-2080-ti")).conv_fp32, 0.75);
  EXPECT_DOUBLE_EQ(rates_for(gpu_spec("titan-rtx")).conv_fp32, 0.75);
  // Ampere's data-centre parts run FP32 convolutions as TF32; their SIMT rate stays the scaled one.
  EXPECT_DOUBLE_EQ(rates_for(gpu_spec("a100")).conv_fp32, 0.60 * 0.85 / 0.80);
  // layer3.1.conv2 at batch 64: Winograd's 16 products of 3136 tiles x 256 over 256 channels, 800
  // tiles of 128 x 128: ten whole waves on a V100's 80 SMs, 11.8 on a 2080 Ti's 68.
  for (const char* gpu : {"v100", "rtx-2080-ti"}) {
    const KernelCost k = conv_layer(gpu, 64, "layer3.1.conv2").forward;
    ASSERT_DOUBLE_EQ(k.flops, kFlops) << gpu;
    EXPECT_NEAR(k.gpu_time(), simt_time(gpu, kFlops, {16, 64 * 196 / 4.0, 256, 256}, 2.25), 1e-12) << gpu;
    EXPECT_EQ(k.winograd_kernels, 1) << gpu;
    EXPECT_DOUBLE_EQ(k.winograd_s, k.gpu_time()) << gpu;
  }
  EXPECT_NEAR(conv_layer("v100", 64, "layer3.1.conv2").forward.gpu_time(),
              kFlops / (gpu_spec("v100").fp32_flops * 0.75 * 2.25), 1e-12);
  // layer3.0.conv2 is the same 3x3 product at stride 2 (28 x 28 in, 14 x 14 out): no Winograd, the
  // implicit GEMM of 12544 rows x 256 over 2304, 196 tiles: 2.45 of 3 waves on a V100.
  const KernelCost strided = conv_layer("v100", 64, "layer3.0.conv2").forward;
  ASSERT_DOUBLE_EQ(strided.flops, kFlops);
  EXPECT_NEAR(strided.gpu_time(), simt_time("v100", kFlops, {1, 12544, 256, 2304}, 1.0), 1e-12);
  EXPECT_EQ(strided.winograd_kernels, 0);
  EXPECT_NEAR(strided.gpu_time() / conv_layer("v100", 64, "layer3.1.conv2").forward.gpu_time(), 2.25 * 240 / 196,
              1e-9);
  // Both gradients of layer3.1.conv2 run as Winograd too: the input's as the forward's shape, the
  // weight's as 16 products of 256 x 256 over the 3136 tiles (64 tiles, 0.8 of a V100's wave).
  const KernelCost back = conv_layer("v100", 64, "layer3.1.conv2").backward;
  EXPECT_NEAR(back.gpu_time(),
              simt_time("v100", kFlops, {16, 3136, 256, 256}, 2.25) + simt_time("v100", kFlops, {16, 256, 256, 3136}, 2.25),
              1e-12);
  EXPECT_EQ(back.winograd_kernels, 2);
}

// A dilated 3x3 convolution (the model format records none: told apart by its output size, H + 2p -
// 2 per side at dilation 1) runs implicit GEMM. layer3.1.conv2 recorded with padding 2 and its
// 14 x 14 outputs is what dilation 2 gives (14 + 4 - 4).
TEST(ConvCost, ADilatedConvolutionIsNotWinograd) {
  Model m = load_model("resnet50");
  const Layer* layer = nullptr;
  for (const Layer& l : m.layers)
    if (l.name == "layer3.1.conv2") layer = &l;
  ASSERT_NE(layer, nullptr);
  for (std::size_t i = layer->first_op; i < layer->first_op + layer->op_count; ++i)
    if (m.ops[i].conv) (*m.ops[i].conv)[7] = 2;
  const KernelCost k = test::layer_cost(m, op_model_cost(m, test::context("v100", Precision::kFP32, 64)), "layer3.1.conv2").forward;
  EXPECT_EQ(k.winograd_kernels, 0);
  EXPECT_NEAR(k.gpu_time(), simt_time("v100", kFlops, {1, 12544, 256, 2304}, 1.0), 1e-12);
}

// Winograd's non-fused kernels write the transformed input and output to DRAM and read them back,
// 8 times the activations; a layer of 64 channels does too few products per transformed value
// to gain from it on a 2080 Ti (616 GB/s for 13.4 TFLOP/s), and cuDNN keeps implicit GEMM there.
// layer1.0.conv2: 64 -> 64 channels, 3x3 at stride 1, 56 x 56, batch 64: 200704 rows x 64 over
// 576, 1568 tiles.
TEST(ConvCost, NarrowWinogradIsBoundByItsTransformsAndNotTaken) {
  const double flops = 2.0 * 64 * 56 * 56 * 64 * 64 * 9;
  const KernelCost k = conv_layer("rtx-2080-ti", 64, "layer1.0.conv2").forward;
  ASSERT_DOUBLE_EQ(k.flops, flops);
  const double direct = simt_time("rtx-2080-ti", flops, {1, 200704, 64, 576}, 1.0);
  EXPECT_NEAR(k.gpu_time(), direct, 1e-12);
  EXPECT_EQ(k.winograd_kernels, 0);
  // What Winograd would have taken: its products 2.25 times fewer, but its DRAM traffic (input and
  // output, 51.4 MB each, 8 times over) longer than the direct kernel.
  const GpuSpec& g = gpu_spec("rtx-2080-ti");
  const double act = 2.0 * 64 * 64 * 56 * 56 * 4;
  EXPECT_GT(8 * act / (g.memory_bandwidth_Bps * rates_for(g).memory), direct);
  EXPECT_LT(simt_time("rtx-2080-ti", flops, {16, 50176, 64, 64}, 2.25), direct);
  // The same layer in fp16 is a tensor-core convolution: counted FLOPs at conv_16bit, no Winograd.
  const KernelCost half = conv_forward("v100", Precision::kFP16, 64, "layer3.1.conv2", true, true);
  EXPECT_NEAR(half.gpu_time(), kFlops / (gpu_spec("v100").peak_flops(Precision::kFP16) * rates_for(gpu_spec("v100")).conv_16bit),
              1e-12);
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
