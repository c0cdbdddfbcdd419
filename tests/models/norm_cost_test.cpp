// norm_cost_test.cpp: batch norm's kernels in training against hand counts: the bytes of its two
// passes, and the per-channel reduction rates that bound them (cuDNN's NCHW kernels, PyTorch's own
// NCHW kernels for bf16, PyTorch's NHWC kernels in channels_last).
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "models/compute_cost.hpp"
#include "models/model.hpp"
#include "models/op_cost.hpp"
#include "op_test_util.hpp"
#include "topologies/gpu_spec.hpp"

namespace gradsync {
namespace norm_cost_test {

ComputeContext fp32(const char* gpu, std::int64_t batch) {
  ComputeContext ctx;
  ctx.gpu = &gpu_spec(gpu);
  ctx.precision = Precision::kFP32;
  ctx.batch = batch;
  return ctx;
}

const LayerCost& layer_cost(const Model& m, const ModelCost& c, const std::string& name) {
  for (std::size_t i = 0; i < m.layers.size(); ++i)
    if (m.layers[i].name == name) return c.layers.at(i);
  throw std::out_of_range(name);
}

// Batch norm in training: the statistics pass reads the input, then the normalisation reads it
// again and writes the output (PyTorch's batch_norm_stats, then batch_norm_elemt): two kernels,
// after num_batches_tracked += 1 (an int64 read and written). ResNet-50's bn1 at batch 1, fp32:
// 64 x 112 x 112 elements, 64 channels.
TEST(OpCost, BatchNormReadsItsInputTwiceByHand) {
  const Model m = load_model("resnet50");
  const ModelCost cost = op_model_cost(m, fp32("a100", 1));
  const LayerCost& bn = layer_cost(m, cost, "bn1");
  const double x = 64.0 * 112 * 112, c = 64;
  // stats: x; normalise: x, weight, bias, running mean and var in, y, save_mean and save_invstd out.
  EXPECT_DOUBLE_EQ(bn.forward.bytes, 16 + 4 * x + 4 * (x + 4 * c) + 4 * (x + 2 * c));
  EXPECT_EQ(bn.forward.kernels, 3);
}

// Batch norm in training is bounded by its per-channel reductions where DRAM is fast for the SMs:
// its kernels take at least elements / (rate x SMs x clock), the clock being the FP32 peak over
// 2 x lanes x SMs (H200: 67e12 / (2 x 128 x 132) = 1.98 GHz). ResNet-50's bn1 at batch 128:
// 128 x 64 x 112 x 112 elements. In fp16 NCHW cuDNN runs it, forward at 0.746 per SM and clock,
// backward at 0.372; in channels_last PyTorch's NHWC kernels, backward 0.953; in bf16 NCHW
// PyTorch's own NCHW kernels (no cuDNN for bf16: Normalization.cpp), forward 0.440, backward
// 0.298, each a call of PyTorch's, not cuDNN's. The forward's num_batches_tracked += 1 stays a
// kernel at the launch floor (2 us). Where DRAM is the slower (a V100 in fp32 at batch 128:
// 12 bytes an element of the forward over 0.8 of 900 GB/s, against 0.746 x 80 SMs x 1.53 GHz) the
// bytes decide as before.
TEST(OpCost, BatchNormInTrainingIsBoundByItsReductionsByHand) {
  const Model m = load_model("resnet50");
  ComputeContext ctx = test::context("h200", Precision::kFP16, 128);
  const double x = 128.0 * 64 * 112 * 112;
  const double per_clock = 132 * 67e12 / (2.0 * 128 * 132);  // SMs x clock
  const LayerCost nchw = layer_cost(m, op_model_cost(m, ctx), "bn1");
  EXPECT_NEAR(nchw.forward.time_s, 2e-6 + x / (0.746 * per_clock), 1e-12);
  EXPECT_NEAR(nchw.backward.time_s, x / (0.372 * per_clock), 1e-12);
  EXPECT_EQ(nchw.forward.kernels, 3);  // the kernels stay: their time is stretched
  ctx.precision = Precision::kBF16;
  const LayerCost native = layer_cost(m, op_model_cost(m, ctx), "bn1");
  EXPECT_NEAR(native.forward.time_s, 2e-6 + x / (0.440 * per_clock), 1e-12);
  EXPECT_NEAR(native.backward.time_s, x / (0.298 * per_clock), 1e-12);
  const KernelRates r = rates_for(*ctx.gpu);
  EXPECT_NEAR(native.forward.host_s - nchw.forward.host_s, r.host.of(HostCall::kOp) - r.host.of(HostCall::kCudnn),
              1e-15);
  ctx.mode.channels_last = true;
  const LayerCost nhwc = layer_cost(m, op_model_cost(m, ctx), "bn1");
  EXPECT_NEAR(nhwc.backward.time_s, x / (0.953 * per_clock), 1e-12);
  const LayerCost slow = layer_cost(m, op_model_cost(m, fp32("v100", 128)), "bn1");
  const double c = 64;
  EXPECT_NEAR(slow.forward.time_s, 2e-6 + (4 * x + 4 * (x + 4 * c) + 4 * (x + 2 * c)) / (0.8 * 900e9), 1e-12);
  EXPECT_GT(slow.forward.time_s, x / (0.746 * 80 * 15.7e12 / (2.0 * 64 * 80)));
}

}  // namespace norm_cost_test
}  // namespace gradsync
