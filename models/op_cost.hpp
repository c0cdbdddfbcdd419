// op_cost.hpp: a training step's compute from the aten ops of a format 2 model file, as PyTorch
// runs them: eager (one kernel per op, each reading and writing whole tensors) or compiled
// (torch.compile: pointwise and reduction ops between matrix products fused), attention as
// recorded (math: the T x T scores materialised) or as F.scaled_dot_product_attention's fused
// kernels (flash, mem-efficient), autocast's dtypes and casts, each kernel class at its own
// achievable rate, and the host's cost of issuing every kernel.
//
//   ComputeContext ctx{&gpu_spec("a100"), Precision::kBF16, 16, 1024};
//   ctx.mode = {.compile = true, .attention = AttentionImpl::kFlash};
//   const ModelCost c = op_model_cost(load_model("gpt2"), ctx);
//
// Forward: every recorded op is a kernel (casts added where autocast inserts them); backward:
// each op's gradient kernels by rule (op_backward in op_cost.cpp, from PyTorch's derivatives.yaml:
// a product's two gradient products, an elementwise op's one kernel reading the gradient and what
// it saved, a layer norm's backward and its weight reduction, ...).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/pytorch_version.hpp"
#include "models/compute_cost.hpp"
#include "models/host_costs.hpp"

