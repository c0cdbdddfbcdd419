// memory_cost_test.cpp: what a GPU holds during a step (models/memory_cost.hpp): DDP's buckets,
// autocast's weight copies, the loss's working tensor, optimizer state by dtype, DataParallel's GPU0.
#include "models/memory_cost.hpp"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include "compute_test_util.hpp"
#include "core/error.hpp"
#include "models/compute_cost.hpp"
#include "models/op_cost.hpp"
#include "models/scenario_basics.hpp"
#include "topologies/gpu_spec.hpp"

namespace gradsync {
namespace {

using test::kModel;
using test::round_gpu;

TEST(MemoryCost, DdpBucketsAndGradientAsBucketView) {
  const Model m = parse_model(kModel, "small.yaml");
  const GpuSpec gpu = round_gpu();
  const ComputeContext ctx{&gpu, Precision::kFP32, 8, 128, {}};
  MemoryOptions o;
  o.optimizer = Optimizer::kAdamW;
  const MemoryBreakdown a = memory_cost(m, ctx, o);
  o.gradient_as_bucket_view = true;
  const MemoryBreakdown b = memory_cost(m, ctx, o);
  const double grads = static_cast<double>(m.parameter_bytes());
  EXPECT_DOUBLE_EQ(a.gradients, grads);
  EXPECT_DOUBLE_EQ(a.optimizer_state, 2 * grads);
  EXPECT_DOUBLE_EQ(a.total - b.total, grads);
  EXPECT_DOUBLE_EQ(a.parameters, grads);  // fp32: no autocast weight copies
}

// Autocast's bf16 copy of a float32 weight is one tensor (autocast's cache holds it, the product
// saves it): an op-level model counts it once, among the saved tensors. VGG-16's weights all feed
// convolutions and linears, so the part of its bf16 activations that does not grow with the batch
// is 2 bytes a parameter, and its parameters' memory is fp32's.
TEST(MemoryCost, AutocastWeightCopiesAreCountedOnce) {
  const Model m = load_model("vgg16");
  const GpuSpec& gpu = gpu_spec("a100-sxm4-80gb");
  const MemoryOptions o;
  const auto at = [&](Precision p, int batch) { return memory_cost(m, ComputeContext{&gpu, p, batch, 0, {}}, o); };
  const MemoryBreakdown one = at(Precision::kBF16, 1), two = at(Precision::kBF16, 2);
  double elements = 0;
  for (const auto& p : m.parameters) elements += static_cast<double>(p.numel());
  EXPECT_DOUBLE_EQ(2 * one.activations - two.activations, 2 * elements);
  EXPECT_DOUBLE_EQ(one.parameters, at(Precision::kFP32, 1).parameters);
}

// A frozen weight's bf16 copy is not cached by autocast (leaves that require grad only) and is
// kept only where its op saves it for the input's gradient. A frozen first layer (its input needs
// no grad) keeps nothing; the same layer behind a trainable one keeps its 2-byte copy; a trainable
// one always does. Measured on PyTorch 1.13 with saved_tensors_hooks (a new user's report: an
// 8-layer frozen backbone was charged 1 GiB).
TEST(MemoryCost, AFrozenWeightsAutocastCopyIsKeptOnlyForAnInputGradient) {
  const auto model = [](bool first_frozen, bool second_frozen) {
    const auto frozen = [](bool f) { return f ? ", requires_grad: false" : ""; };
    return parse_model(fmt::format(R"(format: gradsync-model/2
name: frozen
defaults: {{batch: 4}}
input: {{bytes: 4096, dtypes: [float32]}}
output: {{elements: 1024, loss: outside}}
parameters:
  - {{name: a.weight, shape: [1024, 1024]{0}}}
  - {{name: b.weight, shape: [1024, 1024]{1}}}
layers:
  - {{name: a, kind: linear, params: [a.weight], in: 1024, out: 1024, tokens: 1,
     ops: [{{op: mm, in: [["x0", B*1024, 0], ["p0", 1048576, 0]], out: [[B*1024, 0]], flops: B*2097152,
            gemm: [1, B*1, 1024, 1024]}}], saved: []}}
  - {{name: b, kind: linear, params: [b.weight], in: 1024, out: 1024, tokens: 1,
     ops: [{{op: mm, in: [["o0", B*1024, 0], ["p1", 1048576, 0]], out: [[B*1024, 0]], flops: B*2097152,
            gemm: [1, B*1, 1024, 1024]}}], saved: [["o0", B*1024, 0, 1]]}}
)",
                                   frozen(first_frozen), frozen(second_frozen)),
                       "frozen.yaml");
  };
  const GpuSpec& gpu = gpu_spec("a100-sxm4-80gb");
  const auto activations = [&](const Model& m) {
    return memory_cost(m, ComputeContext{&gpu, Precision::kBF16, 4, 0, {}}, MemoryOptions{}).activations;
  };
  const double copy = 2.0 * 1024 * 1024;
  const double frozen_first = activations(model(true, false));  // a's copy freed, b's kept
  EXPECT_DOUBLE_EQ(activations(model(false, false)) - frozen_first, copy);
  // b frozen behind a trainable a: b's output requires grad, so b saves its weight's copy for a's
  // gradient, as a trainable b does.
  EXPECT_DOUBLE_EQ(activations(model(false, true)), activations(model(false, false)));
}

// A loss inside forward works on the log-softmax's B x T x vocabulary input whether forward returns
// the logits with the loss (GPT-2's) or the loss alone (output elements 0).
TEST(MemoryCost, ALossInsideForwardIsSizedByItsInputNotByWhatForwardReturns) {
  Model m = load_model("gpt2");
  ASSERT_TRUE(m.loss_inside);
  const GpuSpec& gpu = gpu_spec("a100-sxm4-80gb");
  const ComputeContext ctx{&gpu, Precision::kFP32, 2, 128, {}};
  const double with_logits = memory_cost(m, ctx, {}).loss;
  EXPECT_DOUBLE_EQ(with_logits, 2.0 * 128 * 50257 * 4);
  m.output_elements = SeqExpr(0);
  EXPECT_DOUBLE_EQ(memory_cost(m, ctx, {}).loss, with_logits);
}

// A parameter forward never reads keeps no gradient and no optimizer state (its grad stays None,
// torch.optim skips it); DDP's buckets (find_unused_parameters) still hold it.
TEST(MemoryCost, AnUnusedParameterHasNoGradientNorOptimizerState) {
  Model m = parse_model(kModel, "small.yaml");
  const GpuSpec gpu = round_gpu();
  const ComputeContext ctx{&gpu, Precision::kFP32, 8, 128, {}};
  MemoryOptions o;
  o.optimizer = Optimizer::kAdamW;
  const MemoryBreakdown all = memory_cost(m, ctx, o);
  ASSERT_TRUE(m.parameters[0].requires_grad);
  const double first = static_cast<double>(m.parameters[0].bytes());
  m.unused_parameters = {0};
  const MemoryBreakdown some = memory_cost(m, ctx, o);
  EXPECT_DOUBLE_EQ(all.gradients - some.gradients, first);
  EXPECT_DOUBLE_EQ(all.optimizer_state - some.optimizer_state, 2 * first);  // Adam's two moments
  EXPECT_DOUBLE_EQ(some.buckets, all.buckets);
  EXPECT_DOUBLE_EQ(some.parameters, all.parameters);
}

TEST(MemoryCost, DpGpu0HoldsOutputsAndOptimizer) {
  const Model m = parse_model(kModel, "small.yaml");
  const GpuSpec gpu = round_gpu();
  const ComputeContext ctx{&gpu, Precision::kBF16, 8, 128, {}};
  MemoryOptions o;
  o.strategy = Strategy::kDP;
  o.dp_global_batch = 32;
  const MemoryBreakdown gpu0 = memory_cost(m, ctx, o);
  o.dp_gpu0 = false;
  const MemoryBreakdown replica = memory_cost(m, ctx, o);
  EXPECT_DOUBLE_EQ(gpu0.outputs, 2.0 * 32 * 1024 * 128 * 2);
  // x.to(gpu0) holds the whole batch there; GPU0's chunk is a view of it, counted as the first
  // layer's saved input: the other 24 samples are extra.
  const double input = static_cast<double>(m.input_bytes.eval(128));
  ASSERT_GT(input, 0);
  EXPECT_DOUBLE_EQ(gpu0.inputs, (32.0 - 8) * input);
  EXPECT_EQ(replica.inputs, 0);
  EXPECT_DOUBLE_EQ(gpu0.total, gpu0.parameters + gpu0.gradients + gpu0.optimizer_state + gpu0.activations +
                                   gpu0.buckets + gpu0.outputs + gpu0.inputs + gpu0.loss + gpu0.context);
  EXPECT_GT(gpu0.optimizer_state, 0);
  EXPECT_EQ(replica.optimizer_state, 0);
  EXPECT_EQ(replica.outputs, 0);
  // The loss runs on GPU0 over the gathered batch, in float32 under autocast; a loss inside
  // forward runs on every replica over its own chunk (GPU0's here).
  EXPECT_DOUBLE_EQ(gpu0.loss, 32.0 * 1024 * 128 * 4);
  EXPECT_EQ(replica.loss, 0);
  Model inside = m;
  inside.loss_inside = true;
  o.dp_gpu0 = true;
  EXPECT_DOUBLE_EQ(memory_cost(inside, ctx, o).loss, 8.0 * 1024 * 128 * 4);
  EXPECT_DOUBLE_EQ(memory_cost(inside, ctx, o).outputs, 1.0 * 32 * 1024 * 128 * 2);  // no gradient of them
  o.dp_gpu0 = false;
  EXPECT_DOUBLE_EQ(memory_cost(inside, ctx, o).loss, 8.0 * 1024 * 128 * 4);
}

// DataParallel over one device calls the module itself (data_parallel.py): nothing is gathered or
// broadcast, so GPU0 holds what DDP's rank holds less DDP's buckets (the loss over its batch).
TEST(MemoryCost, DpOnOneDeviceHoldsWhatOneGpuHolds) {
  Model m = parse_model(kModel, "small.yaml");
  m.loss_inside = true;
  const GpuSpec gpu = round_gpu();
  const ComputeContext ctx{&gpu, Precision::kBF16, 8, 128, {}};
  MemoryOptions o;
  o.optimizer = Optimizer::kAdamW;
  const MemoryBreakdown ddp = memory_cost(m, ctx, o);
  o.strategy = Strategy::kDP;
  o.dp_global_batch = 8;
  const MemoryBreakdown hub = memory_cost(m, ctx, o);
  o.dp_one_device = true;
  const MemoryBreakdown one = memory_cost(m, ctx, o);
  EXPECT_EQ(one.outputs, 0);
  EXPECT_EQ(one.buckets, 0);
  EXPECT_DOUBLE_EQ(one.total, ddp.total - ddp.buckets);
  // The gathered output, without a gradient: backward starts from the loss computed in forward.
  EXPECT_DOUBLE_EQ(hub.total - one.total, 1.0 * 8 * 1024 * 128 * 2 + 2 * 10.0 * kMiB);
}

// torch.optim keeps its state like each parameter (zeros_like): a float64 weight's Adam moments
// take 16 bytes an element; autocast never casts float64, so it has no 16-bit copy.
TEST(MemoryCost, OptimizerStateAndAutocastCopiesFollowEachParametersDtype) {
  Model m = parse_model(kModel, "small.yaml");
  const GpuSpec gpu = round_gpu();
  MemoryOptions o;
  o.optimizer = Optimizer::kAdamW;
  const ComputeContext bf16{&gpu, Precision::kBF16, 8, 128, {}};
  const MemoryBreakdown before = memory_cost(m, bf16, o);
  m.parameters[0].dtype = DType::kFloat64;  // fc.weight: 1024 x 1024
  const MemoryBreakdown after = memory_cost(m, bf16, o);
  const double n = 1024.0 * 1024;
  EXPECT_DOUBLE_EQ(after.optimizer_state - before.optimizer_state, 2 * n * (8 - 4));
  EXPECT_DOUBLE_EQ(after.gradients - before.gradients, n * (8 - 4));
  // Its bytes doubled (4 more per element) and its 2-byte autocast copy is gone.
  EXPECT_DOUBLE_EQ(after.parameters - before.parameters, n * (8 - 4) - n * 2);
}

// The loss's working tensor: batch x output elements in float32 beside every saved tensor (the
// output 1024*T elements a sample here), whatever the autocast precision; a model.half() run
// computes its loss in 16 bits. It adds to the total once.
TEST(MemoryCost, TheLossWorksInFloat32OverTheOutput) {
  const Model m = parse_model(kModel, "small.yaml");
  const GpuSpec gpu = round_gpu();
  MemoryOptions o;
  const ComputeContext bf16{&gpu, Precision::kBF16, 8, 128, {}};
  const MemoryBreakdown a = memory_cost(m, bf16, o);
  EXPECT_DOUBLE_EQ(a.loss, 8.0 * 1024 * 128 * 4);
  EXPECT_DOUBLE_EQ(a.total,
                   a.parameters + a.gradients + a.optimizer_state + a.activations + a.buckets + a.loss + a.context);
  ComputeContext half = bf16;
  half.mode.master_weights = true;
  EXPECT_DOUBLE_EQ(memory_cost(m, half, o).loss, 8.0 * 1024 * 128 * 2);
}

TEST(MemoryCost, Verdicts) {
  const GpuSpec& a100_40 = gpu_spec("a100-sxm4-40gb");
  const Model llama = load_model("llama2-7b");
  const ComputeContext big{&a100_40, Precision::kBF16, 1, 4096, {}};
  EXPECT_TRUE(memory_cost(llama, big, MemoryOptions{}).oom);
  const Model resnet = load_model("resnet18");
  const ComputeContext small{&a100_40, Precision::kBF16, 32, 1, {}};
  EXPECT_FALSE(memory_cost(resnet, small, MemoryOptions{}).oom);
}

}  // namespace
}  // namespace gradsync

