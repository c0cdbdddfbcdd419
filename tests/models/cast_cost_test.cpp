// cast_cost_test.cpp: elementwise kernels over contiguous operands of mixed dtypes (autocast's
// casts from 16 bits to float32, a bf16 result added to a float32 residual), which PyTorch runs in
// its unrolled casting loop, against the closed form of KernelRates::unrolled_cast.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "models/compute_cost.hpp"
#include "models/model.hpp"
#include "models/op_cost.hpp"
#include "op_test_util.hpp"
#include "topologies/gpu_spec.hpp"

namespace gradsync {
namespace {

using test::layer_cost;

// gpu_time of model m's layer `name` (one op per layer) in ctx.
LayerCost cost_of(const Model& m, const ComputeContext& ctx, const std::string& name) {
  return layer_cost(m, op_model_cost(m, ctx), name);
}

// nanoGPT's softmax under bf16 autocast: the scores (bf16) cast to float32 first, one load and one
// store per element in the casting loop (2.95 of them per SM and clock), which on an H200 is slower
// than its 6 bytes at the DRAM rate; the softmax itself is the fp32 run's. Backward, the gradient
// cast back to bf16 is the vectorised copy at the DRAM rate.
TEST(CastCost, WideningCastRunsTheUnrolledLoop) {
  const Model m = test::one_op_per_layer(load_model("nanogpt"));
  const std::string softmax = "transformer.h.0.attn.fn/_softmax/6";
  ComputeContext ctx = test::context("h200", Precision::kBF16, 16, 1024);
  const double sm_clock = 67e12 / (2.0 * 128), bw = 0.8 * 4.8e12;
  const double s = 16.0 * 12 * 1024 * 1024;
  const LayerCost bf16 = cost_of(m, ctx, softmax);
  ctx.precision = Precision::kFP32;
  const LayerCost fp32 = cost_of(m, ctx, softmax);
  const double unrolled = 2 * s / (2.95 * sm_clock);
  EXPECT_GT(unrolled, 6 * s / bw);
  EXPECT_NEAR(bf16.forward.gpu_time() - fp32.forward.gpu_time(), unrolled, 1e-12);
  EXPECT_EQ(bf16.forward.kernels, fp32.forward.kernels + 1);
  EXPECT_NEAR(bf16.backward.gpu_time() - fp32.backward.gpu_time(), 6 * s / bw, 1e-12);
  // An RTX 3090's DRAM is slow for its SMs: there the 6 bytes decide, as for any copy.
  ctx = test::context("rtx-3090", Precision::kBF16, 16, 1024);
  const double slow = cost_of(m, ctx, softmax).forward.gpu_time();
  ctx.precision = Precision::kFP32;
  EXPECT_NEAR(slow - cost_of(m, ctx, softmax).forward.gpu_time(), 6 * s / (0.8 * 936e9), 1e-12);
}

// BERT's residual add under bf16 autocast: dropout(dense(h)) in bf16 plus the float32 residual,
// the result float32: three operand accesses per element in the casting loop. In fp32 the same
// add is one dtype, vectorised at the DRAM rate (12 bytes an element).
TEST(CastCost, MixedDtypeAddRunsTheUnrolledLoop) {
  const Model m = test::one_op_per_layer(load_model("bert-large"));
  const std::string add = "encoder.layer.0.attention.output.fn/add/0";
  ComputeContext ctx = test::context("h200", Precision::kBF16, 32, 384);
  const double sm_clock = 67e12 / (2.0 * 128), bw = 0.8 * 4.8e12;
  const double act = 32.0 * 384 * 1024;
  const LayerCost mixed = cost_of(m, ctx, add);
  EXPECT_GT(3 * act / (2.95 * sm_clock), (2 + 4 + 4) * act / bw);
  EXPECT_NEAR(mixed.forward.gpu_time(), 3 * act / (2.95 * sm_clock), 1e-12);
  ctx.precision = Precision::kFP32;
  EXPECT_NEAR(cost_of(m, ctx, add).forward.gpu_time(), 12 * act / bw, 1e-12);
  // torch.compile generates its own kernels: the add is fused, no casting loop.
  ctx.precision = Precision::kBF16;
  ctx.mode.compile = true;
  const Model whole = load_model("bert-large");
  ComputeContext eager = ctx;
  eager.mode.compile = false;
  EXPECT_LT(op_model_cost(whole, ctx).forward_s, op_model_cost(whole, eager).forward_s);
}

// Backward, the autograd engine hands each input its gradient in the input's dtype: the float32
// gradient of BERT's residual add reaches the bf16 branch cast back to bf16 (the vectorised copy,
// 6 bytes an element at the DRAM rate). In fp32 nothing is cast and the add's backward is free.
TEST(CastCost, PromotedInputGetsItsGradientCastBack) {
  const Model m = test::one_op_per_layer(load_model("bert-large"));
  const std::string add = "encoder.layer.0.attention.output.fn/add/0";
  ComputeContext ctx = test::context("h200", Precision::kBF16, 32, 384);
  const double act = 32.0 * 384 * 1024, bw = 0.8 * 4.8e12;
  const LayerCost mixed = cost_of(m, ctx, add);
  EXPECT_NEAR(mixed.backward.gpu_time(), 6 * act / bw, 1e-12);
  EXPECT_EQ(mixed.backward.kernels, 1);
  ctx.precision = Precision::kFP32;
  EXPECT_EQ(cost_of(m, ctx, add).backward.kernels, 0);
}

// nn.MultiheadAttention's packed in-projection of a transposed input is F.linear's matmul, then
// the bias added (the exporter records mm and add). Autocast casts linear's bias with its weight,
// so the add is 16-bit: the bias cast once (4 bytes read, 2 written an element), then the product's
// fp16 result plus the fp16 bias, written in fp16. Without the rule the float32 bias would promote
// the q, k and v it writes to float32.
TEST(CastCost, LinearsBiasAddRunsIn16Bits) {
  const Model m = test::one_op_per_layer(load_model("vit-b-16"));
  const std::string add = "encoder.layers.encoder_layer_0.self_attention/add/2";
  ComputeContext ctx = test::context("a100", Precision::kFP16, 1);
  const double qkv = 197.0 * 2304, bias = 2304;
  EXPECT_DOUBLE_EQ(cost_of(m, ctx, add).forward.bytes, 6 * bias + (2 * qkv + 2 * bias) + 2 * qkv);
  EXPECT_EQ(cost_of(m, ctx, add).forward.kernels, 2);
  ctx.precision = Precision::kFP32;
  EXPECT_DOUBLE_EQ(cost_of(m, ctx, add).forward.bytes, (4 * qkv + 4 * bias) + 4 * qkv);
}

}  // namespace
}  // namespace gradsync