namespace gradsync {

// KernelRates: what each kernel class reaches of the GPU's datasheet peaks, per architecture
// (rates_for), and what issuing a kernel costs the host.
struct KernelRates {
  double gemm_tensor = 0.80;  // tensor-core GEMMs (bf16, fp16; tf32: gemm_tf32) of a full wave
  double gemm_fp32 = 0.85;    // FP32 (SIMT) SGEMM
  // gemm_tf32: TF32 tensor-core GEMMs (rates_for: per architecture; gemm_tensor unless measured).
  double gemm_tf32 = 0.80;
  // gemm_misaligned: what a tensor-core GEMM reaches of the aligned rate when an operand's or
  // the output's innermost dimension is not a multiple of 16 bytes (rates_for: per architecture).
  double gemm_misaligned = 1.0 / 3.0;
  double conv = 0.60;  // cuDNN convolutions, of the same peak as the GEMMs
  // conv_16bit: cuDNN convolutions in fp16/bf16 (autocast, a 16-bit model), of the 16-bit tensor
  // peak; rates_for: conv unless measured (GeForce Ampere and Ada: the GEMMs' rate).
  double conv_16bit = 0.60;
  // conv_fp32: cuDNN FP32 convolutions on the SIMT units (before Ampere, where fp32 convolutions
  // do not run as TF32), of the FP32 peak. rates_for sets it per architecture: the conv rate scaled
  // as SGEMM to the tensor GEMM (conv * gemm_fp32 / gemm_tensor) unless measured.
  double conv_fp32 = 0.60 * 0.85 / 0.80;
  double flash = 0.50;  // FlashAttention-2 (forward; backward does 2.5x the FLOPs)
  double mem_efficient = 0.35;
  double memory = 0.80;  // memory-bound kernels, of DRAM bandwidth
  // Batch norm in training, elements per SM per clock (of the input N x C x H x W): its kernels
  // reduce each channel over N x H x W and are limited by that, not by DRAM, on GPUs whose DRAM is
  // fast for their SMs (kernel_rates.cpp). Forward (cuDNN's NCHW kernels and PyTorch's NHWC ones);
  // backward in NCHW (cuDNN's kernels) and in channels_last (PyTorch's native NHWC kernels); and
  // PyTorch's own NCHW kernels, which run where PyTorch does not call cuDNN (bf16:
  // op_coster.hpp cudnn_batch_norm).
  double bn_forward = 0.746;
  double bn_backward_nchw = 0.372;
  double bn_backward_nhwc = 0.953;
  double bn_forward_native_nchw = 0.440;
  double bn_backward_native_nchw = 0.298;
  int fp32_lanes = 64;  // FP32 lanes per SM, whose count the datasheet's FP32 peak is (for the clock)
  // strided: PyTorch's elementwise kernels without vectorised loads (a broadcast or non-contiguous
  // operand: TensorIterator's offset calculator per element), elements per SM per clock at most.
  double strided = 1.33;
  // strided_cast: the same loop when an operand's type differs from the result's (each element
  // loaded through a dynamic cast): elements per SM per clock at most (kernel_rates.cpp).
  double strided_cast = 0.767;
  // unrolled_cast: contiguous operands of mixed dtypes (a 16-bit to float32 cast, a bf16 result
  // added to a float32 residual): PyTorch's unrolled casting loop, operand elements loaded or
  // stored per SM per clock at most (kernel_rates.cpp).
  double unrolled_cast = 2.95;
  int tile = 128;              // output tile of a GEMM (CUTLASS/cuBLAS 128x128), for wave quantisation
  double min_kernel_s = 2e-6;  // a kernel's GPU time at least (launch to completion)
  // host: what one eager ATen call costs the issuing thread (Python or the autograd engine, the
  // dispatcher, autocast, the caching allocator, the library's own host code and the launches),
  // by what it calls (host.of(HostCall); host_costs.cpp has the sources), forward and backward
  // alike; host.loop_op_s: an in-place op of a Python loop over the parameters (the optimizer's).
  OpHostCosts host = op_host_costs();
  double compiled_kernel_s = 4e-6;  // host: torch.compile's generated wrapper launching a kernel
  // module_call_s: host: one eager nn.Module call's own Python (Module.__call__ / _call_impl, the
  // hook checks, forward's dispatch), beside its ops: an empty module's call took 3.08 us against
  // 0.91 us for its one op alone (pytorch/pytorch#50431, Chillee's benchmark, 2021-02).
  double module_call_s = 2.17e-6;
};

// module_calls: per layer of a format 2 model, the nn.Module calls that begin with it in eager
// mode: the modules on its path not entered by the layer before (a container's call, then its
// child's), or the layer's module again ("relu:2"), none for a module's own code between its
// children ("layer1.0.fn"); the model's own call with the first layer. ModuleList and ModuleDict
// on a path (never called) are counted as if they were: at most one per block.
std::vector<int> module_calls(const Model& m);

// rates_for: the rates of a GPU's architecture (sources in op_cost.cpp).
KernelRates rates_for(const GpuSpec& gpu);

// op_model_cost: every layer's forward and backward of a format 2 model (model.ops non-empty).
ModelCost op_model_cost(const Model& model, const ComputeContext& ctx);

std::string_view attention_impl_name(AttentionImpl a);
// check_attention_precision: ConfigError for flash attention in fp32 or tf32: FlashAttention's
// kernels take fp16 and bf16 only, and F.scaled_dot_product_attention runs its memory-efficient
// kernel for float32 inputs (on the H200 in tf32: fmha_cutlassF/B_f32, 36 of GPT-2's 104 ms).
void check_attention_precision(const ExecutionMode& m, Precision p);
// check_attention_gpu: ConfigError for flash attention on a GPU its kernels do not run on:
// PyTorch's FlashAttention-2 kernels (SDPA's flash backend from PyTorch 2.2, sdp_utils.cpp
// check_flash_attention_hardware_support) need compute capability 8.0 or later; 2.0 and 2.1's
// FlashAttention took 7.5 (Turing) and later. SDPA then takes its memory-efficient kernel.
void check_attention_gpu(const ExecutionMode& m, int sm_version, const std::string& gpu_name, PytorchVersion pytorch);
// execution_mode: the scenario keys compile and attention ("math", "flash", "mem-efficient") as a
// mode; ConfigError for another attention name.
ExecutionMode execution_mode(bool compile, std::string_view attention);
// execution_mode_text: "eager, math attention", "torch.compile, flash attention", "eager,
// channels_last"; without `attention` (a model with no attention core) the attention is left out.
std::string execution_mode_text(const ExecutionMode& m, bool attention = true);
// has_attention: whether a model records an attention core (what --attention changes).
bool has_attention(const Model& m);
// model_kind: the kind the validation classes group a model by: "transformer" when it has
// attention (a ViT's patch embedding is a convolution, but its step is a transformer's), else
// "conv net" when it has convolutions, else "other" (an MLP, an LSTM: no published case is of
// their kind, so no validation class vouches for them).
std::string model_kind(const Model& m);
// has_convolutions: whether a model records a convolution (what channels_last changes).
bool has_convolutions(const Model& m);
// inert_settings: the execution settings `m` has nothing for, each as "--flag value: why":
// an attention implementation without an attention core, channels_last without convolutions, a
// vocabulary padding without a product over a vocabulary. They change nothing, and are said to.
std::vector<std::string> inert_settings(const Model& m, const ExecutionMode& mode);
// effective_mode: `mode` without its inert settings (what the header should claim).
ExecutionMode effective_mode(const Model& m, ExecutionMode mode);
// vocabulary_size: the rows of the table of the model's first embedding op (its token embedding)
// as the model file gives them (before pad_vocabulary); 0 without one.
std::int64_t vocabulary_size(const Model& m);
// products_span_vocabulary: whether a product's n or k is the vocabulary at every batch and length
// (a language model's output projection), so that padding the vocabulary changes it.
bool products_span_vocabulary(const Model& m);
// padded_vocabulary: `vocabulary` rounded up to a multiple of `multiple` (>= 1).
std::int64_t padded_vocabulary(std::int64_t vocabulary, int multiple);
// pad_vocabulary: what model.resize_token_embeddings(len(tokenizer), pad_to_multiple_of=N) does to
// the parameters (transformers' PreTrainedModel._resize_token_embeddings): every table that holds
// one row per token (the token embedding, an untied output projection and its bias, BERT's
// prediction bias: each parameter whose first dimension is the vocabulary) gets the padded row
// count, so DDP's buckets, the optimizer and memory hold the padded rows. Does nothing to a model
// without a product over its vocabulary (the padding is inert there, and said to be) or when
// `multiple` <= 1; the products' widening is OpCoster's.
void pad_vocabulary(Model& m, int multiple);

}  // namespace gradsync
