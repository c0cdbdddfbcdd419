// kernel_rates.cpp: the achievable rates of each kernel class per GPU architecture, the
// execution modes' names and the vocabulary that padding changes (op_cost.hpp).
#include <fmt/format.h>

#include <algorithm>

#include "core/error.hpp"
#include "models/op_cost.hpp"

namespace gradsync {

std::string_view kernel_class_name(KernelClass c) {
  switch (c) {
    case KernelClass::kGemm:
      return "GEMM";
    case KernelClass::kConv:
      return "convolution";
    case KernelClass::kAttention:
      return "fused attention";
    case KernelClass::kNorm:
      return "norm";
    case KernelClass::kSoftmax:
      return "softmax";
    case KernelClass::kDropout:
      return "dropout";
    case KernelClass::kCast:
      return "casts and copies";
    case KernelClass::kElementwise:
      return "elementwise";
    case KernelClass::kFused:
      return "fused regions";
    case KernelClass::kGradSum:
      return "gradient sums";
  }
  return "elementwise";
}

std::string_view attention_impl_name(AttentionImpl a) {
  switch (a) {
    case AttentionImpl::kMath:
      return "math";
    case AttentionImpl::kFlash:
      return "flash";
    case AttentionImpl::kMemEfficient:
      return "mem-efficient";
  }
  return "math";
}

ExecutionMode execution_mode(bool compile, std::string_view attention) {
  ExecutionMode m;
  m.compile = compile;
  for (AttentionImpl a : {AttentionImpl::kMath, AttentionImpl::kFlash, AttentionImpl::kMemEfficient})
    if (attention == attention_impl_name(a)) {
      m.attention = a;
      return m;
    }
  throw ConfigError(fmt::format("attention \"{}\": expected math, flash or mem-efficient", attention));
}

void check_attention_precision(const ExecutionMode& m, Precision p) {
  if (m.attention == AttentionImpl::kFlash && (p == Precision::kFP32 || p == Precision::kTF32)) {
    throw ConfigError(fmt::format(
        "FlashAttention runs in fp16 and bf16 only, not {}; F.scaled_dot_product_attention takes its "
        "memory-efficient kernel for float32 inputs: expected attention mem-efficient or math, or precision "
        "bf16 or fp16",
        precision_name(p)));
  }
}

void check_attention_gpu(const ExecutionMode& m, int sm_version, const std::string& gpu_name, PytorchVersion pytorch) {
  if (m.attention != AttentionImpl::kFlash) return;
  const int needed = pytorch.at_least(2, 2) ? 80 : 75;
  if (sm_version > 0 && sm_version < needed) {
    throw ConfigError(fmt::format(
        "FlashAttention needs compute capability {}.{} or later in PyTorch {}; the {} is {}.{}, where "
        "F.scaled_dot_product_attention takes its memory-efficient kernel: expected attention mem-efficient or math",
        needed / 10, needed % 10, pytorch.text(), gpu_name, sm_version / 10, sm_version % 10));
  }
}

std::string execution_mode_text(const ExecutionMode& m, bool attention) {
  std::string text = m.compile ? "torch.compile" : "eager";
  if (attention) text += fmt::format(", {} attention", attention_impl_name(m.attention));
  if (m.channels_last) text += ", channels_last";
  if (m.master_weights) text += ", 16-bit model with float32 master weights";
  if (m.pad_to_multiple_of > 1) text += fmt::format(", vocabulary padded to a multiple of {}", m.pad_to_multiple_of);
  return text;
}

namespace {
// kind_layers: a model costed from its layers' kinds (no recorded ops) with a layer of `kind`.
bool kind_layers(const Model& m, LayerKind kind) {
  return m.ops.empty() &&
         std::any_of(m.layers.begin(), m.layers.end(), [kind](const Layer& l) { return l.kind == kind; });
}
}  // namespace

bool has_attention(const Model& m) {
  return std::any_of(m.ops.begin(), m.ops.end(), [](const Op& op) { return op.attention.has_value(); }) ||
         kind_layers(m, LayerKind::kAttention);
}

std::string model_kind(const Model& m) {
  if (has_attention(m)) return "transformer";
  const bool conv =
      std::any_of(m.layers.begin(), m.layers.end(), [](const Layer& l) { return l.kind == LayerKind::kConv2d; });
  return conv ? "conv net" : "other";
}

bool has_convolutions(const Model& m) {
  return std::any_of(m.ops.begin(), m.ops.end(), [](const Op& op) { return op.conv.has_value(); });
}

std::vector<std::string> inert_settings(const Model& m, const ExecutionMode& mode) {
  std::vector<std::string> out;
  if (mode.attention != AttentionImpl::kMath && !has_attention(m))
    out.push_back(
        fmt::format("--attention {}: {} has no attention layer", attention_impl_name(mode.attention), m.name));
  if (mode.channels_last && !has_convolutions(m)) {
    // A conv2d layer without ops is costed from its kind, which knows no memory format.
    out.push_back(kind_layers(m, LayerKind::kConv2d)
                      ? fmt::format("--channels-last: {}'s convolutions are costed from their layer kind (no ops), "
                                    "which does not model the memory format",
                                    m.name)
                      : fmt::format("--channels-last: {} has no convolution", m.name));
  }
  if (mode.pad_to_multiple_of > 1 && !products_span_vocabulary(m))
    out.push_back(
        fmt::format("--pad-to-multiple-of {}: {} has no product over a vocabulary", mode.pad_to_multiple_of, m.name));
  return out;
}

ExecutionMode effective_mode(const Model& m, ExecutionMode mode) {
  if (!has_attention(m)) mode.attention = AttentionImpl::kMath;
  if (!has_convolutions(m)) mode.channels_last = false;
  if (!products_span_vocabulary(m)) mode.pad_to_multiple_of = 1;
  return mode;
}

std::int64_t vocabulary_size(const Model& m) {
  if (m.unpadded_vocabulary > 0) return m.unpadded_vocabulary;
  for (const Op& op : m.ops) {
    if (op.name != "embedding" || op.in.empty() || op.in[0].ref.kind != OpRef::Kind::kParameter) continue;
    const Parameter& table = m.parameters.at(op.in[0].ref.index);
    return table.shape.empty() ? 0 : table.shape.front();
  }
  return 0;
}

bool products_span_vocabulary(const Model& m) {
  const std::int64_t v = vocabulary_size(m);
  if (v <= 0) return false;
  const auto is_v = [v](const BatchExpr& e) { return e.eval(1, 1) == v && e.eval(2, 3) == v; };
  return std::any_of(m.ops.begin(), m.ops.end(),
                     [&](const Op& op) { return op.gemm && (is_v((*op.gemm)[2]) || is_v((*op.gemm)[3])); });
}

std::int64_t padded_vocabulary(std::int64_t vocabulary, int multiple) {
  const std::int64_t k = std::max(1, multiple);
  return (vocabulary + k - 1) / k * k;
}

void pad_vocabulary(Model& m, int multiple) {
  if (multiple <= 1 || m.unpadded_vocabulary > 0 || !products_span_vocabulary(m)) return;
  const std::int64_t v = vocabulary_size(m);
  const std::int64_t padded = padded_vocabulary(v, multiple);
  m.unpadded_vocabulary = v;
  for (Parameter& p : m.parameters)
    if (!p.shape.empty() && p.shape.size() <= 2 && p.shape.front() == v) p.shape.front() = padded;
}

KernelRates rates_for(const GpuSpec& gpu) {
  KernelRates r;
  const int sm = gpu.sm_version;
  if (sm == 86 || sm == 89) {
    // GA102/AD102 count two FP32 operations per clock and lane in their datasheet peak; one of
    // the two datapaths is shared with integer work, and cuBLAS SGEMM reaches about half of it.
    r.gemm_fp32 = 0.50;
  }
  if (sm >= 90) {
    // Hopper's dense tensor peak (989 TFLOP/s bf16 on H100 SXM) is reached less closely by
    // cuBLAS at model sizes than Ampere's 312.
    r.gemm_tensor = 0.70;
    // TF32 on Hopper: cuBLAS runs it with sm90_xmma_gemm_*_tf32f32 kernels where bf16 gets the
    // wgmma-based nvjet_sm90 ones, and reaches less of its peak. Measured on the lent GPUs
    // (validation/gpu/): GPT-2 124M's GEMMs (B=16, T=1024, SDPA) on the H200 at 0.59 of the TF32
    // peak against 0.76 of the bf16 peak in bf16; BERT-large's (B=32, T=384, eager) on the H100 at
    // 0.50 against 0.59 in fp16. TF32 reaches 0.78 and 0.85 of the 16-bit efficiency: 0.8 of
    // gemm_tensor.
    r.gemm_tf32 = 0.8 * r.gemm_tensor;
  } else if (sm == 80) {
    // TF32 on the A100 (GA100): 0.7 of the 16-bit GEMMs' efficiency. Within one source the 16-bit
    // rate fits and TF32 does not: DeepLearningExamples' BERT-large SQuAD on one A100 SXM4 80GB at
    // batch 32 (validation/published/training_steps.yaml, case 16 and the same row's mixed-precision
    // column, 110.5 sequences/s): with TF32 at the 16-bit efficiency the TF32 case came out +29.5%,
    // while `models show` of the same run in fp16 autocast gives 106.7 sequences/s (-3.4%). Chosen from the train
    // split's five A100 TF32 cases whose steps are GEMMs (that BERT-large; Lambda's BERT-large on an A100 SXM4 40GB and
    // BERT-base on an A100 PCIe 80GB; the Keras benchmarks' compiled BERT-base; llm.c's compiled GPT-2 on an A100 PCIe)
    // as the ratio of 0.6, 0.7, 0.75, 0.8, 0.9 and 1.0 with the least median |error| over them: 3.8% (0.6: 11.5%,
    // 0.75: 7.0%, 0.8: 10.5%, 0.9: 10.8%, 1.0: 16.7%); llm.c's GPT-2 (batch 4) goes the other way,
    // -3.7% -> +21.2%. Hopper's lent GPUs measured 0.78-0.85 (above); 0.7 of 0.80 is 0.56 of the TF32
    // peak, Hopper's figure. No hold-out case is an A100 TF32 GEMM step: not checked out of sample.
    r.gemm_tf32 = 0.7 * r.gemm_tensor;
  } else {
    r.gemm_tf32 = r.gemm_tensor;
  }
  // Misaligned tensor-core GEMMs. cuBLAS (docs "Tensor Core Usage", from 11.0) still runs them on
  // the tensor cores but only with kernels of narrow loads (align1/align2), unless every operand's
  // and the output's innermost dimension is a multiple of 16 bytes (8 fp16/bf16 or 4 tf32
  // elements). What those kernels reach, measured:
  //  - A100 (sm80): padding nanoGPT's lm_head matmuls (vocabulary 50257 -> 50304) "achieves nearly
  //    a 3x speedup" (PyTorch blog "Accelerating Large Language Models with Accelerated
  //    Transformers", 2023-04-18, 8x A100 SXM4 80GB, bf16): a third. V100/T4 (sm70/75) have no
  //    published figure and take A100's.
  //  - RTX 4090 (sm89): bf16 N x N x N at odd N = 2055..2073 ran cutlass *_align1 kernels at
  //    106.8-115.6 TFLOP/s against 155.9 at N = 2040 (pytorch/pytorch#181718): 0.7. GA102 (sm86)
  //    shares the consumer tensor rate per SM and clock (half of GA100's with FP32 accumulate),
  //    against which the same narrow-load kernels lose less; it takes the 4090's figure.
  //  - Hopper (sm90): bf16 K = 588 (4-element aligned) falls back from sm90 wgmma kernels to an
  //    sm80 align2 kernel, 130.56 us against 36.96 us at K = 592 (m87-labs/kestrel PR #143):
  //    0.28. Blackwell (sm100) takes Hopper's.
  if (sm == 86 || sm == 89) r.gemm_misaligned = 0.70;
  // GeForce Ampere and Ada boards (GA102, AD102) run FP32-accumulate MMA, what autocast and TF32
  // use, at half the rate of FP16 accumulate (gpus.yaml fp16_accumulate; whitepapers), the rate
  // their datasheet peak states; the SMs' data paths are sized for the full rate, so libraries'
  // kernels come closer to the halved peak than data-centre parts come to theirs: cuBLAS bf16
  // N x N x N at N = 2040 ran at 155.9 TFLOP/s on an RTX 4090 against 165.2 (pytorch/pytorch#181718):
  // 0.94. GA102 shares the design and takes the 4090's figure; convolutions scale with it. Checked
  // on the train split: the RTX 3090/4090 cases (timm, Lambda, nanoGPT) moved 2-10 points closer
  // (README, "GeForce tensor cores"). Turing's GeForce boards (TU102) also halve FP32 accumulate
  // but keep the default: their two train cases (Lambda's RTX 2080 Ti, ResNet-50 -1%, BERT-base
  // +18% as is) would move away (+4%, +31%).
  r.conv_16bit = r.conv;
  if ((sm == 86 || sm == 89) && gpu.half_rate_fp32_accumulate()) {
    constexpr double kGeForceTensor = 0.94;
    r.conv *= kGeForceTensor / r.gemm_tensor;
    r.gemm_tensor = kGeForceTensor;
    r.gemm_tf32 = kGeForceTensor;  // TF32 MMA: a quarter of the FP16-accumulate rate there
    // 16-bit convolutions there are tensor-core kernels with FP32 accumulate at the halved rate,
    // as the GEMMs are, and reach what the GEMMs reach (0.94) rather than the data-centre conv rate
    // scaled (0.705). Chosen on the train split's GA102/AD102 16-bit conv nets (Lambda's RTX 4090
    // ResNet-50; timm's RTX 3090 ResNet-50 NCHW and NHWC, ResNet-101 NHWC and VGG-16; Lambda's two
    // RTX 4090s under DDP): median |error| 13.6% at 0.705, 9.6% at 0.85, 7.7% at 0.92, 8.3% at 0.94,
    // 6.9% at 0.99 (level from 0.92 on within the cases' spread, and a convolution at 0.99 of the
    // peak would outrun the GEMMs: their figure is taken, not a fit). Every one of them had been too
    // slow (-6% to -21%). TF32 convolutions keep 0.705: on these boards the TF32 tensor rate is
    // no higher than FP32 SIMT's (op_coster.hpp transposes), and Lambda's RTX 3090 and RTX 4090
    // TF32 ResNet-50 fit it (+1.0%, +0.5%; both hold-out, so they did not set it).
    r.conv_16bit = kGeForceTensor;
  }
  if (sm >= 90) r.gemm_misaligned = 0.28;
  // cuDNN's FP32 convolutions on Volta (sm70) and Turing (sm75): 0.75 of the FP32 peak in full waves
  // of 128x128 tiles, counted in direct-convolution FLOPs, with Winograd's F(2x2, 3x3) where cuDNN
  // gains from it (op_conv.cpp). Turing's SM keeps Volta's FP32 datapath (64 lanes per SM, NVIDIA's
  // Turing whitepaper) and cuDNN the same algorithms: one rate. Chosen from both architectures'
  // fp32 conv-net cases of the train split (DLE ResNet-50 on a DGX-1 32GB and 16GB at batch 112;
  // Lambda ResNet-50 on a V100 16GB at 128 and on a TITAN RTX at 224; torchbench's ResNet-50 at batch
  // 1 and 4; ryujaehun's RTX 2080 Ti at batch 12, ResNet-18/50/101 and VGG-16; the PyTorch DDP
  // benchmark's ResNet-50 and ResNet-101 on one GPU at 32: validation/published/) as the rate of
  // 0.60, 0.65, 0.70, 0.75 and 0.80 with the least median |error| over them: 3.7% (0.60: 13.5%,
  // 0.65: 8.4%, 0.70: 5.05%, 0.80: 3.95%). Until 2026-12-02 there was neither Winograd nor waves and
  // 0.85 was chosen the same way; VGG-16 on the 2080 Ti, nearly all 3x3 convolutions, came out 52%
  // too slow (now +8.5%), and the DDP benchmark's batch-32 ResNets 7-10% too fast (now 3-5%). The
  // other architectures keep the SGEMM-scaled conv rate (their fp32 convolutions run as TF32).
  r.conv_fp32 = sm == 70 || sm == 75 ? 0.75 : r.conv * r.gemm_fp32 / r.gemm_tensor;
  // FP32 SGEMM (SIMT) on Turing (sm75): 0.70 of the datasheet FP32 peak (16.3 TFLOP/s for the TITAN
  // RTX at its 1770 MHz boost). Chosen from the three Turing fp32 transformer cases of the train
  // split, from two sources (Lambda's BERT-base SQuAD on a TITAN RTX; Hugging Face's Trainer running
  // GPT-2 on two TITAN RTX as DP and as DDP: validation/published/), as the rate of 0.60, 0.65, 0.70,
  // 0.75 and 0.80 with the least median |error| over them: 0.5% (0.65: 5.4%, 0.75: 4.8%; with the
  // rules' first form 0.60: 11.9%, 0.80: 7.3%). Re-chosen when the backward began to read what each
  // op saves and autograd's gradient sums (op_backward.cpp); 0.60 had been chosen with the backward
  // before. Both sources ran model-sized GEMMs (768 wide) at the board's power limit. Turing's fp32
  // convolutions do not follow it: they take conv_fp32 above, Volta's.
  if (sm == 75) r.gemm_fp32 = 0.70;
  // FP32 lanes per SM (NVIDIA's architecture whitepapers): 64 on Volta, Turing and GA100; 128 on
  // GA102/AD102 (two FP32 datapaths) and Hopper. The datasheet FP32 peak / (2 x lanes x SMs) is
  // the boost clock the peaks assume (V100 1.53 GHz, A100 1.41, RTX 3090 1.70, H100 SXM 1.98).
  r.fp32_lanes = sm >= 86 ? 128 : 64;
  // Batch norm in training (KernelRates::bn_*): measured on one H200 (validation/gpu/h200-2026-11-27,
  // PyTorch 2.11, cuDNN 9.19, ResNet-50 at batch 128: 53 batch norms over 1.42e9 input elements a
  // step, profile.json.gz). The forward ran at 195, 202 and 203 Gelem/s in fp16 NCHW (cuDNN), fp32
  // NCHW (cuDNN) and bf16 channels_last (native): one rate whatever the bytes per element, so not a
  // DRAM limit (fp16 moved 1.2 TB/s, a quarter of the H200's 4.8; the residual adds beside them 4.3).
  // Per SM and clock (132 SMs at 1.98 GHz): 0.746. The backward in NCHW (cuDNN): 114 Gelem/s in fp16,
  // 97 in fp32 default, strict and tf32: median of the four 0.372 per SM and clock (0.373 while
  // native bf16's 78 was in the median); 249 in channels_last (native NHWC kernels): 0.953. bf16 in
  // NCHW runs PyTorch's own kernels, not cuDNN's (Normalization.cpp _select_batch_norm_backend: no
  // cuDNN for a bf16 input or weight, nor for a half input with half weights): forward 115 Gelem/s
  // (batch_norm_collect_statistics, then batch_norm_transform_input), 0.440 per SM and clock;
  // backward 78 (batch_norm_backward_kernel), 0.298. The H100 (validation/gpu/h100-2026-11-27), not
  // used to choose: 0.431 and 0.294. Per SM and clock is the assumption that carries the rates to
  // other GPUs (the kernels are reductions over N x H x W per channel, spread over the SMs).
  // Elementwise kernels of PyTorch (aten/src/ATen/native/cuda/Loops.cuh, gpu_kernel_impl): all
  // operands contiguous and of one dtype -> vectorized_elementwise_kernel (16-byte loads); an operand
  // broadcast or non-contiguous -> elementwise_kernel, which computes every operand's offset from
  // the element's index (integer divisions per dimension). On the H200 (same profiles, GPT-2 124M in
  // bf16 at B=16, T=1024) the vectorised kernels moved 4.2-4.4 TB/s (0.9 of 4.8) while masked_fill_
  // over the 16x12x1024x1024 scores with a 1x1x1024x1024 mask ran at 366 G elements/s (1.5 TB/s)
  // and the transposed copies of q, k, v (contiguous() of 16x12x1024x64 views) at 331: 1.40 and
  // 1.27 per SM and clock (132 SMs at 1.98 GHz), 1.33 in the mean. KernelRates::strided. When an
  // operand's type is not the result's, the loop casts every element as it loads it (Loops.cuh,
  // gpu_kernel_impl with dynamic casting): BERT-large's additive mask in bf16 autocast (bf16 scores
  // + a float32 mask broadcast over heads and queries, 32 x 16 x 384 x 384 a layer) ran at 200.5 G
  // elements/s on the H200 (0.767 per SM and clock; the H100, not used to choose: 0.762 and 0.752
  // in two calls, 0.765 in fp16). KernelRates::strided_cast. Contiguous operands of mixed dtypes
  // take a third loop (launch_unrolled_kernel with LoadWithCast and StoreWithCast: scalar loads,
  // each through a switch on the dtype), and so does every cast from 16 bits to float32: Copy.cu
  // has vectorised kernels for float32 to bf16 and fp16 only (bfloat16_copy_kernel_cuda,
  // float16_copy_kernel_cuda; the reverse ones are ROCm's). On the H200 (GPT-2 124M in bf16
  // autocast, B=16, T=1024, trace_gpt2-bf16-math.json.gz: each kernel's elements from its aten op's
  // shapes) the 148 bf16-to-float32 copies ran at 386 G elements/s, 2.3 TB/s: 0.48 of the DRAM's
  // 4.8, where the step's vectorised copies the other way ran at DRAM speed. Per SM and clock 1.48
  // elements, one load and one store each: 2.95 operand accesses. KernelRates::unrolled_cast. The residual adds of a
  // bf16 result to float32 (two loads, one store) ran at 3.00 (GPT-2) and 2.77 (BERT-large, profile.json.gz). The H100,
  // whose DRAM is 0.7 of the H200's with the same SMs and clock, took 6.7% longer over the copies (2.77) and 12% over
  // GPT-2's adds, where its vectorised kernels took 42-44% longer: the loop is bound by the SMs, not DRAM (not used to
  // choose).
  r.unrolled_cast = 2.95;
  return r;
}

}  // namespace gradsync
