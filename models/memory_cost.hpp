// memory_cost.hpp: peak memory of one GPU in a DP or DDP step, and the out-of-memory verdict.
//
//   MemoryOptions o{.strategy = Strategy::kDDP, .optimizer = Optimizer::kAdamW, ...};
//   const MemoryBreakdown m = memory_cost(model, ctx, o);
//   m.total_bytes, m.oom
//
// Counted: parameters (fp32; under autocast also the low-precision weight copies autocast caches
// for backward), gradients (fp32), optimizer state, activations saved for backward, DDP's buckets
// (unless gradient_as_bucket_view), DP's GPU0 extras (gathered outputs and their gradient, the
// only optimizer state), the loss's working tensor and the CUDA context. A sum of what is alive
// at the start of backward (every saved tensor, the loss's gradient over the output), with the
// gradients and buckets of its end: the usual peak of a training step, or a little above.
#pragma once

#include <cstdint>

#include "core/strategy.hpp"
#include "core/units.hpp"
#include "models/compute_cost.hpp"

namespace gradsync {

// MemoryOptions: what decides memory besides the model and the per-GPU batch.
struct MemoryOptions {
  Strategy strategy = Strategy::kDDP;
  Optimizer optimizer = Optimizer::kAdamW;
  bool gradient_as_bucket_view = false;  // DDP: .grad views the bucket, one gradient copy less
  bool dp_gpu0 = true;                   // DP: costing GPU0 (hub) rather than a replica
  std::int64_t dp_global_batch = 0;      // DP: samples gathered on GPU0 (0: ctx.batch)
  // dp_one_device: DataParallel over a single device calls the module itself (data_parallel.py:
  // `if len(self.device_ids) == 1: return self.module(...)`): no replica, no gathered output, no
  // broadcast or reduce buffers; GPU0 holds what a plain single-GPU step holds.
  bool dp_one_device = false;
  double hook_state_bytes = 0;  // DDP: what the comm hook keeps (powersgd_state_bytes)
};

// kCudaContextBytes 500 MiB: the CUDA context, cuBLAS/cuDNN workspaces and allocator slack that
// torch.cuda.max_memory_allocated() does not show (typically 300-600 MiB on A100/H100).
inline constexpr Bytes kCudaContextBytes = 500 * kMiB;

// MemoryBreakdown: bytes by purpose, their total, and the verdict against the GPU's capacity.
struct MemoryBreakdown {
  double parameters = 0;
  double gradients = 0;
  double optimizer_state = 0;
  double activations = 0;
  double buckets = 0;
  double outputs = 0;  // DP GPU0: gathered outputs and their gradient
  // inputs: DP GPU0: the rest of the global batch beyond its own chunk. x.to(gpu0) made one tensor
  // of the whole batch and Scatter's chunk for GPU0 is a view of it (Tensor.to to the same device
  // copies nothing), so the whole batch stays allocated while the step holds x; GPU0's own chunk is
  // already among the activations (the first layer saves its input).
  double inputs = 0;
  // loss: the loss's float32 working tensor over the output (cross_entropy's log-softmax input,
  // then its gradient: batch x output elements x 4 bytes; the model's 16-bit type under
  // master weights), alive beside every saved tensor as backward starts. GPT-2 at B=16, T=1024:
  // 3.3 GB. Where the loss runs: every DDP rank; under DP every replica when the model computes
  // it inside forward (GPT-2's), else GPU0 over the gathered batch.
  double loss = 0;
  double hook_state = 0;  // DDP: the comm hook's state (PowerSGD's error feedback, P and Q)
  double context = 0;
  // optimizer_temporaries: what optimizer.step() allocates beside its state while it runs
  // (optimizer_temporary_bytes). Alive after backward has freed the saved tensors, so the step's
  // peak is the larger of backward's (the sum above) and optimizer.step()'s (optimizer_peak).
  double optimizer_temporaries = 0;
  double optimizer_peak = 0;       // parameters, gradients, state, buckets, hook state, inputs, context, temporaries
  bool peak_in_optimizer = false;  // total is optimizer_peak
  double total = 0;
  double capacity = 0;
  bool oom = false;
};

MemoryBreakdown memory_cost(const Model& model, const ComputeContext& ctx, const MemoryOptions& opts);

// optimizer_temporary_bytes: the largest set of tensors optimizer.step() allocates at once, for
// Adam and AdamW whose moments (each `moment_bytes` in all, the largest `largest_moment` bytes) are
// updated by `impl` (torch/optim/adam.py, adamw.py):
//  - foreach from PyTorch 2.0 (`foreach_default`): _multi_tensor_adam's exp_avg_sq_sqrt =
//    torch._foreach_sqrt(device_exp_avg_sqs), a copy of the second moments of every parameter of a
//    device and dtype, divided and added to in place (torch.optim's docs: foreach "uses ~
//    sizeof(params) more peak memory"): moment_bytes;
//  - foreach before 2.0 (asked for explicitly): exp_avg_sq_sqrt and denom = torch._foreach_add(
//    exp_avg_sq_sqrt, eps), both alive: 2 x moment_bytes;
//  - the single-tensor loop: denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps), two
//    tensors like one parameter's moment alive at once: 2 x largest_moment;
//  - fused: none (one kernel updates in place).
// SGD's momentum buffers are updated in place (its weight decay, which gradsync does not model,
// would add a copy of the gradients under foreach); other optimizers: none.
double optimizer_temporary_bytes(Optimizer o, OptimizerImpl impl, bool foreach_default, double moment_bytes,
                                 double largest_moment);

}  // namespace gradsync
