// host_cost_test.cpp: the host's time per eager ATen call (models/host_costs.hpp) against hand
// counts of the calls PyTorch makes: a convolution and its backward are one cuDNN call each, cuDNN's
// layout transposes and weight gradient inside them; batch norm one cuDNN call in NCHW, PyTorch's
// own kernels in channels_last; a linear layer under autocast its casts (ATen ops) and one cuBLAS
// product, two in backward.
#include <gtest/gtest.h>

#include "models/compute_cost.hpp"
#include "models/host_costs.hpp"
#include "models/model.hpp"
#include "models/op_cost.hpp"
#include "models/step_costs.hpp"
#include "op_test_util.hpp"
#include "topologies/gpu_spec.hpp"

namespace gradsync {
namespace host_cost_test {

using test::layer_cost;

ComputeContext context(const char* gpu, Precision p, std::int64_t batch, std::int64_t t = 1) {
  ComputeContext ctx;
  ctx.gpu = &gpu_spec(gpu);
  ctx.precision = p;
  ctx.batch = batch;
  ctx.seq_len = t;
  return ctx;
}

TEST(HostCost, ClassesAreTheIsolatedCallsTimesTheInModelFactor) {
  const OpHostCosts h = op_host_costs();
  EXPECT_GT(h.in_model, 1.0);  // a step's calls cost more than a loop's
  EXPECT_DOUBLE_EQ(h.of(HostCall::kOp), 7.27e-6 * h.in_model);
  EXPECT_DOUBLE_EQ(h.of(HostCall::kBlas), 11.99e-6 * h.in_model);
  EXPECT_DOUBLE_EQ(h.of(HostCall::kCudnn), 27.01e-6 * h.in_model);
  EXPECT_EQ(h.of(HostCall::kInside), 0.0);
  EXPECT_DOUBLE_EQ(h.of(HostCall::kAccumulate), h.loop_op_s);  // the engine's add_ loop, not scaled
  const KernelRates r = rates_for(gpu_spec("a100"));
  EXPECT_DOUBLE_EQ(r.host.of(HostCall::kOp), h.of(HostCall::kOp));
  EXPECT_DOUBLE_EQ(r.host.of(HostCall::kBlas), h.of(HostCall::kBlas));
  EXPECT_DOUBLE_EQ(r.host.of(HostCall::kCudnn), h.of(HostCall::kCudnn));
  EXPECT_DOUBLE_EQ(r.host.loop_op_s, 6.26e-6);  // the optimizer's loop: isolated, as measured
}

// TF32 on an A100: cuDNN transposes NCHW around its tensor-core kernels, inside the same call.
TEST(HostCost, AConvolutionIsOneCudnnCallTransposesAndWeightGradientIncluded) {
  const Model m = load_model("resnet50");
  const ComputeContext ctx = context("a100", Precision::kTF32, 8);
  const KernelRates r = rates_for(*ctx.gpu);
  const ModelCost c = op_model_cost(m, ctx);
  const LayerCost& conv1 = layer_cost(m, c, "conv1");
  EXPECT_EQ(conv1.forward.kernels, 3);  // the convolution and its two transposes
  EXPECT_NEAR(conv1.forward.host_s, r.host.of(HostCall::kCudnn) + 2 * r.module_call_s, 1e-15);  // the model, conv1
  // conv1's input (the image) needs no gradient: the weight's, and the gradient's transpose.
  EXPECT_EQ(conv1.backward.kernels, 2);
  EXPECT_NEAR(conv1.backward.host_s, r.host.of(HostCall::kCudnn), 1e-15);
  const LayerCost& inner = layer_cost(m, c, "layer1.0.conv2");
  EXPECT_EQ(inner.backward.kernels, 4);  // input's and weight's gradients, two transposes
  EXPECT_NEAR(inner.backward.host_s, r.host.of(HostCall::kCudnn), 1e-15);
}

// bn1: num_batches_tracked.add_(1), then batch norm's two kernels in one call.
TEST(HostCost, BatchNormIsOneCudnnCallInNchwAndPyTorchsOwnInChannelsLast) {
  const Model m = load_model("resnet50");
  ComputeContext ctx = context("v100", Precision::kFP32, 8);
  const KernelRates r = rates_for(*ctx.gpu);
  const ModelCost nchw = op_model_cost(m, ctx);
  const LayerCost& bn = layer_cost(m, nchw, "bn1");
  EXPECT_EQ(bn.forward.kernels, 3);
  EXPECT_NEAR(bn.forward.host_s, r.host.of(HostCall::kOp) + r.host.of(HostCall::kCudnn) + r.module_call_s, 1e-15);
  EXPECT_NEAR(bn.backward.host_s, r.host.of(HostCall::kCudnn), 1e-15);
  ctx.mode.channels_last = true;
  const ModelCost cl = op_model_cost(m, ctx);
  const LayerCost& bn_cl = layer_cost(m, cl, "bn1");
  EXPECT_NEAR(bn_cl.forward.host_s, 2 * r.host.of(HostCall::kOp) + r.module_call_s, 1e-15);
  EXPECT_NEAR(bn_cl.backward.host_s, r.host.of(HostCall::kOp), 1e-15);
}

// c_fc under bf16 autocast: its weight and bias cast (two ATen to calls), its input cast (ln_2's
// float32 output), then addmm; backward: the two products, the bias's gradient (a sum) and the
// three casts' gradients cast back.
TEST(HostCost, ALinearUnderAutocastIsItsCastsAndOneProduct) {
  const Model m = load_model("gpt2");
  const ComputeContext ctx = context("a100", Precision::kBF16, 1, 1024);
  const KernelRates r = rates_for(*ctx.gpu);
  const ModelCost c = op_model_cost(m, ctx);
  const LayerCost& fc = layer_cost(m, c, "transformer.h.0.mlp.c_fc");
  // F.linear on (B, T, C): the input viewed as (B*T, C) and the weight transposed (t): two view
  // calls on tensors that require grad, each a backward node too.
  const Layer& layer = m.layers[static_cast<std::size_t>(&fc - c.layers.data())];
  EXPECT_EQ(layer.views, 2);
  EXPECT_EQ(layer.grad_views, 2);
  EXPECT_EQ(fc.forward.kernels, 4);
  EXPECT_NEAR(fc.forward.host_s,
              3 * r.host.of(HostCall::kOp) + r.host.of(HostCall::kBlas) + 2 * r.module_call_s + 2 * r.host.view_s,
              1e-15);  // mlp, c_fc
  EXPECT_EQ(fc.backward.kernels, 6);
  EXPECT_NEAR(fc.backward.host_s, 4 * r.host.of(HostCall::kOp) + 2 * r.host.of(HostCall::kBlas) + 2 * r.host.view_s,
              1e-15);
}

// View calls launch no kernel but cost the host view_s each: every layer's forward views in the
// forward, the backward nodes of views of tensors requiring grad in the backward (a layer without
// kernels in a pass hands them on); compiled, none.
TEST(HostCost, ViewCallsCostTheHostInForwardAndTheirNodesInBackward) {
  const Model m = load_model("nanogpt");
  Model bare = m;
  int views = 0, grad_views = 0;
  for (Layer& l : bare.layers) {
    views += l.views;
    grad_views += l.grad_views;
    l.views = l.grad_views = 0;
  }
  // nanoGPT's block (PyTorch's dispatch below autograd): c_attn's 2 (input view, weight t), then
  // the split, view and transpose of q, k and v, k's transpose for q @ k^T, the matmuls' expands
  // and reshapes and the causal mask's slices; about 37 a block, 438 in all, 388 with a node.
  EXPECT_EQ(views, 438);
  EXPECT_EQ(grad_views, 388);
  ComputeContext ctx = context("h200", Precision::kBF16, 16, 128);
  const OpHostCosts h = op_host_costs();
  EXPECT_DOUBLE_EQ(h.view_s, 7.6e-6);
  const auto host = [](const ModelCost& c, bool fwd) {
    double s = 0;
    for (const LayerCost& l : c.layers) s += fwd ? l.forward.host_s : l.backward.host_s;
    return s;
  };
  const ModelCost with = op_model_cost(m, ctx), without = op_model_cost(bare, ctx);
  EXPECT_NEAR(host(with, true) - host(without, true), views * h.view_s, 1e-12);
  EXPECT_NEAR(host(with, false) - host(without, false), grad_views * h.view_s, 1e-12);
  EXPECT_GT(with.forward_s, without.forward_s);  // GPT-2 at T=128 on an H200: the host decides
  ctx.mode.compile = true;
  const ModelCost compiled = op_model_cost(m, ctx), compiled_bare = op_model_cost(bare, ctx);
  EXPECT_DOUBLE_EQ(host(compiled, true), host(compiled_bare, true));
  EXPECT_DOUBLE_EQ(host(compiled, false), host(compiled_bare, false));
}

// Compiled, Dynamo traces through the modules: no module calls, and each generated kernel costs
// its launch from the wrapper (eager: AConvolutionIsOneCudnnCall above, module calls included).
TEST(HostCost, CompiledKernelsCostTheirLaunchAndNoModuleCalls) {
  const Model m = load_model("resnet50");
  ComputeContext ctx = context("v100", Precision::kFP32, 1);
  ctx.mode.compile = true;
  const KernelRates r = rates_for(*ctx.gpu);
  const ModelCost compiled = op_model_cost(m, ctx);
  ASSERT_EQ(m.layers[0].name, "conv1");
  EXPECT_GT(compiled.layers[0].forward.kernels, 0);
  EXPECT_NEAR(compiled.layers[0].forward.host_s, compiled.layers[0].forward.kernels * r.compiled_kernel_s, 1e-15);
}

// A host-bound step: ResNet-50 at batch 1 on an H200 is its calls, not its kernels.
TEST(HostCost, ASmallBatchStepIsTheHostsCalls) {
  const Model m = load_model("resnet50");
  const ComputeContext ctx = context("h200", Precision::kTF32, 1);
  const ModelCost c = op_model_cost(m, ctx);
  double host = 0, gpu = 0;
  for (const LayerCost& l : c.layers) {
    host += l.forward.host_s + l.backward.host_s;
    gpu += l.forward.gpu_time() + l.backward.gpu_time();
  }
  EXPECT_GT(host, 4 * gpu);
  // 53 convolutions and 53 batch norms forward and backward are 212 cuDNN calls.
  const KernelRates r = rates_for(*ctx.gpu);
  EXPECT_GT(host, 212 * r.host.of(HostCall::kCudnn));
}

// zero_grad(set_to_none=False) leaves zeros in every gradient, so each AccumulateGrad adds the new
// one in place: one add_ per parameter in the backward of the layer that uses it first (a tied
// weight once), 3 x its bytes, at the engine's add_ cost; gradients set to None cost nothing.
TEST(HostCost, GradientsLeftDefinedAreAddedIntoOncePerParameter) {
  const Model m = load_model("gpt2");
  ComputeContext ctx = context("a100", Precision::kFP32, 1, 64);
  const KernelRates r = rates_for(*ctx.gpu);
  const ModelCost none = op_model_cost(m, ctx);
  ctx.grads_defined = true;  // zero_grad(set_to_none=False), or a later micro-step
  const ModelCost zeros = op_model_cost(m, ctx);
  int kernels = 0;
  double bytes = 0, host = 0;
  for (std::size_t i = 0; i < m.layers.size(); ++i) {
    kernels += zeros.layers[i].backward.kernels - none.layers[i].backward.kernels;
    bytes += zeros.layers[i].backward.bytes - none.layers[i].backward.bytes;
    host += zeros.layers[i].backward.host_s - none.layers[i].backward.host_s;
    EXPECT_EQ(zeros.layers[i].forward.kernels, none.layers[i].forward.kernels) << m.layers[i].name;
  }
  double numel = 0;
  int params = 0;
  for (const Parameter& p : m.parameters) {
    ++params;
    numel += static_cast<double>(p.numel());
  }
  EXPECT_EQ(kernels, params);  // wte is lm_head's weight too: added into once
  EXPECT_DOUBLE_EQ(bytes, 3 * 4 * numel);
  EXPECT_NEAR(host, params * r.host.loop_op_s, 1e-12);
  // c_fc's weight and bias, in its own backward.
  const LayerCost& fc_none = layer_cost(m, none, "transformer.h.0.mlp.c_fc");
  const LayerCost& fc_zeros = layer_cost(m, zeros, "transformer.h.0.mlp.c_fc");
  EXPECT_EQ(fc_zeros.backward.kernels - fc_none.backward.kernels, 2);
  // Under DataParallel the replicas' parameters are not leaves: no add in their backward.
  ctx.accumulate_in_backward = false;
  const ModelCost replica = op_model_cost(m, ctx);
  for (std::size_t i = 0; i < m.layers.size(); ++i)
    EXPECT_EQ(replica.layers[i].backward.kernels, none.layers[i].backward.kernels) << m.layers[i].name;
}

// A later micro-step of a gradient accumulation adds into what the earlier ones summed, whatever
// zero_grad did: RooflineCostModel::backward_into has the adds, backward (gradients None) not.
TEST(HostCost, LaterMicroStepsAddIntoTheGradientsTheFirstLeft) {
  const Model m = load_model("resnet18");
  ComputeContext ctx = context("v100", Precision::kFP32, 8);
  const RooflineCostModel costs(m, ctx, Optimizer::kSGD);
  const KernelRates r = rates_for(*ctx.gpu);
  for (std::size_t l = 0; l < m.layers.size(); ++l) {
    const ComputeOp first = costs.backward(l, 8), later = costs.backward_into(l, 8);
    const int params = static_cast<int>(m.layers[l].params.size());
    EXPECT_EQ(later.kernels - first.kernels, params) << m.layers[l].name;
    EXPECT_NEAR(later.host_s - first.host_s, params * r.host.loop_op_s, 1e-12) << m.layers[l].name;
  }
}

}  // namespace host_cost_test
}  // namespace gradsync
