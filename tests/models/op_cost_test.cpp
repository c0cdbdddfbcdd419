// op_cost_test.cpp: the recorded ops of the zoo's GPT-2 (nanoGPT model.py, eager attention)
// against hand counts of FLOPs and bytes, and what --compile and --attention flash remove.
#include "models/op_cost.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "models/compute_cost.hpp"
#include "models/model.hpp"
#include "op_test_util.hpp"
#include "topologies/gpu_spec.hpp"

namespace gradsync {
namespace {

constexpr double T = 1024;   // sequence length
constexpr double D = 768;    // d_model
constexpr double H = 12;     // heads
constexpr double V = 50257;  // vocabulary
constexpr double n = T * D;  // one activation of the residual stream (batch 1)

using test::layer_cost;

struct OpRun {
  Model model = load_model("gpt2");
  ModelCost cost;
  OpRun(Precision p, bool compile, AttentionImpl attention, const char* gpu = "a100") {
    ComputeContext ctx;
    ctx.gpu = &gpu_spec(gpu);
    ctx.precision = p;
    ctx.batch = 1;
    ctx.seq_len = static_cast<std::int64_t>(T);
    ctx.mode.compile = compile;
    ctx.mode.attention = attention;
    cost = op_model_cost(model, ctx);
  }
  const LayerCost& layer(const std::string& name) const { return layer_cost(model, cost, name); }
};

OpRun eager_fp32() { return OpRun(Precision::kFP32, false, AttentionImpl::kMath); }

TEST(OpCost, LinearByHand) {
  const OpRun r = eager_fp32();
  const LayerCost& c = r.layer("transformer.h.0.attn.c_attn");  // addmm(bias, x, W^T): 768 -> 2304
  EXPECT_DOUBLE_EQ(c.forward.flops, 2 * T * D * 3 * D);
  // Reads the bias, the input and the weight, writes the output, in fp32.
  EXPECT_DOUBLE_EQ(c.forward.bytes, 4 * (3 * D + n + D * 3 * D + 3 * n));
  EXPECT_EQ(c.forward.kernels, 1);
  // Backward: dX = dY W and dW = dY^T X (each the forward's FLOPs), and the bias's reduction;
  // then the cat of the q, k and v slices' gradients (op_backward_test.cpp).
  EXPECT_DOUBLE_EQ(c.backward.flops, 2 * c.forward.flops);
  EXPECT_EQ(c.backward.kernels, 4);
}

// GPU time by kernel class (models show's "GPU time by class"): every kernel of a layer is in one
// class, so the classes sum to the layer's GPU time; a product's own kernels are GEMMs, its bias
// reduction elementwise; softmax and layer norm are their own; autocast's casts are casts.
TEST(OpCost, EveryKernelIsInOneClass) {
  for (const Precision p : {Precision::kFP32, Precision::kBF16}) {
    const OpRun r(p, false, AttentionImpl::kMath);
    for (const LayerCost& c : r.cost.layers) {
      for (const KernelCost* k : {&c.forward, &c.backward}) {
        double sum = 0;
        for (double t : k->class_s) sum += t;
        EXPECT_NEAR(sum, k->gpu_time(), 1e-12 * std::max(1.0, k->gpu_time()));
      }
    }
  }
  const auto cls = [](const KernelCost& k, KernelClass c) { return k.class_s[static_cast<std::size_t>(c)]; };
  const OpRun f32 = eager_fp32();
  const LayerCost& lin = f32.layer("transformer.h.0.attn.c_attn");
  EXPECT_DOUBLE_EQ(cls(lin.forward, KernelClass::kGemm), lin.forward.gpu_time());
  EXPECT_GT(cls(lin.backward, KernelClass::kGemm), 0.0);
  EXPECT_GT(cls(lin.backward, KernelClass::kElementwise), 0.0);  // the bias's reduction
  const OpRun bf16(Precision::kBF16, false, AttentionImpl::kMath);
  EXPECT_GT(cls(bf16.layer("transformer.h.0.attn.c_attn").forward, KernelClass::kCast), 0.0);  // the weight's cast
  double softmax = 0, dropout = 0, norm = 0, attention = 0;
  for (const LayerCost& c : f32.cost.layers) {
    softmax += cls(c.forward, KernelClass::kSoftmax);
    dropout += cls(c.forward, KernelClass::kDropout);  // nanoGPT's default dropout is 0.0: none recorded
    norm += cls(c.forward, KernelClass::kNorm);
    attention += cls(c.forward, KernelClass::kAttention);
  }
  EXPECT_GT(softmax, 0.0);
  EXPECT_EQ(dropout, 0.0);
  EXPECT_GT(norm, 0.0);
  EXPECT_EQ(attention, 0.0);  // math attention: products and a softmax, no fused kernel
  const OpRun flash(Precision::kBF16, false, AttentionImpl::kFlash);
  double fused = 0;
  for (const LayerCost& c : flash.cost.layers) fused += cls(c.forward, KernelClass::kAttention);
  EXPECT_GT(fused, 0.0);
  const OpRun compiled(Precision::kBF16, true, AttentionImpl::kFlash);
  double regions = 0;
  for (const LayerCost& c : compiled.cost.layers) regions += cls(c.forward, KernelClass::kFused);
  EXPECT_GT(regions, 0.0);
}

// TF32 products on Hopper run at 0.8 of the 16-bit tensor efficiency (cuBLAS's sm90_xmma TF32
// kernels, not the wgmma nvjet ones), on the A100 at 0.7 (models/kernel_rates.cpp). GPT-2's mlp.c_fc forward in TF32 at
// batch 16 (one kernel: 16384 x 768 times 768 x 3072, 128 x 128 tiles: 3072 over the SMs) is
// compute-bound: FLOPs / (TF32 peak x gemm_tf32 x the last wave's fill).
TEST(OpCost, Tf32ProductsOnHopperReachLessOfTheirPeak) {
  const Model m = load_model("gpt2");
  EXPECT_DOUBLE_EQ(rates_for(gpu_spec("h100")).gemm_tf32, 0.8 * rates_for(gpu_spec("h100")).gemm_tensor);
  EXPECT_DOUBLE_EQ(rates_for(gpu_spec("a100")).gemm_tf32, 0.7 * rates_for(gpu_spec("a100")).gemm_tensor);
  for (const char* name : {"h100", "a100"}) {
    const GpuSpec& g = gpu_spec(name);
    ComputeContext ctx;
    ctx.gpu = &g;
    ctx.precision = Precision::kTF32;
    ctx.batch = 16;
    ctx.seq_len = static_cast<std::int64_t>(T);
    const KernelCost f = layer_cost(m, op_model_cost(m, ctx), "transformer.h.0.mlp.c_fc").forward;
    const double flops = 2 * 16 * T * D * 4 * D, waves = 3072.0 / g.sms;
    EXPECT_EQ(f.kernels, 1) << name;
    EXPECT_NEAR(f.gpu_time(), flops / (g.tf32_flops * rates_for(g).gemm_tf32 * waves / std::ceil(waves)), 1e-12)
        << name;
  }
}

// The backward products of c_attn at batch 1 on an A100 (108 SMs), fp32: dX = dY W (1024 x 768,
// 8 x 6 = 48 tiles over K = 2304) splits K in two (96 CTAs, one wave 96/108 full) and writes and
// reads its fp32 partial sums; dW = dY^T X (768 x 2304: 108 tiles over K = 1024) fills one wave
// unsplit. Then the bias's reduction, a memory kernel, and the cat of the q, k and v slices'
// gradients into one (op_backward_test.cpp).
TEST(OpCost, FewTilesSplitKAcrossTheSms) {
  const OpRun r = eager_fp32();
  const LayerCost& c = r.layer("transformer.h.0.attn.c_attn");
  const GpuSpec& a100 = gpu_spec("a100");
  const KernelRates k = rates_for(a100);
  ASSERT_EQ(a100.sms, 108);
  const double f = 2 * T * D * 3 * D;
  const double sgemm = a100.fp32_flops * k.gemm_fp32;
  const double dx = f / (sgemm * 96.0 / 108.0), dw = f / sgemm;
  const double bias = std::max(4 * (T * 3 * D + 3 * D) / (a100.memory_bandwidth_Bps * k.memory), k.min_kernel_s);
  const double cat = 4 * (2 * T * 3 * D) / (a100.memory_bandwidth_Bps * k.memory);
  EXPECT_NEAR(c.backward.gpu_time(), dx + dw + bias + cat, 1e-12);
  const double partials = 2.0 * 4 * T * D * 2;  // 1024 x 768 fp32, two slices, written and read
  EXPECT_DOUBLE_EQ(c.backward.bytes, 4 * ((T * 3 * D + 3 * D * D) + T * D) + partials  // dX
                                         + 4 * ((T * 3 * D + T * D) + D * 3 * D)       // dW
                                         + 4 * (T * 3 * D + 3 * D)                     // bias
                                         + 4 * (2 * T * 3 * D));                       // cat
}

TEST(OpCost, LayerNormByHand) {
  const OpRun r = eager_fp32();
  const LayerCost& c = r.layer("transformer.h.0.ln_1");
  // Reads x, weight, bias; writes y and the per-row mean and rstd.
  EXPECT_DOUBLE_EQ(c.forward.bytes, 4 * (n + 2 * D + n + 2 * T));
  EXPECT_DOUBLE_EQ(c.forward.flops, 0);
  EXPECT_EQ(c.forward.kernels, 1);
  EXPECT_EQ(c.backward.kernels, 2);  // the input's gradient, then the weight's and bias's
}

// Elementwise kernels without vectorised loads (a broadcast or non-contiguous operand) take at least
// elements / (1.33 x SMs x clock). nanoGPT at B=16, T=1024 in bf16 on an H200, each op costed alone
// (one layer per op): q's contiguous() copy (16 x 1024 x 768 elements, 2 bytes read and written
// each) and masked_fill (a clone of the 16 x 12 x 1024 x 1024 scores at DRAM speed, then masked_fill_
// over the broadcast mask at the strided rate); the scale (a vectorised mul) stays DRAM-bound. GPU
// time: alone, each op is host-bound.
TEST(OpCost, StridedElementwiseKernelsByHand) {
  const Model m = test::one_op_per_layer(load_model("nanogpt"));
  ComputeContext ctx;
  ctx.gpu = &gpu_spec("h200");
  ctx.precision = Precision::kBF16;
  ctx.batch = 16;
  ctx.seq_len = 1024;
  const ModelCost cost = op_model_cost(m, ctx);
  const double sm_clock = 67e12 / (2.0 * 128), bw = 0.8 * 4.8e12;
  const double q = 16 * T * D, scores = 16 * H * T * T;
  const LayerCost& copy = layer_cost(m, cost, "transformer.h.0.attn.fn/clone/0");
  EXPECT_NEAR(copy.forward.gpu_time(), std::max(2 * 2 * q / bw, q / (1.33 * sm_clock)), 1e-12);
  EXPECT_GT(q / (1.33 * sm_clock), 2 * 2 * q / bw);  // the index arithmetic, not DRAM, decides
  const LayerCost& fill = layer_cost(m, cost, "transformer.h.0.attn.fn/masked_fill/5");
  EXPECT_EQ(fill.forward.kernels, 2);
  EXPECT_NEAR(fill.forward.gpu_time(), 2 * 2 * scores / bw + scores / (1.33 * sm_clock), 1e-12);
  const LayerCost& scale = layer_cost(m, cost, "transformer.h.0.attn.fn/mul/3");
  EXPECT_NEAR(scale.forward.gpu_time(), 2 * 2 * scores / bw, 1e-12);
  // torch.compile generates its own kernels: no strided floor there.
  ctx.mode.compile = true;
  EXPECT_LT(op_model_cost(m, ctx).forward_s, cost.forward_s);
}

// A strided elementwise op whose operands are not all of its result's type casts each element as it
// loads it: BERT-large's additive mask in bf16 autocast (bf16 scores + a float32 mask broadcast over
// heads and queries, the result float32) at 0.767 elements per SM and clock, not 1.33. In fp32 the
// same add casts nothing and keeps the strided rate.
TEST(OpCost, CastingStridedKernelsByHand) {
  const Model m = test::one_op_per_layer(load_model("bert-large"));
  ComputeContext ctx = test::context("h200", Precision::kBF16, 32, 384);
  const double sm_clock = 67e12 / (2.0 * 128), bw = 0.8 * 4.8e12;
  const double scores = 32.0 * 16 * 384 * 384;
  const std::string add = "encoder.layer.0.attention.self.fn/add/4";
  const LayerCost cast = layer_cost(m, op_model_cost(m, ctx), add);
  // Bytes: bf16 scores and the (32 x 384) float32 mask read, float32 scores written.
  EXPECT_NEAR(cast.forward.gpu_time(), std::max((2 + 4) * scores / bw, scores / (0.767 * sm_clock)), 1e-12);
  EXPECT_GT(scores / (0.767 * sm_clock), (2 + 4) * scores / bw);  // the casting loop decides
  ctx.precision = Precision::kFP32;
  const LayerCost same = layer_cost(m, op_model_cost(m, ctx), add);
  EXPECT_NEAR(same.forward.gpu_time(), std::max((4 + 4) * scores / (0.8 * 4.8e12), scores / (1.33 * sm_clock)), 1e-12);
}

// nanoGPT's attention without SDPA: q and k made contiguous, q @ k^T, the scale, the causal
// mask (bias[:, :, :T, :T] == 0, then masked_fill), softmax; v contiguous, att @ v, and the
// heads transposed back.
TEST(OpCost, EagerAttentionAtT1024ByHand) {
  const OpRun r = eager_fp32();
  const LayerCost& a = r.layer("transformer.h.0.attn.fn");
  const LayerCost& b = r.layer("transformer.h.0.attn.fn2");
  const double s = H * T * T;  // one score tensor
  EXPECT_DOUBLE_EQ(a.forward.flops + b.forward.flops, 2 * (2 * H * T * T * (D / H)));
  const double fn = 4 * (2 * n) * 2        // two copies (read + write)
                    + 4 * (2 * n + s)      // q @ k^T
                    + 4 * (2 * s)          // * scale
                    + 4 * T * T + T * T    // bias == 0 (fp32 buffer in, bool out)
                    + 4 * (2 * s)          // masked_fill's clone of the scores
                    + 4 * (2 * s) + T * T  // masked_fill_ in place
                    + 4 * (2 * s);         // softmax
  EXPECT_DOUBLE_EQ(a.forward.bytes, fn);
  EXPECT_EQ(a.forward.kernels, 8);
  const double fn2 = 4 * (2 * n)        // v copy
                     + 4 * (s + n + n)  // att @ v
                     + 4 * (2 * n);     // transpose back
  EXPECT_DOUBLE_EQ(b.forward.bytes, fn2);
}

TEST(OpCost, CrossEntropyOverTheVocabularyByHand) {
  const OpRun r = eager_fp32();
  const LayerCost& head = r.layer("lm_head");
  EXPECT_DOUBLE_EQ(head.forward.flops, 2 * T * D * V);
  // The loss segment: log_softmax reads and writes the logits; nll_loss reads one entry per
  // target (and the int64 targets) and writes the loss and its weight.
  const LayerCost& loss = r.cost.layers.back();
  EXPECT_EQ(r.model.layers.back().kind, LayerKind::kLoss);
  EXPECT_DOUBLE_EQ(loss.forward.bytes, 4 * (2 * T * V) + (4 * T + 8 * T) + 4 * 2);
  EXPECT_EQ(loss.forward.kernels, 2);
}

// A setting a model has nothing for is named (and left out of what the header claims): flash
// attention on a conv net, channels_last on a transformer, vocabulary padding without a vocabulary.
TEST(OpCost, SettingsAModelHasNothingForAreNamed) {
  const Model resnet = load_model("resnet18");
  const Model gpt2 = load_model("gpt2");
  ExecutionMode m;
  m.attention = AttentionImpl::kFlash;
  m.channels_last = true;
  m.pad_to_multiple_of = 64;
  EXPECT_EQ(inert_settings(resnet, m),
            (std::vector<std::string>{"--attention flash: resnet18 has no attention layer",
                                      "--pad-to-multiple-of 64: resnet18 has no product over a vocabulary"}));
  EXPECT_EQ(inert_settings(gpt2, m), (std::vector<std::string>{"--channels-last: gpt2 has no convolution"}));
  const ExecutionMode r = effective_mode(resnet, m), g = effective_mode(gpt2, m);
  EXPECT_EQ(r.attention, AttentionImpl::kMath);
  EXPECT_TRUE(r.channels_last);
  EXPECT_EQ(r.pad_to_multiple_of, 1);
  EXPECT_EQ(g.attention, AttentionImpl::kFlash);
  EXPECT_FALSE(g.channels_last);
  EXPECT_EQ(g.pad_to_multiple_of, 64);
  EXPECT_TRUE(inert_settings(gpt2, ExecutionMode{}).empty());
}

TEST(OpCost, FlashAttentionRemovesTheScoresAndNothingElse) {
  const OpRun math(Precision::kBF16, false, AttentionImpl::kMath);
  const OpRun flash(Precision::kBF16, false, AttentionImpl::kFlash);
  const double d = D / H;
  // The fused kernel reads q, k, v and writes the output (bf16) and the row log-sum-exp (fp32);
  // the one op of the two segments outside the core, the heads' transpose back, stays.
  const double io = H * d * (2 * T + 2 * T) * 2 + 4 * H * T;
  EXPECT_DOUBLE_EQ(flash.layer("transformer.h.0.attn.fn").forward.bytes, io);
  EXPECT_DOUBLE_EQ(flash.layer("transformer.h.0.attn.fn2").forward.bytes, 2 * (2 * n));
  EXPECT_EQ(flash.layer("transformer.h.0.attn.fn").forward.kernels, 1);
  EXPECT_EQ(flash.layer("transformer.h.0.attn.fn2").forward.kernels, 1);
  // Causal: half the score products, forward and (2.5x) backward.
  EXPECT_DOUBLE_EQ(flash.layer("transformer.h.0.attn.fn").forward.flops, 4 * H * T * T * d * 0.5);
  // Every other layer is untouched.
  for (std::size_t i = 0; i < math.model.layers.size(); ++i) {
    const std::string& name = math.model.layers[i].name;
    if (name.find(".attn.fn") != std::string::npos) continue;
    EXPECT_DOUBLE_EQ(flash.cost.layers[i].forward.bytes, math.cost.layers[i].forward.bytes) << name;
    EXPECT_DOUBLE_EQ(flash.cost.layers[i].backward.bytes, math.cost.layers[i].backward.bytes) << name;
  }
  // Saved for backward, per block: math keeps q and k's copies, v's copy (bf16), the boolean mask,
  // the probabilities softmax keeps (fp32) and their bf16 copy for att @ v; flash keeps q, k, v,
  // the output (bf16) and the log-sum-exp (fp32) and no T x T tensor.
  const double s = H * T * T;
  const double math_saved = 3 * (2 * n) + T * T + (4 + 2) * s;
  const double flash_saved = 4 * (2 * n) + 4 * H * T;
  EXPECT_DOUBLE_EQ(math.cost.saved_activation_bytes - flash.cost.saved_activation_bytes,
                   12 * (math_saved - flash_saved));
}

TEST(OpCost, CompileFusesTheResidualAddIntoTheNextLayerNorm) {
  const OpRun eager = eager_fp32();
  const OpRun compiled(Precision::kFP32, true, AttentionImpl::kMath);
  // Eager: add reads two and writes one; layer norm reads it again.
  const double eager_bytes =
      eager.layer("transformer.h.0.fn").forward.bytes + eager.layer("transformer.h.0.ln_2").forward.bytes;
  EXPECT_DOUBLE_EQ(eager_bytes, 4 * (3 * n) + 4 * (n + 2 * D + n + 2 * T));
  // Compiled: one kernel, charged to the layer norm, reads both summands once and writes the sum
  // (the next residual add reads it, the norm's backward keeps it) and the normalised output; the
  // per-row mean and rstd, which nothing else reads, are recomputed in backward (as saved_bytes
  // counts them), not written.
  EXPECT_DOUBLE_EQ(compiled.layer("transformer.h.0.fn").forward.bytes, 0);
  EXPECT_EQ(compiled.layer("transformer.h.0.fn").forward.kernels, 0);
  EXPECT_DOUBLE_EQ(compiled.layer("transformer.h.0.ln_2").forward.bytes, eager_bytes - 4 * n - 4 * (2 * T));
  EXPECT_EQ(compiled.layer("transformer.h.0.ln_2").forward.kernels, 1);
  // The matrix products are not fused: the same kernels, the same bytes.
  EXPECT_DOUBLE_EQ(compiled.layer("transformer.h.0.mlp.c_fc").forward.bytes,
                   eager.layer("transformer.h.0.mlp.c_fc").forward.bytes);
}

TEST(OpCost, CompileFusesTheMaskedSoftmaxIntoOneKernel) {
  const OpRun eager = eager_fp32();
  const OpRun compiled(Precision::kFP32, true, AttentionImpl::kMath);
  const double s = H * T * T;
  // scale, mask, masked_fill, softmax and the next copy of v: one region that reads the scores,
  // the mask buffer and v, and writes the probabilities and v's copy. The boolean mask, which
  // masked_fill saves but only the region reads, is recomputed in backward, not written.
  const double region = 4 * (s + T * T + n) + 4 * (s + n);
  const double fn = compiled.layer("transformer.h.0.attn.fn").forward.bytes;
  const double fn2 = compiled.layer("transformer.h.0.attn.fn2").forward.bytes;
  // fn keeps the q and k copies (one region, reading the fused qkv once) and the product.
  const double qk = 4 * n + 4 * (2 * n);
  EXPECT_DOUBLE_EQ(fn, qk + 4 * (2 * n + s));
  // fn2 carries the region (its last op is v's copy), then the product and the transpose back.
  EXPECT_DOUBLE_EQ(fn2, region + 4 * (s + n + n) + 4 * (2 * n));
  EXPECT_LT(fn + fn2, eager.layer("transformer.h.0.attn.fn").forward.bytes +
                          eager.layer("transformer.h.0.attn.fn2").forward.bytes);
}

TEST(OpCost, GeForceTf32RunsOnTheTensorCores) {
  // GA102's TF32 tensor peak equals its datasheet FP32 figure (35.6 TFLOP/s), but TF32 GEMMs run
  // on the tensor cores at the tensor rate, FP32 ones on the SIMT datapath at its lower rate.
  const OpRun fp32(Precision::kFP32, false, AttentionImpl::kMath, "rtx-3090");
  const OpRun tf32(Precision::kTF32, false, AttentionImpl::kMath, "rtx-3090");
  const KernelRates r = rates_for(gpu_spec("rtx-3090"));
  ASSERT_LT(r.gemm_fp32, r.gemm_tensor);
  // The MLP's 1024 x 3072 x 768 product is compute-bound either way.
  EXPECT_NEAR(
      tf32.layer("transformer.h.0.mlp.c_fc").forward.time_s / fp32.layer("transformer.h.0.mlp.c_fc").forward.time_s,
      r.gemm_fp32 / r.gemm_tensor, 1e-12);
}

// lm_head's products against the vocabulary: 50257 elements (gpt2) is no multiple of 16 bytes in
// any dtype, 50304 (nanogpt) is. Forward and both backward products are compute-bound at T = 1024,
// with the same waves (393 tiles across the vocabulary either way); TF32 (no autocast casts beside the products).
TEST(OpCost, MisalignedProductsRunAtTheNarrowLoadRate) {
  const OpRun odd(Precision::kTF32, false, AttentionImpl::kMath);
  OpRun padded(Precision::kTF32, false, AttentionImpl::kMath);
  padded.model = load_model("nanogpt");
  ComputeContext ctx;
  ctx.gpu = &gpu_spec("a100");
  ctx.precision = Precision::kTF32;
  ctx.batch = 1;
  ctx.seq_len = static_cast<std::int64_t>(T);
  padded.cost = op_model_cost(padded.model, ctx);
  const double third = rates_for(gpu_spec("a100")).gemm_misaligned;
  EXPECT_DOUBLE_EQ(third, 1.0 / 3.0);
  const LayerCost& a = odd.layer("lm_head");
  const LayerCost& b = padded.layer("lm_head");
  const double flops = V / 50304.0;  // the padded products do this much more work
  EXPECT_NEAR(a.forward.time_s / b.forward.time_s, flops / third, 1e-9);
  EXPECT_NEAR(a.backward.time_s / b.backward.time_s, flops / third, 1e-9);
  EXPECT_EQ(a.forward.misaligned_kernels, 1);
  EXPECT_EQ(a.backward.misaligned_kernels, 2);
  EXPECT_DOUBLE_EQ(a.forward.misaligned_s + a.backward.misaligned_s, a.forward.time_s + a.backward.time_s);
  EXPECT_EQ(b.forward.misaligned_kernels + b.backward.misaligned_kernels, 0);
  // Every other product of GPT-2 (768, 2304, 3072, T = 1024, head dim 64) is aligned.
  int misaligned = 0;
  for (const LayerCost& c : odd.cost.layers) misaligned += c.forward.misaligned_kernels + c.backward.misaligned_kernels;
  EXPECT_EQ(misaligned, 3);
}

// Padding gpt2's vocabulary to a multiple of 64 gives its products nanogpt's shapes: the same FLOPs
// and waves, aligned, so the same compute-bound times.
TEST(OpCost, PaddingTheVocabularyWidensAndAlignsTheProductsThatSpanIt) {
  const Model gpt2 = load_model("gpt2");
  EXPECT_EQ(vocabulary_size(gpt2), 50257);
  EXPECT_TRUE(products_span_vocabulary(gpt2));
  EXPECT_EQ(padded_vocabulary(50257, 64), 50304);
  EXPECT_EQ(padded_vocabulary(50257, 1), 50257);
  EXPECT_EQ(vocabulary_size(load_model("bert-base")), 30522);
  EXPECT_FALSE(products_span_vocabulary(load_model("bert-base")));  // BertModel has no output projection
  EXPECT_EQ(vocabulary_size(load_model("resnet18")), 0);
  ComputeContext ctx;
  ctx.gpu = &gpu_spec("a100");
  ctx.precision = Precision::kTF32;
  ctx.batch = 1;
  ctx.seq_len = static_cast<std::int64_t>(T);
  ctx.mode.pad_to_multiple_of = 64;
  const ModelCost padded = op_model_cost(gpt2, ctx);
  ctx.mode.pad_to_multiple_of = 1;
  const Model nano = load_model("nanogpt");
  const ModelCost reference = op_model_cost(nano, ctx);
  const std::size_t head = gpt2.layers.size() - 2;  // lm_head, then the loss
  ASSERT_EQ(gpt2.layers[head].name, "lm_head");
  EXPECT_DOUBLE_EQ(padded.layers[head].forward.flops, 2 * T * D * 50304);
  EXPECT_EQ(padded.layers[head].forward.misaligned_kernels + padded.layers[head].backward.misaligned_kernels, 0);
  EXPECT_NEAR(padded.layers[head].forward.time_s / reference.layers[head].forward.time_s, 1.0, 1e-12);
  EXPECT_NEAR(padded.layers[head].backward.time_s / reference.layers[head].backward.time_s, 1.0, 1e-12);
  // Nothing else changes: the position embedding (1024 rows) is not the vocabulary.
  EXPECT_DOUBLE_EQ(padded.layers[5].forward.time_s, op_model_cost(gpt2, ctx).layers[5].forward.time_s);
}

TEST(OpCost, AlignmentCountsTheOperandsBytesAndOnlyOnTheTensorCores) {
  // TF32 reads 4-byte elements: 50257 misses 16 bytes, 2304 makes them; FP32 SGEMM (SIMT) has no
  // tensor-core kernels to fall back from.
  const OpRun tf32(Precision::kTF32, false, AttentionImpl::kMath);
  const OpRun fp32(Precision::kFP32, false, AttentionImpl::kMath);
  EXPECT_EQ(tf32.layer("lm_head").forward.misaligned_kernels, 1);
  EXPECT_EQ(tf32.layer("transformer.h.0.attn.c_attn").forward.misaligned_kernels, 0);
  EXPECT_EQ(fp32.layer("lm_head").forward.misaligned_kernels, 0);
  // Per architecture: Hopper falls back to Ampere's kernels (0.28), GeForce loses least (0.7).
  EXPECT_DOUBLE_EQ(rates_for(gpu_spec("h100")).gemm_misaligned, 0.28);
  EXPECT_DOUBLE_EQ(rates_for(gpu_spec("rtx-4090")).gemm_misaligned, 0.70);
}

// Compiled, the cross-entropy's region reads the logits and the targets and writes the loss: the
// log-probabilities nll_loss reads (and log_softmax saves) stay inside it and are recomputed in
// backward (AOTAutograd's partitioner), which reads the logits again and writes their gradient.
TEST(OpCost, CompiledCrossEntropyKeepsNoLogProbabilities) {
  const OpRun compiled(Precision::kFP32, true, AttentionImpl::kMath);
  const LayerCost& loss = compiled.cost.layers.back();
  EXPECT_DOUBLE_EQ(loss.forward.bytes, 4 * T * V + 8 * T + 4);
  EXPECT_DOUBLE_EQ(loss.backward.bytes, 2 * loss.forward.bytes);
  EXPECT_EQ(loss.forward.kernels, 2);  // two reductions: the log-softmax and the loss
}

}  // namespace
}  // namespace gradsync

