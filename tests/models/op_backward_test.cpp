// op_backward_test.cpp: the backward rules of op_backward.cpp against hand counts on the zoo's
// GPT-2 (nanoGPT model.py, eager attention, fp32, batch 1, T = 1024), and the 16-bit model with
// float32 master weights (mixed_precision master-weights) against autocast.
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "models/compute_cost.hpp"
#include "models/memory_cost.hpp"
#include "models/model.hpp"
#include "models/op_cost.hpp"
#include "op_test_util.hpp"
#include "topologies/gpu_spec.hpp"

namespace gradsync {
namespace op_backward_test {

constexpr double T = 1024;  // sequence length
constexpr double D = 768;   // d_model
constexpr double H = 12;    // heads
constexpr double n = T * D;
constexpr double s = H * T * T;  // one score tensor

ComputeContext context(Precision p) {
  ComputeContext ctx;
  ctx.gpu = &gpu_spec("a100");
  ctx.precision = p;
  ctx.batch = 1;
  ctx.seq_len = static_cast<std::int64_t>(T);
  return ctx;
}

using test::layer_cost;
using test::one_op_per_layer;

// softmax_backward_cuda_out computes `grad * output` first (a mul kernel), then the softmax
// backward kernel reads that and the output: three score tensors each.
TEST(OpBackward, SoftmaxBackwardIsAMulThenItsKernel) {
  const Model m = one_op_per_layer(load_model("gpt2"));
  const ModelCost c = op_model_cost(m, context(Precision::kFP32));
  const LayerCost& softmax = layer_cost(m, c, "transformer.h.0.attn.fn/_softmax/6");
  EXPECT_EQ(softmax.backward.kernels, 2);
  EXPECT_DOUBLE_EQ(softmax.backward.bytes, 4 * (3 * s) + 4 * (3 * s));
}

// GELU's backward reads the gradient and the input it saved, and writes the input's gradient.
TEST(OpBackward, AUnaryOpReadsWhatItSaved) {
  const Model m = load_model("gpt2");
  const ModelCost c = op_model_cost(m, context(Precision::kFP32));
  const LayerCost& gelu = layer_cost(m, c, "transformer.h.0.mlp.gelu");
  EXPECT_EQ(gelu.backward.kernels, 1);
  EXPECT_DOUBLE_EQ(gelu.backward.bytes, 4 * (3 * 4 * n));
}

// ReLU's backward, threshold_backward(grad, result, 0), reads its result: three tensors.
TEST(OpBackward, ReluReadsItsResult) {
  const Model m = load_model("resnet50");
  ComputeContext ctx = context(Precision::kFP32);
  ctx.seq_len = 1;
  const ModelCost c = op_model_cost(m, ctx);
  const LayerCost& relu = layer_cost(m, c, "relu");  // after conv1 and bn1: 64 x 112 x 112
  EXPECT_EQ(relu.backward.kernels, 1);
  EXPECT_DOUBLE_EQ(relu.backward.bytes, 4 * (3 * 64 * 112 * 112));
}

// Under autocast, softmax keeps its float32 probabilities for its backward while att @ v keeps the
// bf16 copy autocast made for it: both stay (GPT-2's attention has no dropout to separate them).
TEST(OpBackward, AutocastKeepsSoftmaxsResultAndTheProductsCopy) {
  const Model m = load_model("gpt2");
  const ModelCost bf16 = op_model_cost(m, context(Precision::kBF16));
  const ModelCost fp32 = op_model_cost(m, context(Precision::kFP32));
  // attn.fn2 keeps the probabilities and v for att @ v.
  EXPECT_DOUBLE_EQ(layer_cost(m, fp32, "transformer.h.0.attn.fn2").saved_bytes, 4 * s + 4 * n);
  EXPECT_DOUBLE_EQ(layer_cost(m, bf16, "transformer.h.0.attn.fn2").saved_bytes, (4 + 2) * s + 2 * n);
}

// The heads transposed back (y.transpose(1, 2).contiguous()): the gradient returns in the copy's
// layout, and the view before it copies it back: one strided copy in backward.
TEST(OpBackward, ALayoutCopyIsCopiedBackInBackward) {
  const Model m = one_op_per_layer(load_model("gpt2"));
  const ModelCost c = op_model_cost(m, context(Precision::kFP32));
  const LayerCost& copy = layer_cost(m, c, "transformer.h.0.attn.fn2/clone/2");
  EXPECT_EQ(copy.backward.kernels, 1);
  EXPECT_DOUBLE_EQ(copy.backward.bytes, 4 * (2 * n));
}

// Gradients of a tensor several ops read are summed: the residual stream after the attention
// (read by ln_2 and the next residual add) gets one add; c_attn's output, sliced into q, k and
// v, gets its three slices' gradients written into one tensor (a cat), and no add.
TEST(OpBackward, GradientsOfATensorReadTwiceAreSummed) {
  const Model m = load_model("gpt2");
  const ModelCost c = op_model_cost(m, context(Precision::kFP32));
  const LayerCost& residual = layer_cost(m, c, "transformer.h.0.fn");
  EXPECT_EQ(residual.backward.kernels, 1);
  EXPECT_DOUBLE_EQ(residual.backward.bytes, 4 * (3 * n));
  const LayerCost& qkv = layer_cost(m, c, "transformer.h.0.attn.c_attn");
  EXPECT_EQ(qkv.backward.kernels, 3 + 1);  // dX, dW, the bias's reduction, the cat
  // Compiled: the sums happen inside the generated backward.
  ComputeContext compiled = context(Precision::kFP32);
  compiled.mode.compile = true;
  EXPECT_EQ(layer_cost(m, op_model_cost(m, compiled), "transformer.h.0.attn.c_attn").backward.kernels, 3);
}

// A 16-bit model with float32 master weights (apex amp O2, DeepSpeed fp16): no casts, every op
// in 16 bits (layer norm too, which autocast runs in float32).
TEST(OpBackward, MasterWeightsRunEveryOpIn16BitsWithoutCasts) {
  const Model fp32 = load_model("gpt2");
  Model half = fp32;
  half_model(half, Precision::kBF16);
  for (const Parameter& p : half.parameters) EXPECT_EQ(p.dtype, DType::kBFloat16) << p.name;
  ComputeContext ctx = context(Precision::kBF16);
  const ModelCost autocast = op_model_cost(fp32, ctx);
  ctx.mode.master_weights = true;
  const ModelCost master = op_model_cost(half, ctx);
  // Autocast casts c_attn's weight, its bias and its float32 input (ln_1's output) before the
  // product.
  EXPECT_EQ(layer_cost(fp32, autocast, "transformer.h.0.attn.c_attn").forward.kernels, 4);
  EXPECT_EQ(layer_cost(half, master, "transformer.h.0.attn.c_attn").forward.kernels, 1);
  const ModelCost f32 = op_model_cost(fp32, context(Precision::kFP32));
  EXPECT_DOUBLE_EQ(layer_cost(half, master, "transformer.h.0.ln_1").forward.bytes,
                   layer_cost(fp32, f32, "transformer.h.0.ln_1").forward.bytes / 2);
  EXPECT_LT(master.forward_s + master.backward_s, autocast.forward_s + autocast.backward_s);
  EXPECT_THROW(half_model(half, Precision::kFP32), ConfigError);
  EXPECT_THROW(half_model(half, Precision::kTF32), ConfigError);
}

// Memory of the 16-bit model: its parameters and gradients in 16 bits, float32 master copies
// of both, Adam's two float32 moments; the optimizer copies the gradients into the masters and
// the masters back (6 bytes per element each way).
TEST(OpBackward, MasterWeightsKeepFloat32CopiesForTheOptimizer) {
  Model m = load_model("gpt2");
  half_model(m, Precision::kFP16);
  ComputeContext ctx = context(Precision::kFP16);
  ctx.mode.master_weights = true;
  double p = 0;
  for (const Parameter& q : m.parameters) p += static_cast<double>(q.numel());
  MemoryOptions o;
  o.optimizer = Optimizer::kAdamW;
  const MemoryBreakdown mem = memory_cost(m, ctx, o);
  EXPECT_DOUBLE_EQ(mem.parameters, 2 * p + static_cast<double>(m.buffer_bytes()) + 4 * p);
  EXPECT_DOUBLE_EQ(mem.gradients, 2 * p + 4 * p);
  EXPECT_DOUBLE_EQ(mem.optimizer_state, 8 * p);
  ComputeContext autocast = context(Precision::kFP16);
  const KernelCost plain = optimizer_cost(m, Optimizer::kAdamW, true, autocast);
  const KernelCost masters = optimizer_cost(m, Optimizer::kAdamW, true, ctx);
  EXPECT_DOUBLE_EQ(masters.bytes - plain.bytes, 12 * p);
  EXPECT_EQ(masters.kernels - plain.kernels, 2 * ((static_cast<int>(m.parameters.size()) + 35) / 36));
}

}  // namespace op_backward_test
}  // namespace gradsync
