// step_time.cpp: one GPU's step as CUDA runs it (compute_cost.hpp single_gpu_step_s), and the
// clip_grad_norm_ work between its backward and its optimizer (clip_grad_norm_cost, clip_step).
#include <algorithm>

#include "core/grad_scaler.hpp"
#include "core/launch_queue.hpp"
#include "models/compute_cost.hpp"
#include "models/op_cost.hpp"

namespace gradsync {

KernelCost clip_grad_norm_cost(const Model& model, const ComputeContext& ctx) {
  const KernelCost norm = clip_grad_norm_cost(model, ctx, ClipPart::kNorm);
  const KernelCost scale = clip_grad_norm_cost(model, ctx, ClipPart::kScale);
  KernelCost k{norm.flops + scale.flops, norm.bytes + scale.bytes, norm.kernels + scale.kernels, 0};
  k.time_s = norm.time_s + scale.time_s;
  k.gpu_s = norm.gpu_time() + scale.gpu_time();
  k.host_s = (norm.host_s >= 0 && scale.host_s >= 0) ? norm.host_s + scale.host_s : -1;
  return k;
}

KernelCost clip_grad_norm_cost(const Model& model, const ComputeContext& ctx, ClipPart part) {
  const auto [bytes, tensors] = trainable_gradients(model);
  // torch/nn/utils/clip_grad.py: the norm of every gradient, the norm of those norms (stack,
  // vector_norm), clip_coef = max_norm / (total + 1e-6) clamped to 1 (add, div, clamp), then every
  // gradient multiplied by it: the gradients are read twice and written once. With foreach (PyTorch
  // 2.x) the per-gradient norms and products are _foreach_norm and _foreach_mul_, one launch per
  // 110 tensors (depth 1: ATen/native/cuda/MultiTensorApply.cuh depth_to_max_tensors[0]); before,
  // one norm and one mul_ kernel per gradient, each issued from Python.
  const bool foreach = ctx.foreach;
  const int per_list = foreach ? (tensors + 109) / 110 : tensors;
  // The norm reads every gradient (plus 5 scalar kernels); the scaling reads and writes each.
  KernelCost k = part == ClipPart::kNorm ? memory_kernel_cost(bytes, per_list + 5, ctx)
                                         : memory_kernel_cost(2 * bytes, per_list, ctx);
  if (!foreach) {
    const KernelRates r = rates_for(*ctx.gpu);
    k.host_s = k.kernels * r.host.loop_op_s;
    k.gpu_s = k.time_s;
    k.time_s = std::max(k.gpu_s, k.host_s);
  }
  return k;
}

ClipStep clip_step(const Model& model, const ComputeContext& ctx, bool syncs) {
  ClipStep c;
  // GradScaler unscales by itself unless the optimizer is fused (core/grad_scaler.hpp); clipping
  // needs the true gradients either way, so scaler.unscale_ runs the same pass for a fused one.
  const GradScalerOptions scaler{ctx.grad_scaler && !model.measured, ctx.optimizer_impl == OptimizerImpl::kFused};
  if (scaler.unscales(true) && !scaler.unscales(false)) {
    const auto [bytes, tensors] = trainable_gradients(model);
    const GradScalerWork w = grad_scaler_work(bytes, tensors);
    c.unscale = memory_kernel_cost(w.unscale_bytes, w.unscale_kernels, ctx);
  }
  c.norm = clip_grad_norm_cost(model, ctx, ClipPart::kNorm);
  c.scale = clip_grad_norm_cost(model, ctx, ClipPart::kScale);
  c.syncs = syncs;
  return c;
}

double single_gpu_step_s(const ModelCost& cost, const KernelCost& optimizer, int grad_accum, const ModelCost* later,
                         const ClipStep* clip) {
  LaunchQueue q;
  const auto issue = [&q](const KernelCost& k) {
    if (k.kernels > 0 || k.time_s > 0) q.issue(std::max(0.0, k.host_s), k.gpu_time(), k.kernels);
  };
  for (int step = 0; step < std::max(1, grad_accum); ++step) {
    const ModelCost& c = step > 0 && later != nullptr ? *later : cost;
    issue(c.input);
    if (c.input_waits) q.wait();
    for (const LayerCost& l : c.layers) issue(l.forward);
    issue(c.scaler_scale);
    for (auto l = c.layers.rbegin(); l != c.layers.rend(); ++l) issue(l->backward);
  }
  issue(cost.scaler_unscale);
  if (clip != nullptr) {
    issue(clip->unscale);
    issue(clip->norm);
    if (clip->syncs) q.wait();  // `if clip_coef < 1:` reads the norm on the host
    issue(clip->scale);
  }
  if (cost.scaler_waits) q.wait();  // found_inf's .item() before optimizer.step()
  issue(optimizer);
  issue(cost.scaler_update);
  return q.end();
}

}  // namespace gradsync
