// compute_cost.hpp: how long each piece of a training step computes on one GPU, by roofline.
//
// A kernel's time is max(FLOPs / (peak FLOP/s x efficiency), bytes / (memory bandwidth x
// efficiency)), and never less than the host's per-kernel launch cost (eager PyTorch issues kernels
// one by one). Every efficiency is a documented default (Efficiency below) that a calibration file
// overrides.
//
//   ComputeContext ctx{&gpu_spec("a100"), Precision::kBF16, /*batch=*/16, /*seq_len=*/1024};
//   const ModelCost c = model_cost(load_model("gpt2"), ctx);
//   c.forward_s, c.backward_s, c.layers[3].forward.flops
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "core/backend.hpp"
#include "core/dtype.hpp"
#include "core/units.hpp"
#include "models/model.hpp"
#include "topologies/gpu_spec.hpp"

namespace gradsync {

// Efficiency: fractions of the datasheet peaks that kernels reach, and the launch cost.
struct Efficiency {
  // matmul 0.70: large cuBLAS GEMMs reach 70-80% of dense tensor-core peak on A100/H100 (NVIDIA
  // Deep Learning Performance Guide, "Matrix Multiplication Background"); model layers are smaller.
  double matmul = 0.70;
  // conv 0.50: cuDNN implicit-GEMM convolutions run below GEMM efficiency, most in early layers with
  // few channels (NVIDIA Deep Learning Performance Guide, "Convolutional Layers").
  double conv = 0.50;
  // attention 0.50: FlashAttention-2 reaches 50-73% of peak forward and less backward on A100
  // (Dao, "FlashAttention-2", 2023, section 4).
  double attention = 0.50;
  // memory 0.80: streaming kernels reach ~80% of peak DRAM bandwidth (the STREAM-like results of
  // NVIDIA's bandwidthTest / babelstream on A100 and H100).
  double memory = 0.80;
  // launch_s 4 us: host-side cost of one eager PyTorch op launching one kernel (CUDA launch latency
  // is 2-5 us; PyTorch dispatch adds to it), the floor of any kernel's time.
  double launch_s = 4e-6;
};

// AttentionImpl: how attention runs: math (the T x T scores materialised, as eager code and
// F.scaled_dot_product_attention's math backend do), flash or mem-efficient (SDPA's fused kernels).
enum class AttentionImpl { kMath, kFlash, kMemEfficient };

// ExecutionMode: how PyTorch runs the model: eager or torch.compile'd, and attention.
struct ExecutionMode {
  bool compile = false;
  AttentionImpl attention = AttentionImpl::kMath;
  // channels_last: model.to(memory_format=torch.channels_last); otherwise (NCHW) cuDNN's tensor-core
  // convolutions transpose their input and output to NHWC and back.
  bool channels_last = false;
  // pad_to_multiple_of: the vocabulary (the first embedding table's rows) padded to a multiple of
  // this in every product that spans it (resize_token_embeddings(pad_to_multiple_of=N)); 1: as is.
  int pad_to_multiple_of = 1;
  // master_weights: the model itself in the 16-bit precision (model.half(); apex amp O2, DeepSpeed
  // and Megatron-LM fp16/bf16) instead of autocast: every op reads and writes 16 bits (softmax,
  // layer norm and the losses too), no casts; the optimizer keeps float32 master copies
  // (half_model converts the model's parameters, buffers and inputs).
  bool master_weights = false;
};

// OptimizerImpl: torch.optim's implementations: foreach (multi-tensor, the CUDA default since
// PyTorch 2.0), fused (fused=True), single-tensor (a Python loop over the parameters: the default
// before 2.0, or foreach=False), with zero_grad filling gradients with zeros (set_to_none=False,
// the default before 2.0).
enum class OptimizerImpl { kForEach, kFused, kSingleTensor };

// ComputeContext: where and how a step computes.
struct ComputeContext {
  const GpuSpec* gpu = nullptr;
  Precision precision = Precision::kFP32;
  std::int64_t batch = 1;    // samples on this GPU
  std::int64_t seq_len = 1;  // T; ignored by models without one
  Efficiency efficiency;
  ExecutionMode mode{};
  // optimizer_impl: how torch.optim runs when the step is not fused (foreach from PyTorch 2.0).
  OptimizerImpl optimizer_impl = OptimizerImpl::kForEach;
  // foreach: the release runs torch's multi-tensor kernels by default (PyTorch 2.x): they serve
  // clip_grad_norm_ whatever the optimizer's implementation.
  bool foreach = true;
  // zero_grad_fill: optimizer.zero_grad(set_to_none=False) writes zeros into every gradient before
  // the next backward (the default before PyTorch 2.0); costed with the optimizer step.
  bool zero_grad_fill = false;
  // accumulate_in_backward: each parameter's AccumulateGrad runs in the backward costed here (one
  // GPU, each DDP replica). False under DataParallel over several GPUs: the replicas' parameters are
  // not leaves, and the gradients reach the module's own parameters on GPU0 after the reduce
  // (DpStepOptions::accumulate_grads).
  bool accumulate_in_backward = true;
  // grads_defined: the gradients are tensors when backward starts (zero_grad filled them with
  // zeros, or earlier micro-steps of a gradient accumulation summed into them), so AccumulateGrad
  // adds into each; None (set_to_none=True before the first micro-step): it takes the new tensor.
  bool grads_defined = false;
  // lerp_moments: Adam's first moment in one lerp_ (PyTorch 2.1 on; adam_lerps_first_moment).
  bool lerp_moments = true;
  // cudnn_tf32: float32 convolutions run as TF32 on Ampere and later (cudnn.allow_tf32's default
  // from PyTorch 1.7; cudnn_tf32_by_default); false: in float32, as before 1.7.
  bool cudnn_tf32 = true;
  // nccl_blocks: the blocks (one per channel) of the NCCL kernels that run beside compute while
  // DDP overlaps; each holds an SM (models/contention.hpp). 0: nothing runs beside compute.
  int nccl_blocks = 0;
  // input: where each batch starts (core/backend.hpp InputLocation); one GPU's step (ModelCost::input)
  // copies it from the host unless it is already on the device. The simulator copies it itself.
  InputLocation input = InputLocation::kDevice;
  // grad_scaler: the step runs under torch.cuda.amp.GradScaler (core/grad_scaler.hpp): costed with
  // one GPU's step (single_gpu_step_s); the simulator's drivers issue it themselves.
  bool grad_scaler = false;
};

// KernelClass: what a kernel does, for the GPU time by class that `models show` prints (where the
// time goes): the classes a profiler's kernel names fall into.
enum class KernelClass : std::uint8_t {
  kGemm,         // matrix products (cuBLAS), attention's score and value products included
  kConv,         // convolutions (cuDNN)
  kAttention,    // a fused attention kernel (SDPA's flash or memory-efficient)
  kNorm,         // batch, layer and group norms
  kSoftmax,      // softmax and its backward
  kDropout,      // dropout's mask and scaling
  kCast,         // dtype casts and copies (autocast's, .contiguous())
  kElementwise,  // everything else eager runs one kernel per op: adds, activations, reductions
  kFused,        // a torch.compile region
  kGradSum,      // AccumulateGrad's adds into gradients that are still there
};
inline constexpr std::size_t kKernelClasses = 10;
std::string_view kernel_class_name(KernelClass c);

// KernelCost: work and time of one piece (a layer's forward, a copy, an optimizer step).
struct KernelCost {
  double flops = 0;
  double bytes = 0;
  int kernels = 0;
  double time_s = 0;
  // host_s: the host's time issuing the kernels (negative: kernels x Efficiency::launch_s).
  double host_s = -1;
  // gpu_s: the GPU's time alone (negative: time_s); time_s = max(gpu_s, host_s) when the host
  // issues the kernels one by one as they run.
  double gpu_s = -1;
  double gpu_time() const { return gpu_s >= 0 ? gpu_s : time_s; }
  // host_time: host_s, or kernels x `launch_s` where host_s is not set.
  double host_time(double launch_s) const { return host_s >= 0 ? host_s : kernels * launch_s; }
  // load: how the GPU time divides for contention with NCCL (zero: filled by kind, step_costs.cpp).
  ComputeLoad load{};
  // misaligned_s, misaligned_kernels: the GPU time and count of tensor-core products whose
  // innermost dimensions miss cuBLAS's 16-byte alignment (op_coster.hpp: aligned).
  double misaligned_s = 0;
  int misaligned_kernels = 0;
  // winograd_s, winograd_kernels: the GPU time and count of convolution kernels run as Winograd's
  // F(2x2, 3x3) (models/op_conv.cpp: 3x3 at stride 1 on the SIMT units, where it is faster).
  double winograd_s = 0;
  int winograd_kernels = 0;
  // class_s: the GPU time by KernelClass (sums to gpu_time() for the op coster's layers).
  std::array<double, kKernelClasses> class_s{};
};

// LayerCost: one layer's forward and backward (backward = input gradient + weight gradient).
struct LayerCost {
  KernelCost forward;
  KernelCost backward;
  // saved_bytes: activations this layer keeps for backward.
  double saved_bytes = 0;
};

// layer_cost costs one layer of `model` in `ctx`.
LayerCost layer_cost(const Model& model, const Layer& layer, const ComputeContext& ctx);

// ModelCost: every layer, and the totals of one forward and one backward.
struct ModelCost {
  std::vector<LayerCost> layers;  // parallel to Model::layers
  double forward_s = 0;
  double backward_s = 0;
  double forward_flops = 0;
  double backward_flops = 0;
  double saved_activation_bytes = 0;
  // input: the batch's copy to the GPU before forward (ComputeContext::input; nothing from the
  // device), and whether the host waits for it (pageable memory: x.to(device) is synchronous).
  KernelCost input{};
  bool input_waits = false;
  // scaler_*: GradScaler's work (ComputeContext::grad_scaler, core/grad_scaler.hpp): the loss
  // scaled before each backward, the unscale pass before the optimizer (none with a fused one),
  // whether the host waits for the GPU before optimizer.step(), and the scale's update after it.
  KernelCost scaler_scale{};
  KernelCost scaler_unscale{};
  KernelCost scaler_update{};
  bool scaler_waits = false;
  // add appends a layer's cost and adds it to the totals.
  void add(const LayerCost& c) {
    forward_s += c.forward.time_s;
    backward_s += c.backward.time_s;
    forward_flops += c.forward.flops;
    backward_flops += c.backward.flops;
    saved_activation_bytes += c.saved_bytes;
    layers.push_back(c);
  }
};

// single_gpu_step_s: one GPU's training step as CUDA runs it (core/launch_queue.hpp): the host
// copies each micro-step's batch (ModelCost::input, waiting for it from pageable memory), issues
// every layer's kernels, forward in order and backward in reverse, `grad_accum` times, then the
// optimizer's (within GradScaler's work when the step has it: ModelCost::scaler_*), while the GPU
// runs those issued before; neither the sum of per-layer maxima of GPU and host time nor the
// larger of their totals.
// With `clip` (ClipStep), clip_grad_norm_ runs between GradScaler's unscale and the optimizer.
struct ClipStep;
double single_gpu_step_s(const ModelCost& cost, const KernelCost& optimizer, int grad_accum = 1,
                         const ModelCost* later = nullptr, const ClipStep* clip = nullptr);
ModelCost model_cost(const Model& model, const ComputeContext& ctx);
// holds_gradient: per parameter, whether a step leaves a .grad on it: it requires one and forward
// uses it (a parameter under unused_parameters keeps grad None: autograd never reaches it and DDP's
// Reducer leaves a globally unused one untouched), so that torch.optim, zero_grad, clip_grad_norm_
// and GradScaler's unscale, which all skip `p.grad is None`, pass over it.
std::vector<bool> holds_gradient(const Model& model);
// trainable_gradients: the bytes and the number of the gradients a step leaves (holds_gradient).
std::pair<double, int> trainable_gradients(const Model& model);

// Optimizer: the update rule; foreach (PyTorch 2.x default) or fused implementation. kNone: no
// optimizer.step() (a benchmark timing forward and backward only; zero_grad still runs).
enum class Optimizer { kSGD, kSGDMomentum, kAdam, kAdamW, kNone };
std::string_view optimizer_name(Optimizer o);
// parse_optimizer reads "sgd", "sgd-momentum", "adam", "adamw", "none"; ConfigError otherwise.
Optimizer parse_optimizer(std::string_view text);
// optimizer_state_bytes_per_param: fp32 state per parameter element (momentum; Adam's m and v).
int optimizer_state_bytes_per_param(Optimizer o);

// half_model: `model` as model.half() or .to(torch.bfloat16) makes it for `p` (bf16 or fp16):
// every floating parameter, buffer and input in that type (ExecutionMode::master_weights);
// ConfigError for fp32 or tf32, naming the key.
void half_model(Model& model, Precision p);

// optimizer_cost: one optimizer step over every trainable parameter (memory-bound).
KernelCost optimizer_cost(const Model& model, Optimizer opt, bool fused, const ComputeContext& ctx);
// OptimizerPasses: what an update costs per fp32 parameter element (bytes read and written over
// all its kernels) and its kernels (per tensor list for foreach, per parameter for single-tensor,
// per chunk of tensors for fused); lerp: the first moment in one lerp_ (PyTorch 2.1 on).
struct OptimizerPasses {
  double bytes_per_element = 0;
  int kernels = 0;
};
OptimizerPasses optimizer_passes(Optimizer opt, OptimizerImpl impl, bool lerp);
// optimizer_cost with the implementation: single-tensor issues each parameter's ops from Python,
// so its host time (KernelCost::host_s) often exceeds the GPU's.
KernelCost optimizer_cost(const Model& model, Optimizer opt, OptimizerImpl impl, const ComputeContext& ctx);

// copy_cost: `tensors` copy kernels moving `bytes` in total (read + write each byte): DDP's
// per-parameter copy into the bucket (with the 1/n scaling in the same kernel), its copy back out,
// DP's flattening of a coalesced group.
// clip_grad_norm_cost: torch.nn.utils.clip_grad_norm_ over the trainable gradients; a part of it:
// the norm (every gradient's norm, the norm of those, the clip coefficient) or the scaling (every
// gradient multiplied by the coefficient). Before PyTorch 1.10 the host waits for the GPU between
// the two (clip_grad_norm_syncs, core/pytorch_version.hpp).
enum class ClipPart { kNorm, kScale };
KernelCost clip_grad_norm_cost(const Model& model, const ComputeContext& ctx);
KernelCost clip_grad_norm_cost(const Model& model, const ComputeContext& ctx, ClipPart part);

// ClipStep: clip_grad_norm_ in one GPU's step, as a training loop runs it after backward:
// scaler.unscale_(optimizer) first where GradScaler would not unscale by itself (a fused optimizer
// takes the scale, but the norm must be of the true gradients: `unscale`, else empty), the norm,
// the host reading it before PyTorch 1.10 (`syncs`: clip_grad_norm_syncs), the scaling.
struct ClipStep {
  KernelCost unscale{};
  KernelCost norm{};
  KernelCost scale{};
  bool syncs = false;
};
ClipStep clip_step(const Model& model, const ComputeContext& ctx, bool syncs);

KernelCost copy_cost(double bytes, int tensors, const ComputeContext& ctx);

// memory_kernel_cost: `kernels` memory-bound kernels touching `bytes` (read plus written).
KernelCost memory_kernel_cost(double bytes, int kernels, const ComputeContext& ctx);
// matmul_kernel_cost: `kernels` fp32 matrix products doing `flops` and touching `bytes` (gradients
// are fp32 under autocast, so PowerSGD's products run at the FP32 rate, or TF32 with tf32).
KernelCost matmul_kernel_cost(double flops, double bytes, int kernels, const ComputeContext& ctx);

}  // namespace gradsync
