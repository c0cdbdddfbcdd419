// grad_scaler.hpp: the work torch.cuda.amp.GradScaler (torch.amp.GradScaler from 2.3) adds to a
// training step, as torch/amp/grad_scaler.py runs it; one definition for the simulator's steps
// (core/ddp_step.cpp, core/dp_step.cpp) and one GPU's (models/compute_cost.cpp).
//
//   scaler.scale(loss).backward()  -> one kernel (loss * scale) before each backward
//   scaler.step(optimizer)         -> unscale_: inv_scale = scale.double().reciprocal().float() (3
//                                     kernels), found_inf = torch.full((), 0.) (1), then
//                                     _amp_foreach_non_finite_check_and_unscale_ over the gradients
//                                     (read and written once; one launch per 110 tensors, depth 1:
//                                     ATen/native/cuda/MultiTensorApply.cuh); then
//                                     `if not sum(v.item() for v in found_inf_per_device...)`: the
//                                     host waits for the GPU before it issues optimizer.step().
//                                     A fused optimizer (Adam/AdamW(fused=True):
//                                     _step_supports_amp_scaling) takes grad_scale and found_inf
//                                     itself: no unscale pass and no wait.
//   scaler.update()                -> _amp_update_scale_ (1 kernel)
//
// Autocast in fp16 needs it (fp16's range underflows small gradients), so it is on by default
// there; bf16 autocast runs without one, and a 16-bit model (mixed_precision master-weights: apex
// amp O2) scales the loss through its own optimizer wrapper.
//
//   GradScalerWork w = grad_scaler_work(4.0 * 124e6, 148);  // GPT-2 124M's fp32 gradients
//   w.unscale_bytes == 992e6; w.unscale_kernels == 4 + 2
#pragma once

#include <string>

namespace gradsync {

// GradScalerOptions: whether a driver runs the step under GradScaler, and whether its optimizer
// is fused (then no unscale pass of its own and no wait: the optimizer takes the scale).
struct GradScalerOptions {
  bool on = false;
  bool fused = false;
  // unscales: the pass runs (scaler.step's own, or scaler.unscale_ before clip_grad_norm_, which
  // a fused optimizer needs too); waits: the host waits for the GPU before optimizer.step().
  bool unscales(bool clip_grad_norm) const { return on && (!fused || clip_grad_norm); }
  bool waits() const { return on && !fused; }
};

struct GradScalerWork {
  double unscale_bytes = 0;  // every gradient read and written once
  int unscale_kernels = 0;   // inv_scale (3), found_inf (1), the foreach launches
};

// kScalarBytes: what the scale and update kernels touch (one-element tensors).
inline constexpr double kGradScalerScalarBytes = 8;

inline GradScalerWork grad_scaler_work(double gradient_bytes, int gradient_tensors) {
  return {2 * gradient_bytes, 4 + (gradient_tensors + 109) / 110};
}

}  // namespace gradsync