namespace gradsync {
namespace {

// optimizer.step()'s temporaries (torch/optim/adam.py): foreach Adam's exp_avg_sq_sqrt, a copy of
// every second moment (two tensors like it before 2.0's in-place eps add), the loop's two tensors
// like the largest parameter, none for fused or SGD. They are alive once backward has freed the
// saved tensors: the peak is the larger of backward's and the step's.
TEST(MemoryCost, OptimizerStepTemporariesAreASecondPeak) {
  EXPECT_DOUBLE_EQ(optimizer_temporary_bytes(Optimizer::kAdamW, OptimizerImpl::kForEach, true, 100, 10), 100);
  EXPECT_DOUBLE_EQ(optimizer_temporary_bytes(Optimizer::kAdam, OptimizerImpl::kForEach, false, 100, 10), 200);
  EXPECT_DOUBLE_EQ(optimizer_temporary_bytes(Optimizer::kAdam, OptimizerImpl::kSingleTensor, false, 100, 10), 20);
  EXPECT_DOUBLE_EQ(optimizer_temporary_bytes(Optimizer::kAdamW, OptimizerImpl::kFused, true, 100, 10), 0);
  EXPECT_DOUBLE_EQ(optimizer_temporary_bytes(Optimizer::kSGDMomentum, OptimizerImpl::kForEach, true, 100, 10), 0);

  const Model m = parse_model(kModel, "small.yaml");
  const GpuSpec gpu = round_gpu();
  ComputeContext ctx{&gpu, Precision::kFP32, 8, 128, {}};
  MemoryOptions o;
  o.optimizer = Optimizer::kAdamW;
  const double params = static_cast<double>(m.parameter_bytes());
  const MemoryBreakdown big = memory_cost(m, ctx, o);
  EXPECT_DOUBLE_EQ(big.optimizer_temporaries, params);  // one fp32 moment of every parameter
  EXPECT_DOUBLE_EQ(big.optimizer_peak, big.parameters + big.gradients + big.optimizer_state + params + big.buckets +
                                           big.inputs + big.hook_state + big.context);
  // At batch 1 the saved tensors are fewer than a moment's bytes: the step sets the peak.
  ctx.batch = 1;
  ctx.seq_len = 1;
  const MemoryBreakdown small = memory_cost(m, ctx, o);
  ASSERT_LT(small.activations + small.loss, params);
  EXPECT_TRUE(small.peak_in_optimizer);
  EXPECT_DOUBLE_EQ(small.total, small.optimizer_peak);
  ctx.optimizer_impl = OptimizerImpl::kFused;
  const MemoryBreakdown fused = memory_cost(m, ctx, o);
  EXPECT_EQ(fused.optimizer_temporaries, 0);
  EXPECT_FALSE(fused.peak_in_optimizer);
  EXPECT_DOUBLE_EQ(small.total - fused.total, small.optimizer_peak - fused.total);
  // A DataParallel replica has no optimizer: nothing.
  o.strategy = Strategy::kDP;
  o.dp_gpu0 = false;
  ctx.optimizer_impl = OptimizerImpl::kForEach;
  EXPECT_EQ(memory_cost(m, ctx, o).optimizer_temporaries, 0);
}

}  // namespace
}  // namespace gradsync

