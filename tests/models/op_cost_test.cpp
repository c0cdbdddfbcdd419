// op_cost_test.cpp: the recorded ops of the zoo's GPT-2 (nanoGPT model.py, eager attention)
// against hand counts of FLOPs and bytes, and what --compile and --attention flash remove.
#include "models/op_cost.hpp"

#include <gtest/gtest.h>

#include <string>

#include "models/compute_cost.hpp"
#include "models/model.hpp"
#include "topologies/gpu_spec.hpp"

namespace gradsync {
namespace {

constexpr double T = 1024;   // sequence length
constexpr double D = 768;    // d_model
constexpr double H = 12;     // heads
constexpr double V = 50257;  // vocabulary
constexpr double n = T * D;  // one activation of the residual stream (batch 1)

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
  const LayerCost& layer(const std::string& name) const {
    for (std::size_t i = 0; i < model.layers.size(); ++i)
      if (model.layers[i].name == name) return cost.layers.at(i);
    throw std::out_of_range(name);
  }
};

OpRun eager_fp32() { return OpRun(Precision::kFP32, false, AttentionImpl::kMath); }

TEST(OpCost, LinearByHand) {
  const OpRun r = eager_fp32();
  const LayerCost& c = r.layer("transformer.h.0.attn.c_attn");  // addmm(bias, x, W^T): 768 -> 2304
  EXPECT_DOUBLE_EQ(c.forward.flops, 2 * T * D * 3 * D);
  // Reads the bias, the input and the weight, writes the output, in fp32.
  EXPECT_DOUBLE_EQ(c.forward.bytes, 4 * (3 * D + n + D * 3 * D + 3 * n));
  EXPECT_EQ(c.forward.kernels, 1);
  // Backward: dX = dY W and dW = dY^T X (each the forward's FLOPs), and the bias's reduction.
  EXPECT_DOUBLE_EQ(c.backward.flops, 2 * c.forward.flops);
  EXPECT_EQ(c.backward.kernels, 3);
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
                    + 4 * (2 * s) + T * T  // masked_fill
                    + 4 * (2 * s);         // softmax
  EXPECT_DOUBLE_EQ(a.forward.bytes, fn);
  EXPECT_EQ(a.forward.kernels, 7);
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
  // Saved for backward, per block: math keeps q and k's copies, v's copy (bf16), the boolean mask
  // and the probabilities as att @ v's bf16 operand; flash keeps q, k, v, the output (bf16) and
  // the log-sum-exp (fp32) and no T x T tensor.
  const double s = H * T * T;
  const double math_saved = 3 * (2 * n) + T * T + 2 * s;
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
  // (the next residual add reads it, the norm's backward keeps it) and the norm's outputs.
  EXPECT_DOUBLE_EQ(compiled.layer("transformer.h.0.fn").forward.bytes, 0);
  EXPECT_EQ(compiled.layer("transformer.h.0.fn").forward.kernels, 0);
  EXPECT_DOUBLE_EQ(compiled.layer("transformer.h.0.ln_2").forward.bytes, eager_bytes - 4 * n);
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
  // the mask buffer and v, and writes the probabilities, the boolean mask (saved) and v's copy.
  const double region = 4 * (s + T * T + n) + 4 * (s + n) + T * T;
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
  // lm_head's 1024 x 50257 x 768 product is compute-bound either way.
  EXPECT_NEAR(tf32.layer("lm_head").forward.time_s / fp32.layer("lm_head").forward.time_s, r.gemm_fp32 / r.gemm_tensor,
              1e-12);
}

}  // namespace
}  // namespace gradsync
