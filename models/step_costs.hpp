// step_costs.hpp: a model file as the strategy code in core/ needs it: the StepModel (sizes and
// gradient order) and a CostModel answering with the roofline model of compute_cost.hpp.
//
//   const Model model = load_model("gpt2");
//   const StepModel sm = to_step_model(model, Precision::kBF16, /*seq_len=*/1024);
//   RooflineCostModel costs(model, {&gpu_spec("a100"), Precision::kBF16, 16, 1024}, Optimizer::kAdamW);
//   costs.forward(3, /*batch=*/16).time_s
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <utility>

#include "core/calibration.hpp"
#include "core/cost_model.hpp"
#include "core/step_model.hpp"
#include "models/compute_cost.hpp"
#include "models/model.hpp"

namespace gradsync {

// grad_order_of: the order in which a layer's backward produces its parameters' gradients
// (SEMANTICS.md §2). From the layer's recorded ops: the parameter first used by a later op first,
// and within an op by input position (addmm(bias, x, W^T): bias before weight; convolution,
// layer and batch norm: weight before bias; MultiheadAttention: out_proj before in_proj). Without
// ops: Linear bias before weight, every other kind in registration order.
std::vector<std::size_t> grad_order_of(const Model& model, const Layer& layer);

// module_count: nn.Modules a DataParallel replica copies: the root and every dotted prefix of a
// layer's name ("transformer", "transformer.h", "transformer.h.0", ...).
int module_count(const Model& model);

// to_step_model: sizes, gradient order, buffers and per-sample input/output bytes (outputs in the
// activation precision of `precision`) at sequence length `seq_len` (ignored without one).
StepModel to_step_model(const Model& model, Precision precision, std::optional<std::int64_t> seq_len);

// RooflineCostModel: the CostModel of models/compute_cost.hpp for one GPU type and precision.
// `ctx.batch` is ignored: each call names its batch.
class RooflineCostModel final : public CostModel {
 public:
  RooflineCostModel(const Model& model, const ComputeContext& ctx, Optimizer optimizer, bool fused_optimizer = false,
                    HostCosts host = {});

  ComputeOp forward(std::size_t layer, std::int64_t batch) const override;
  ComputeOp backward(std::size_t layer, std::int64_t batch) const override;
  ComputeOp backward_into(std::size_t layer, std::int64_t batch) const override;
  ComputeOp optimizer() const override;
  ComputeOp clip_grad_norm() const override;
  ComputeOp clip_grad_scale() const override;
  ComputeOp memory(const std::string& name, double bytes, int kernels) const override;
  ComputeOp matmul(const std::string& name, double flops, double bytes, int kernels) const override;
  const HostCosts& host() const override { return host_; }

 private:
  // costs_for: the model's costs at `batch`; `into`: with the gradients defined (backward_into).
  const ModelCost& costs_for(std::int64_t batch, bool into = false) const;
  ComputeOp op(std::string name, OpKind kind, const KernelCost& k) const;

  const Model& model_;
  ComputeContext ctx_;
  Optimizer optimizer_;
  bool fused_;
  HostCosts host_;
  mutable std::mutex mutex_;  // DataParallel's replica threads ask concurrently on real engines
  mutable std::map<std::pair<std::int64_t, bool>, ModelCost> by_batch_;
};

// CalibratedCostModel: the sizes of `base` (FLOPs, bytes, kernels, names) with the times a
// calibration measured: an op of k kernels takes k x the measured time of one kernel of 1/k its
// size, and k x launch_s of host time to issue. Kinds the calibration lacks keep base's time.
class CalibratedCostModel final : public CostModel {
 public:
  CalibratedCostModel(const CostModel& base, const Calibration& calibration) : base_(base), cal_(calibration) {}

  ComputeOp forward(std::size_t layer, std::int64_t batch) const override { return timed(base_.forward(layer, batch)); }
  ComputeOp backward(std::size_t layer, std::int64_t batch) const override {
    return timed(base_.backward(layer, batch));
  }
  ComputeOp backward_into(std::size_t layer, std::int64_t batch) const override {
    return timed(base_.backward_into(layer, batch));
  }
  ComputeOp optimizer() const override { return timed(base_.optimizer()); }
  ComputeOp clip_grad_norm() const override { return timed(base_.clip_grad_norm()); }
  ComputeOp clip_grad_scale() const override { return timed(base_.clip_grad_scale()); }
  ComputeOp memory(const std::string& name, double bytes, int kernels) const override {
    return timed(base_.memory(name, bytes, kernels));
  }
  ComputeOp matmul(const std::string& name, double flops, double bytes, int kernels) const override {
    return timed(base_.matmul(name, flops, bytes, kernels));
  }
  const HostCosts& host() const override { return base_.host(); }

 private:
  ComputeOp timed(ComputeOp op) const;

  const CostModel& base_;
  const Calibration& cal_;
};

}  // namespace gradsync
