// step_costs.cpp: Model -> StepModel, and the roofline CostModel.
#include "models/step_costs.hpp"

#include <algorithm>
#include <set>

#include "core/trace.hpp"
#include "models/contention.hpp"

namespace gradsync {
namespace {

OpKind op_kind(LayerKind k) {
  switch (k) {
    case LayerKind::kLinear:
      return OpKind::kMatmul;
    case LayerKind::kConv2d:
      return OpKind::kConv;
    case LayerKind::kAttention:
      return OpKind::kAttention;
    default:
      return OpKind::kMemory;
  }
}

}  // namespace

std::vector<std::size_t> grad_order_of(const Model& model, const Layer& layer) {
  std::vector<std::size_t> order = layer.params;
  if (layer.op_count == 0) {
    if (layer.kind == LayerKind::kLinear) std::reverse(order.begin(), order.end());
    return order;
  }
  // From the recorded ops: autograd runs the layer's ops backward in reverse, so a parameter whose
  // first use comes later is ready sooner; within one op, AccumulateGrad (the highest priority node)
  // takes a directly used input at once and one behind a transpose (the weight of addmm(bias, x, W^T))
  // after its view's backward: by input position. MultiheadAttention's out_proj before its in_proj.
  const auto first_use = [&](std::size_t p) {
    for (std::size_t i = layer.first_op; i < layer.first_op + layer.op_count; ++i) {
      const Op& op = model.ops[i];
      for (std::size_t k = 0; k < op.in.size(); ++k)
        if (op.in[k].ref.kind == OpRef::Kind::kParameter && op.in[k].ref.index == p) return std::pair{i, k};
    }
    return std::pair{layer.first_op + layer.op_count, std::size_t{0}};  // unused here: last
  };
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const auto [ia, ka] = first_use(a);
    const auto [ib, kb] = first_use(b);
    if (ia != ib) return ia > ib;
    return ka < kb;
  });
  return order;
}

int module_count(const Model& model) {
  std::set<std::string> modules;
  for (const Layer& l : model.layers) {
    for (std::size_t dot = l.name.find('.'); dot != std::string::npos; dot = l.name.find('.', dot + 1))
      modules.insert(l.name.substr(0, dot));
    modules.insert(l.name);
  }
  return static_cast<int>(modules.size()) + 1;  // + the root module
}

StepModel to_step_model(const Model& model, Precision precision, std::optional<std::int64_t> seq_len) {
  const std::int64_t t = model.seq_len(seq_len);
  StepModel s;
  s.name = model.name;
  for (const Parameter& p : model.parameters)
    s.params.push_back({p.name, p.shape, p.dtype, p.requires_grad, p.sparse_grad, false});
  for (std::size_t u : model.unused_parameters) s.params[u].unused = true;
  for (const Buffer& b : model.buffers)
    if (b.registered) s.buffers.push_back({b.name, b.numel(), b.dtype});
  for (const Layer& l : model.layers) s.layers.push_back({l.name, grad_order_of(model, l), l.kind == LayerKind::kLoss});
  s.input_bytes_per_sample = static_cast<double>(model.input_bytes.eval(t));
  s.output_bytes_per_sample =
      static_cast<double>(model.output_elements.eval(t)) * static_cast<double>(activation_bytes(precision));
  s.loss_inside = model.loss_inside;
  s.measured = model.measured.has_value();
  s.modules = module_count(model);
  return s;
}

RooflineCostModel::RooflineCostModel(const Model& model, const ComputeContext& ctx, Optimizer optimizer,
                                     bool fused_optimizer, HostCosts host)
    : model_(model), ctx_(ctx), optimizer_(optimizer), fused_(fused_optimizer), host_(host) {}

const ModelCost& RooflineCostModel::costs_for(std::int64_t batch, bool into) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = by_batch_.find({batch, into});
  if (it == by_batch_.end()) {
    ComputeContext c = ctx_;
    c.batch = batch;
    if (into) c.grads_defined = true;
    it = by_batch_.emplace(std::pair{batch, into}, model_cost(model_, c)).first;
  }
  return it->second;
}