namespace gradsync {
namespace {

// torchvision's ResNet-50 forward calls 183 modules: the model, conv1, bn1, relu, maxpool, the
// four stages (Sequential), 16 Bottlenecks each calling conv1-3 and bn1-3 and its one ReLU three
// times, a downsample (Sequential, conv, bn) in the first block of each stage, avgpool and fc.
TEST(OpCost, ModuleCallsFollowTheModulePaths) {
  const Model m = load_model("resnet50");
  const std::vector<int> calls = module_calls(m);
  ASSERT_EQ(calls.size(), m.layers.size());
  int total = 0;
  for (int c : calls) total += c;
  EXPECT_EQ(total, 1 + 4 + 4 + 16 + 16 * 9 + 4 * 3 + 2);
  const auto at = [&](const std::string& name) {
    for (std::size_t i = 0; i < m.layers.size(); ++i)
      if (m.layers[i].name == name) return calls[i];
    throw std::out_of_range(name);
  };
  EXPECT_EQ(at("conv1"), 2);           // the model, then conv1
  EXPECT_EQ(at("layer1.0.conv1"), 3);  // layer1, layer1.0, conv1
  EXPECT_EQ(at("layer1.0.relu:2"), 1);
  EXPECT_EQ(at("layer1.0.fn"), 0);  // Bottleneck.forward's own residual add
  EXPECT_EQ(at("layer1.0.relu:3"), 1);
  EXPECT_EQ(at("layer1.1.conv1"), 2);  // layer1.1, conv1
}

}  // namespace
}  // namespace gradsync