namespace gradsync {
namespace {

// The float32 batch the loop moved to the GPU stays referenced for the whole step: in fp32 the
// first convolution saves it as it is (among the activations); under autocast it saves the bf16
// copy, so the batch is held besides (every DDP rank its own; DataParallel's GPU0 the whole global
// batch). Token ids are saved as they are by the embedding: nothing more.
TEST(MemoryCost, AnAutocastRunHoldsItsFloat32BatchBesidesTheSavedCopy) {
  const Model resnet = load_model("resnet18");
  const GpuSpec& gpu = gpu_spec("a100-sxm4-80gb");
  const double image = static_cast<double>(resnet.input_bytes.eval(1));
  EXPECT_DOUBLE_EQ(image, 3.0 * 224 * 224 * 4);
  MemoryOptions o;
  o.optimizer = Optimizer::kSGDMomentum;
  const ComputeContext bf16{&gpu, Precision::kBF16, 16, 1, {}};
  const ComputeContext fp32{&gpu, Precision::kFP32, 16, 1, {}};
  EXPECT_DOUBLE_EQ(memory_cost(resnet, bf16, o).inputs, 16 * image);
  EXPECT_EQ(memory_cost(resnet, fp32, o).inputs, 0);
  o.strategy = Strategy::kDP;
  o.dp_global_batch = 64;
  EXPECT_DOUBLE_EQ(memory_cost(resnet, bf16, o).inputs, 64 * image);
  EXPECT_DOUBLE_EQ(memory_cost(resnet, fp32, o).inputs, (64 - 16) * image);
  o.dp_gpu0 = false;
  EXPECT_EQ(memory_cost(resnet, bf16, o).inputs, 0);  // a replica's chunk goes with forward
  const Model gpt2 = load_model("gpt2");
  const ComputeContext tokens{&gpu, Precision::kBF16, 4, 128, {}};
  MemoryOptions d;
  EXPECT_EQ(memory_cost(gpt2, tokens, d).inputs, 0);
}

// A 16-bit model's float32 master weights and gradients live with the optimizer: on every DDP rank
// and DataParallel's GPU0, not on DP's replicas (replicate() copies the 16-bit module), nor without
// an optimizer.
TEST(MemoryCost, MasterWeightsLiveWhereTheOptimizerRuns) {
  Model m = load_model("gpt2");
  half_model(m, Precision::kBF16);
  const GpuSpec& gpu = gpu_spec("a100-sxm4-80gb");
  ComputeContext ctx{&gpu, Precision::kBF16, 4, 128, {}};
  ctx.mode.master_weights = true;
  double elements = 0;
  for (const auto& p : m.parameters)
    if (p.requires_grad) elements += static_cast<double>(p.numel());
  MemoryOptions o;
  o.optimizer = Optimizer::kAdamW;
  const MemoryBreakdown rank = memory_cost(m, ctx, o);
  o.optimizer = Optimizer::kNone;
  const MemoryBreakdown none = memory_cost(m, ctx, o);
  EXPECT_DOUBLE_EQ(rank.parameters - none.parameters, 4 * elements);
  EXPECT_DOUBLE_EQ(rank.gradients - none.gradients, 4 * elements);
  o.optimizer = Optimizer::kAdamW;
  o.strategy = Strategy::kDP;
  o.dp_global_batch = 16;
  const MemoryBreakdown hub = memory_cost(m, ctx, o);
  o.dp_gpu0 = false;
  const MemoryBreakdown replica = memory_cost(m, ctx, o);
  EXPECT_DOUBLE_EQ(hub.parameters - replica.parameters, 4 * elements);
  EXPECT_DOUBLE_EQ(hub.gradients - replica.gradients, 4 * elements);
}

}  // namespace
}  // namespace gradsync