ComputeOp RooflineCostModel::op(std::string name, OpKind kind, const KernelCost& k) const {
  ComputeOp o;
  o.name = std::move(name);
  o.kind = kind;
  o.flops = k.flops;
  o.bytes = k.bytes;
  o.kernels = k.kernels;
  o.time_s = k.time_s;
  o.host_s = k.host_time(ctx_.efficiency.launch_s);
  o.load = k.load;
  if (o.load.gpu_s <= 0 && o.time_s > 0) {
    // A cost without a per-kernel breakdown: memory-bound kernels stream at the memory
    // efficiency; the others are SM-bound and slow with the SMs lost.
    const double gpu = k.gpu_time();
    o.load.gpu_s = gpu;
    o.load.hbm_demand = ctx_.efficiency.memory;
    if (kind == OpKind::kMemory) {
      o.load.hbm_s = gpu;
    } else if (ctx_.gpu != nullptr) {
      const SmSharing sharing = sm_sharing(*ctx_.gpu);
      o.load.sm_s = gpu;
      o.load.sm_held_s = gpu * linear_stretch(sharing.sms, held_sms(sharing, ctx_.nccl_blocks));
    }
  }
  return o;
}

ComputeOp RooflineCostModel::forward(std::size_t layer, std::int64_t batch) const {
  const Layer& l = model_.layers[layer];
  return op(forward_event(l.name), op_kind(l.kind), costs_for(batch).layers[layer].forward);
}

ComputeOp RooflineCostModel::backward(std::size_t layer, std::int64_t batch) const {
  const Layer& l = model_.layers[layer];
  return op(backward_event(l.name), op_kind(l.kind), costs_for(batch).layers[layer].backward);
}

ComputeOp RooflineCostModel::backward_into(std::size_t layer, std::int64_t batch) const {
  const Layer& l = model_.layers[layer];
  return op(backward_event(l.name), op_kind(l.kind), costs_for(batch, true).layers[layer].backward);
}

ComputeOp RooflineCostModel::optimizer() const {
  return op("optimizer", OpKind::kMemory,
            optimizer_cost(model_, optimizer_, fused_ ? OptimizerImpl::kFused : ctx_.optimizer_impl, ctx_));
}

ComputeOp RooflineCostModel::clip_grad_norm() const {
  return op("clip_grad_norm", OpKind::kMemory, clip_grad_norm_cost(model_, ctx_, ClipPart::kNorm));
}

ComputeOp RooflineCostModel::clip_grad_scale() const {
  return op("clip_grad_norm:scale", OpKind::kMemory, clip_grad_norm_cost(model_, ctx_, ClipPart::kScale));
}

ComputeOp RooflineCostModel::memory(const std::string& name, double bytes, int kernels) const {
  return op(name, OpKind::kMemory, memory_kernel_cost(bytes, kernels, ctx_));
}

ComputeOp RooflineCostModel::matmul(const std::string& name, double flops, double bytes, int kernels) const {
  return op(name, OpKind::kMatmul, matmul_kernel_cost(flops, bytes, kernels, ctx_));
}

ComputeOp CalibratedCostModel::timed(ComputeOp op) const {
  const int k = std::max(1, op.kernels);
  const auto one = cal_.compute_time(op.kind, op.flops / k, op.bytes / k);
  if (!one) return op;
  // The measured time keeps the model's breakdown for contention, scaled to it.
  const double scale = op.time_s > 0 ? *one * k / op.time_s : 0.0;
  op.time_s = *one * k;
  op.host_s = cal_.launch_s * k;
  op.load.gpu_s *= scale;
  op.load.sm_s *= scale;
  op.load.sm_held_s *= scale;
  op.load.hbm_s *= scale;
  return op;
}

}  // namespace gradsync
