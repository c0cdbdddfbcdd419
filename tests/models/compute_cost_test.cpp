// compute_cost_test.cpp: FLOPs, bytes and times of small layers, computed by hand.
#include "models/compute_cost.hpp"

#include <gtest/gtest.h>

#include "compute_test_util.hpp"
#include "core/error.hpp"
#include "models/memory_cost.hpp"
#include "models/op_cost.hpp"
#include "models/scenario_basics.hpp"
#include "topologies/gpu_spec.hpp"

namespace gradsync {
namespace {

using test::kModel;
using test::round_gpu;

TEST(ComputeCost, LinearByHand) {
  const Model m = parse_model(kModel, "small.yaml");
  const GpuSpec gpu = round_gpu();
  ComputeContext ctx{&gpu, Precision::kBF16, 8, 128, {}};
  const LayerCost c = layer_cost(m, m.layers[0], ctx);
  const double tokens = 8 * 128;
  EXPECT_DOUBLE_EQ(c.forward.flops, 2 * tokens * 1024 * 1024);
  EXPECT_DOUBLE_EQ(c.forward.bytes, 2 * (tokens * 1024 + tokens * 1024) + 2.0 * (1024 * 1024 + 1024));
  EXPECT_DOUBLE_EQ(c.forward.time_s, c.forward.flops / (100e12 * 0.70));  // compute-bound
  EXPECT_DOUBLE_EQ(c.backward.flops, 2 * c.forward.flops);
  EXPECT_EQ(c.backward.kernels, 3);  // dX, dW, db
  EXPECT_DOUBLE_EQ(c.saved_bytes, 2 * tokens * 1024);
  // fp32 runs on the fp32 rate.
  ctx.precision = Precision::kFP32;
  EXPECT_DOUBLE_EQ(layer_cost(m, m.layers[0], ctx).forward.time_s, 2 * tokens * 1024 * 1024 / (10e12 * 0.70));
}

TEST(ComputeCost, ConvByHand) {
  const Model m = parse_model(kModel, "small.yaml");
  const GpuSpec gpu = round_gpu();
  const ComputeContext ctx{&gpu, Precision::kBF16, 1, 128, {}};
  const LayerCost c = layer_cost(m, m.layers[1], ctx);
  // ResNet's conv1: 112 x 112 outputs x 64 channels x 3 x 7 x 7 = 118,013,952 multiply-adds.
  EXPECT_DOUBLE_EQ(c.forward.flops, 2.0 * 118013952);
  EXPECT_DOUBLE_EQ(c.forward.bytes, 2.0 * (3 * 224 * 224 + 64 * 112 * 112) + 2.0 * 64 * 3 * 7 * 7);
  EXPECT_EQ(c.backward.kernels, 2);  // no bias
}

// An attention layer follows --attention: eager math attention (the default) computes the whole
// T x T scores, causal or not, and moves them through HBM (written by QK^T, scaled, masked and
// softmaxed, read by PV; the softmax output saved); SDPA's flash kernel skips the masked half and
// keeps the scores on chip.
TEST(ComputeCost, AttentionLayerFollowsTheMode) {
  const Model m = parse_model(kModel, "small.yaml");
  const GpuSpec gpu = round_gpu();
  ComputeContext ctx{&gpu, Precision::kBF16, 1, 1024, {}};
  const double full = 4.0 * 12 * 1024 * 1024 * 64;
  const double io = 2.0 * (2 * 1024 * 12 * 64 + 2 * 1024 * 12 * 64);  // q, k, v and out in bf16
  const double scores = 2.0 * 12 * 1024 * 1024;
  const LayerCost math = layer_cost(m, m.layers[2], ctx);
  EXPECT_DOUBLE_EQ(math.forward.flops, full);
  EXPECT_DOUBLE_EQ(math.backward.flops, 2 * full);
  EXPECT_DOUBLE_EQ(math.forward.bytes, io + 8 * scores);  // causal: the mask's pass too
  EXPECT_EQ(math.forward.kernels, 5);                     // bmm, scale, masked_fill, softmax, bmm
  EXPECT_DOUBLE_EQ(math.saved_bytes, io + scores);
  ctx.mode.attention = AttentionImpl::kFlash;
  const LayerCost flash = layer_cost(m, m.layers[2], ctx);
  EXPECT_DOUBLE_EQ(flash.forward.flops, full * 0.5);
  EXPECT_DOUBLE_EQ(flash.backward.flops, 2.5 * flash.forward.flops);
  EXPECT_DOUBLE_EQ(flash.forward.bytes, io);
  EXPECT_DOUBLE_EQ(flash.saved_bytes, io + 4.0 * 12 * 1024);  // and the fp32 log-sum-exp
  // The flags see the layer: a transformer whose --attention changes something.
  EXPECT_TRUE(has_attention(m));
  EXPECT_EQ(model_kind(m), "transformer");
}

TEST(ComputeCost, MemoryBoundAndLaunchFloor) {
  const Model m = parse_model(kModel, "small.yaml");
  const GpuSpec gpu = round_gpu();
  ComputeContext ctx{&gpu, Precision::kBF16, 8, 128, {}};
  const LayerCost add = layer_cost(m, m.layers[3], ctx);
  const double n = 8.0 * 1024 * 128;
  EXPECT_DOUBLE_EQ(add.forward.bytes, 3 * 2 * n);
  EXPECT_DOUBLE_EQ(add.forward.time_s, 3 * 2 * n / (1e12 * 0.80));
  EXPECT_EQ(add.backward.kernels, 0);  // an addition's gradient passes through
  // A tiny add is floored at one launch.
  ctx.batch = 1;
  ctx.seq_len = 1;
  EXPECT_DOUBLE_EQ(layer_cost(m, m.layers[3], ctx).forward.time_s, 4e-6);
}

TEST(ComputeCost, OptimizerAndCopies) {
  const Model m = parse_model(kModel, "small.yaml");
  const GpuSpec gpu = round_gpu();
  const ComputeContext ctx{&gpu, Precision::kBF16, 8, 128, {}};
  const double elems = 1024.0 * 1024 + 1024 + 64 * 3 * 7 * 7;
  EXPECT_DOUBLE_EQ(optimizer_cost(m, Optimizer::kAdamW, true, ctx).bytes, 28 * elems);
  // foreach AdamW in PyTorch 2.1 on: 8 kernels (two mul_, lerp_, addcmul_, sqrt, div_, add_,
  // addcdiv_) moving 20 fp32 tensors' worth; before 2.1, mul_ and add_ for the first moment.
  EXPECT_DOUBLE_EQ(optimizer_cost(m, Optimizer::kAdamW, false, ctx).bytes, 80 * elems);
  EXPECT_EQ(optimizer_cost(m, Optimizer::kAdamW, false, ctx).kernels, 8);
  ComputeContext before21 = ctx;
  before21.lerp_moments = false;
  EXPECT_DOUBLE_EQ(optimizer_cost(m, Optimizer::kAdamW, false, before21).bytes, 88 * elems);
  EXPECT_DOUBLE_EQ(optimizer_cost(m, Optimizer::kAdam, false, ctx).bytes, 72 * elems);
  EXPECT_DOUBLE_EQ(optimizer_cost(m, Optimizer::kSGDMomentum, false, ctx).bytes, 32 * elems);
  EXPECT_DOUBLE_EQ(optimizer_cost(m, Optimizer::kSGD, false, ctx).bytes, 12 * elems);
  EXPECT_EQ(optimizer_cost(m, Optimizer::kAdam, true, ctx).kernels, 1);
  // Single-tensor (torch.optim before 2.0): AdamW's 9 kernels per parameter and zero_grad's fill,
  // each issued from Python, so the host's time sets the step.
  ComputeContext fill = ctx;
  fill.zero_grad_fill = true;  // zero_grad(set_to_none=False), the default before 2.0
  fill.lerp_moments = false;   // mul_ and add_ before 2.1
  const KernelCost loop = optimizer_cost(m, Optimizer::kAdamW, OptimizerImpl::kSingleTensor, fill);
  EXPECT_EQ(loop.kernels, 3 * 10);
  EXPECT_DOUBLE_EQ(loop.bytes, (88 + 4) * elems);
  EXPECT_DOUBLE_EQ(loop.host_s, 30 * rates_for(gpu).host.loop_op_s);
  EXPECT_DOUBLE_EQ(loop.time_s, std::max(loop.host_s, loop.gpu_s));
  EXPECT_EQ(optimizer_cost(m, Optimizer::kSGDMomentum, OptimizerImpl::kSingleTensor, fill).kernels, 3 * 4);
  EXPECT_EQ(optimizer_cost(m, Optimizer::kSGDMomentum, OptimizerImpl::kSingleTensor, ctx).kernels, 3 * 3);
  // No optimizer.step() (optimizer none): nothing, but zero_grad's fill when it fills.
  EXPECT_EQ(parse_optimizer("none"), Optimizer::kNone);
  EXPECT_EQ(optimizer_cost(m, Optimizer::kNone, false, ctx).kernels, 0);
  EXPECT_DOUBLE_EQ(optimizer_cost(m, Optimizer::kNone, true, ctx).bytes, 0);
  EXPECT_EQ(optimizer_cost(m, Optimizer::kNone, OptimizerImpl::kSingleTensor, fill).kernels, 3);
  EXPECT_DOUBLE_EQ(optimizer_cost(m, Optimizer::kNone, OptimizerImpl::kSingleTensor, fill).bytes, 4 * elems);
  // A parameter forward never uses keeps grad None: torch.optim, zero_grad and GradScaler's
  // unscale skip it (the conv's weight here: 3 tensors become 2).
  Model unused = m;
  unused.unused_parameters.push_back(2);
  const double used = 1024.0 * 1024 + 1024;
  EXPECT_EQ(holds_gradient(unused), (std::vector<bool>{true, true, false}));
  EXPECT_EQ(trainable_gradients(unused), (std::pair<double, int>{4 * used, 2}));
  EXPECT_DOUBLE_EQ(optimizer_cost(unused, Optimizer::kAdamW, true, ctx).bytes, 28 * used);
  EXPECT_EQ(optimizer_cost(unused, Optimizer::kAdamW, OptimizerImpl::kSingleTensor, fill).kernels, 2 * 10);
  EXPECT_DOUBLE_EQ(optimizer_cost(unused, Optimizer::kAdamW, OptimizerImpl::kSingleTensor, fill).bytes,
                   (88 + 4) * used);
  EXPECT_EQ(optimizer_state_bytes_per_param(Optimizer::kNone), 0);
  // foreach with set_to_none=False: one _foreach_zero_ launch writes every gradient once more.
  ComputeContext fill21 = fill;
  fill21.lerp_moments = true;
  const KernelCost zf = optimizer_cost(m, Optimizer::kAdamW, false, fill21);
  const KernelCost z0 = optimizer_cost(m, Optimizer::kAdamW, false, ctx);
  EXPECT_EQ(zf.kernels, z0.kernels + 1);
  EXPECT_DOUBLE_EQ(zf.bytes, z0.bytes + 4 * elems);
  const KernelCost copy = copy_cost(4e6, 1, ctx);             // memory-bound: 10 us > one 4 us launch
  EXPECT_DOUBLE_EQ(copy_cost(4e6, 3, ctx).time_s, 3 * 4e-6);  // three launches floor it at 12 us
  EXPECT_DOUBLE_EQ(copy.bytes, 8e6);
  EXPECT_DOUBLE_EQ(copy.time_s, 8e6 / 0.8e12);
  // clip_grad_norm_: gradients read twice (norms, product) and written once; foreach: one
  // _foreach_norm and one _foreach_mul_ launch for these 3 tensors, and 5 scalar kernels.
  // The norm (one read, the _foreach_norm and 5 scalar kernels) and the scaling (a read and a write,
  // the _foreach_mul_) are timed apart, since the host may wait between them (before 1.10).
  const KernelCost clip = clip_grad_norm_cost(m, ctx);
  const KernelCost norm = clip_grad_norm_cost(m, ctx, ClipPart::kNorm);
  const KernelCost scale = clip_grad_norm_cost(m, ctx, ClipPart::kScale);
  EXPECT_DOUBLE_EQ(clip.bytes, 3 * 4 * elems);
  EXPECT_EQ(clip.kernels, 2 * 1 + 5);
  EXPECT_DOUBLE_EQ(norm.time_s, std::max(4 * elems / 0.8e12, 6 * 4e-6));
  EXPECT_DOUBLE_EQ(scale.time_s, std::max(8 * elems / 0.8e12, 1 * 4e-6));
  EXPECT_DOUBLE_EQ(clip.time_s, norm.time_s + scale.time_s);
  ComputeContext old = ctx;  // torch 1.x: a norm and a mul_ per gradient, from Python
  old.foreach = false;
  const KernelCost clip_loop = clip_grad_norm_cost(m, old);
  EXPECT_EQ(clip_loop.kernels, 2 * 3 + 5);
  EXPECT_DOUBLE_EQ(clip_loop.host_s, 11 * rates_for(gpu).host.loop_op_s);
  // optimizer_impl: auto follows the release (foreach from PyTorch 2.0); the others as asked.
  Scenario sc;
  ComputeContext c2;
  apply_framework(c2, sc);
  EXPECT_EQ(c2.optimizer_impl, OptimizerImpl::kForEach);
  EXPECT_TRUE(c2.foreach);
  sc.pytorch_version = "1.13";
  apply_framework(c2, sc);
  EXPECT_EQ(c2.optimizer_impl, OptimizerImpl::kSingleTensor);
  EXPECT_FALSE(c2.foreach);
  sc.optimizer_impl = "fused";
  apply_framework(c2, sc);
  EXPECT_EQ(c2.optimizer_impl, OptimizerImpl::kFused);
  // apex's FusedAdam runs the fused kernels in a release without fused=True, and says so.
  sc.pytorch_version = "1.5";
  sc.optimizer_impl = "apex";
  apply_framework(c2, sc);
  EXPECT_EQ(c2.optimizer_impl, OptimizerImpl::kFused);
  EXPECT_EQ(optimizer_text(sc, "fp32"), "adamw (apex fused, zero_grad fills zeros)");
  sc.pytorch_version = "2.11";
  sc.optimizer_impl = "for-loop";
  sc.clip_grad_norm = true;
  apply_framework(c2, sc);
  EXPECT_EQ(c2.optimizer_impl, OptimizerImpl::kSingleTensor);
  EXPECT_TRUE(c2.foreach);  // clip_grad_norm_ stays foreach
  EXPECT_EQ(optimizer_text(sc, "fp32"), "adamw (for-loop) after clip_grad_norm_");
  EXPECT_FALSE(c2.zero_grad_fill);  // set_to_none: auto is True from 2.0
  sc.set_to_none = "false";
  apply_framework(c2, sc);
  EXPECT_TRUE(c2.zero_grad_fill);
  EXPECT_EQ(optimizer_text(sc, "fp32"), "adamw (for-loop, zero_grad fills zeros) after clip_grad_norm_");
  sc.set_to_none = "auto";
  sc.pytorch_version = "1.13";
  apply_framework(c2, sc);
  EXPECT_TRUE(c2.zero_grad_fill);
  EXPECT_EQ(parse_optimizer("adamw"), Optimizer::kAdamW);
  EXPECT_THROW(parse_optimizer("lion"), ConfigError);
}

// A loop that never calls zero_grad (PyTorch's DDP benchmark): nothing fills the gradients, whatever
// set_to_none says, and each backward adds into the gradients the step before left.
TEST(ComputeCost, ALoopWithoutZeroGradAddsIntoTheLastGradients) {
  Scenario sc;
  sc.pytorch_version = "1.4";
  ComputeContext c;
  apply_framework(c, sc);
  EXPECT_TRUE(c.zero_grad_fill);  // set_to_none: auto is False before 2.0
  EXPECT_TRUE(c.grads_defined);
  sc.zero_grad = false;
  for (const char* stn : {"auto", "true", "false"}) {
    sc.set_to_none = stn;
    apply_framework(c, sc);
    EXPECT_FALSE(c.zero_grad_fill) << stn;
    EXPECT_TRUE(c.grads_defined) << stn;
  }
  EXPECT_EQ(optimizer_text(sc, "fp32"), "adamw (for-loop, no zero_grad: gradients accumulate)");
  sc.pytorch_version = "2.11";
  sc.set_to_none = "auto";
  sc.optimizer = "none";
  apply_framework(c, sc);
  EXPECT_TRUE(c.grads_defined);  // set_to_none=True by default from 2.0, but zero_grad is never called
  EXPECT_EQ(optimizer_text(sc, "fp32"), "none (foreach, no zero_grad: gradients accumulate)");
  sc.zero_grad = true;
  apply_framework(c, sc);
  EXPECT_FALSE(c.grads_defined);
  EXPECT_EQ(optimizer_text(sc, "fp32"), "none");
}

TEST(ComputeCost, EveryZooModelOnEveryGpuIsFinite) {
  for (const auto& name : zoo_model_names()) {
    const Model m = load_model(name);
    for (const auto& g : gpu_specs()) {
      const ComputeContext ctx{&g, Precision::kFP32, m.default_batch, m.seq_len(std::nullopt), {}};
      const ModelCost c = model_cost(m, ctx);
      EXPECT_GT(c.forward_s, 0) << name << " on " << g.key;
      EXPECT_GT(c.backward_s, c.forward_s * 0.5) << name << " on " << g.key;
      EXPECT_LT(c.forward_s, 1e3) << name << " on " << g.key;
    }
  }
}

}  // namespace
}  // namespace gradsync

namespace gradsync {
namespace {

KernelCost issued(double gpu_s, double host_s, int kernels) {
  KernelCost k;
  k.kernels = kernels;
  k.gpu_s = gpu_s;
  k.host_s = host_s;
  k.time_s = std::max(gpu_s, host_s);
  return k;
}

TEST(ComputeCost, OneGpusStepIsTheLaunchQueueOverTheLayers) {
  // Two layers: forward GPU-bound, backward host-bound (issued in reverse: layer 1 first); the
  // optimizer host-bound but issued while the GPU is behind.
  ModelCost c;
  LayerCost a, b;
  a.forward = issued(10e-3, 1e-3, 10);
  b.forward = issued(10e-3, 1e-3, 10);
  b.backward = issued(1e-3, 4e-3, 40);
  a.backward = issued(1e-3, 4e-3, 40);
  c.add(a);
  c.add(b);
  const KernelCost opt = issued(1e-3, 5e-3, 100);
  // Forward: first launch at 0.1 ms, then 20 ms of GPU; the host is done at 2 ms. Backward and
  // the optimizer are issued by 15 ms, GPU-queued behind the forward: 20.1 + 1 + 1 + 1 ms.
  EXPECT_NEAR(single_gpu_step_s(c, opt), 23.1e-3, 1e-12);
  // Each at the longer of its GPU and host time would be 10 + 10 + 4 + 4 + 5 = 33 ms.
  EXPECT_NEAR(c.forward_s + c.backward_s + opt.time_s, 33e-3, 1e-12);
  // Host-bound everywhere: the host's issuing plus the last kernel.
  ModelCost h;
  LayerCost l;
  l.forward = issued(1e-3, 10e-3, 100);
  l.backward = issued(1e-3, 10e-3, 100);
  h.add(l);
  EXPECT_NEAR(single_gpu_step_s(h, issued(0.5e-3, 5e-3, 50), 2), 45e-3 + 0.5e-3 / 50, 1e-12);
  // Under GradScaler: the scale before backward, the unscale pass after it, the update after the
  // optimizer, all GPU-queued (+0.52 ms); when the host waits for found_inf, the GPU drains first
  // (20.1 + 0.01 + 2 + 0.5 = 22.61 ms) and the optimizer's 5 ms of issuing shows: then its last
  // kernel (0.01 ms), and the update (0.01 ms launch, 0.01 ms on the GPU).
  c.scaler_scale = issued(0.01e-3, 0.01e-3, 1);
  c.scaler_unscale = issued(0.5e-3, 0.05e-3, 5);
  c.scaler_update = issued(0.01e-3, 0.01e-3, 1);
  EXPECT_NEAR(single_gpu_step_s(c, opt), 23.62e-3, 1e-12);
  c.scaler_waits = true;
  EXPECT_NEAR(single_gpu_step_s(c, opt), 27.63e-3, 1e-12);
  // clip_grad_norm_ after the unscale pass, without the found_inf wait (a fused optimizer): its
  // kernels GPU-queued (+0.1 + 0.2 ms). When the host reads the norm (before PyTorch 1.10) it waits
  // for the GPU there (20.1 + 0.01 + 2 + 0.5 + 0.1 = 22.71 ms), then issues the scaling (0.1 ms) and
  // the optimizer (5 ms), whose last kernel (0.01 ms) and the update (0.01 ms) end the step.
  c.scaler_waits = false;
  ClipStep clip;
  clip.norm = issued(0.1e-3, 0.1e-3, 10);
  clip.scale = issued(0.2e-3, 0.1e-3, 10);
  EXPECT_NEAR(single_gpu_step_s(c, opt, 1, nullptr, &clip), 23.62e-3 + 0.3e-3, 1e-12);
  clip.syncs = true;
  EXPECT_NEAR(single_gpu_step_s(c, opt, 1, nullptr, &clip), 22.71e-3 + 0.1e-3 + 5e-3 + 0.01e-3 + 0.01e-3, 1e-12);
}

// GradScaler's work in one GPU's step (core/grad_scaler.hpp): fp16 autocast by default; a fused
// optimizer unscales inside its own kernel and the host does not wait.
TEST(ComputeCost, GradScalerIsOnePassOverTheGradientsWithFp16Autocast) {
  const Model m = load_model("resnet18");
  const GpuSpec& gpu = gpu_spec("a100-sxm4-80gb");
  Scenario sc;
  sc.optimizer = "sgd-momentum";
  ComputeContext ctx{&gpu, Precision::kFP16, 32, 1, {}};
  apply_framework(ctx, sc);
  EXPECT_TRUE(ctx.grad_scaler);
  const ModelCost c = model_cost(m, ctx);
  const auto [grads, tensors] = trainable_gradients(m);
  EXPECT_DOUBLE_EQ(grads, 4.0 * 11689512);  // torchvision's ResNet-18: 11,689,512 float32 parameters
  EXPECT_EQ(tensors, 62);
  EXPECT_DOUBLE_EQ(c.scaler_unscale.bytes, 2 * grads);
  EXPECT_EQ(c.scaler_unscale.kernels, 4 + (tensors + 109) / 110);
  EXPECT_EQ(c.scaler_scale.kernels, 1);
  EXPECT_EQ(c.scaler_update.kernels, 1);
  EXPECT_TRUE(c.scaler_waits);
  ctx.optimizer_impl = OptimizerImpl::kFused;
  const ModelCost fused = model_cost(m, ctx);
  EXPECT_EQ(fused.scaler_unscale.kernels, 0);
  EXPECT_FALSE(fused.scaler_waits);
  // clip_grad_norm_ needs the true gradients: scaler.unscale_ runs the pass for a fused optimizer,
  // which the scaler's own step would not; the norm reads every gradient, the scaling reads and
  // writes each.
  const ClipStep fused_clip = clip_step(m, ctx, false);
  EXPECT_DOUBLE_EQ(fused_clip.unscale.bytes, 2 * grads);
  EXPECT_DOUBLE_EQ(fused_clip.norm.bytes, grads);
  EXPECT_DOUBLE_EQ(fused_clip.scale.bytes, 2 * grads);
  ComputeContext plain = ctx;
  plain.optimizer_impl = OptimizerImpl::kForEach;
  EXPECT_EQ(clip_step(m, plain, false).unscale.kernels, 0);  // the scaler's own pass unscales
  ComputeContext bf16 = ctx;
  bf16.precision = Precision::kBF16;
  apply_framework(bf16, sc);
  EXPECT_FALSE(bf16.grad_scaler);  // bf16 autocast runs without one
  sc.grad_scaler = "false";
  apply_framework(ctx, sc);
  EXPECT_FALSE(ctx.grad_scaler);
  EXPECT_EQ(model_cost(m, ctx).scaler_scale.kernels, 0);
}

}  // namespace
}  // namespace gradsync

namespace gradsync {
namespace {

// The validation classes group models as transformers (attention), conv nets (convolutions) and
// the rest (an MLP), which no published case vouches for.
TEST(ModelKind, AttentionConvolutionsOrOther) {
  EXPECT_EQ(model_kind(load_model("gpt2")), "transformer");
  EXPECT_EQ(model_kind(load_model("vit-b-16")), "transformer");
  EXPECT_EQ(model_kind(load_model("resnet18")), "conv net");
  const Model mlp = parse_model(R"(format: gradsync-model/2
name: mlp
defaults: {batch: 8}
input: {bytes: 4096}
output: {elements: 10}
parameters:
  - {name: fc.weight, shape: [10, 1024]}
layers:
  - {name: fc, kind: linear, params: [fc.weight], in: 1024, out: 10}
)",
                                "mlp.yaml");
  EXPECT_EQ(model_kind(mlp), "other");
}

}  // namespace
}  // namespace gradsync
