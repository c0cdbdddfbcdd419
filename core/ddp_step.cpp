// ddp_step.cpp: DDP's forward, backward with the Reducer, and optimizer on one rank.
#include "core/ddp_step.hpp"

#include <fmt/format.h>

#include "core/coalesce.hpp"
#include "core/error.hpp"
#include "core/trace.hpp"

namespace gradsync {

DdpStep::DdpStep(const StepModel& model, const CostModel& costs, const DdpStepOptions& opts, std::int64_t batch,
                 Host& host, Device& dev, ProcessGroup& pg)
    : model_(model),
      costs_(costs),
      opts_(opts),
      batch_(batch),
      host_(host),
      dev_(dev),
      pg_(pg),
      reducer_(model, opts.ddp, dev, pg, host, costs),
      ready_layer_(ready_layer(model)) {
  // The autograd graph find_unused_parameters walks: one node per kernel-launching op of the
  // forward, plus one AccumulateGrad node per parameter.
  for (std::size_t l = 0; l < model.layers.size(); ++l) graph_nodes_ += costs.forward(l, batch).kernels;
  graph_nodes_ += static_cast<std::int64_t>(model.params.size());
}

void DdpStep::construct() {
  // _verify_param_shape_across_processes: allgather of the parameter count (int64), then a
  // broadcast of each parameter's dims, sizes and strides (int64).
  pg_.allgather({"allgather:param_count", 8, DType::kInt64, -1})->wait();
  Bytes meta = 0;
  for (const ParamInfo& p : model_.params) meta += 8 * (1 + 2 * p.shape.size());
  pg_.broadcast({"broadcast:param_shapes", meta, DType::kInt64, -1}, 0)->wait();
  // _sync_module_states: parameters and buffers from rank 0, 250 MiB buckets.
  std::vector<CoalesceTensor> states;
  for (const ParamInfo& p : model_.params) states.push_back({p.bytes(), p.dtype});
  for (const BufferInfo& b : model_.buffers) states.push_back({b.bytes(), b.dtype});
  broadcast_coalesced(states, kDdpBroadcastBucketBytes, "broadcast:module_states", dev_, pg_, costs_);
  dev_.synchronize();
}

void DdpStep::forward(bool sync) {
  reducer_.prepare_for_forward(sync);
  if (opts_.ddp.broadcast_buffers && !model_.buffers.empty() && previous_synced_) {
    std::vector<CoalesceTensor> buffers;
    for (const BufferInfo& b : model_.buffers) buffers.push_back({b.bytes(), b.dtype});
    broadcast_coalesced(buffers, kDdpBroadcastBucketBytes, "broadcast:buffers", dev_, pg_, costs_);
  }
  // The local batch arrives from the host (x.to(device)) on the current stream before the first
  // layer reads it; from pageable memory the host waits for it (InputLocation).
  const auto input = static_cast<Bytes>(model_.input_bytes_per_sample * static_cast<double>(batch_));
  if (input > 0 && opts_.input != InputLocation::kDevice) {
    WorkPtr h2d = dev_.copy_from_host({"h2d:input", input}, Stream::kCompute);
    if (opts_.input == InputLocation::kPageable) h2d->wait();
  }
  std::vector<ComputeOp> ops;
  for (std::size_t l = 0; l < model_.layers.size(); ++l) ops.push_back(costs_.forward(l, batch_));
  if (model_.adds_loss())
    ops.push_back(implicit_loss(costs_, model_.output_bytes_per_sample * static_cast<double>(batch_), false));
  issue(ops, sync, "fwd");
  previous_synced_ = sync;
  if (sync) {
    reducer_.prepare_for_backward();
    if (opts_.ddp.buckets.find_unused_parameters && !opts_.ddp.buckets.static_graph)
      host_.run({"ddp:find_unused", static_cast<double>(graph_nodes_) * costs_.host().graph_node_s, false});
  }
}

void DdpStep::issue(const std::vector<ComputeOp>& ops, bool sync, const char* pass) {
  if (sync) {
    for (const ComputeOp& op : ops) dev_.compute(op);
    return;
  }
  // Under no_sync nothing runs between the layers' kernels (the Reducer's hooks return at once:
  // expect_autograd_hooks_ is false), so the engine may run the pass as one piece of work.
  dev_.compute_run(ops, fmt::format("{}:micro-step {} of {} (no_sync)", pass, micro_ + 1, opts_.grad_accum));
}

ComputeOp DdpStep::layer_backward(std::size_t layer) const {
  // A later micro-step adds into the gradients the earlier ones left (AccumulateGrad).
  return micro_ > 0 ? costs_.backward_into(layer, batch_) : costs_.backward(layer, batch_);
}

void DdpStep::backward() {
  if (!previous_synced_) {
    std::vector<ComputeOp> ops;
    if (model_.adds_loss())
      ops.push_back(implicit_loss(costs_, model_.output_bytes_per_sample * static_cast<double>(batch_), true));
    for (std::size_t i = model_.layers.size(); i-- > 0;) ops.push_back(layer_backward(i));
    issue(ops, false, "bwd");
    return;
  }
  if (model_.adds_loss())
    dev_.compute(implicit_loss(costs_, model_.output_bytes_per_sample * static_cast<double>(batch_), true));
  for (std::size_t i = model_.layers.size(); i-- > 0;) {
    dev_.compute(layer_backward(i));
    for (std::size_t p : model_.layers[i].grad_order)
      if (ready_layer_[p] == static_cast<int>(i)) reducer_.autograd_hook(p);
  }
  reducer_.backward_done();
}

void DdpStep::run_iteration(int iteration) {
  host_.begin_iteration(iteration);
  for (int micro = 0; micro < opts_.grad_accum; ++micro) {
    micro_ = micro;
    const bool sync = micro == opts_.grad_accum - 1;
    try {
      forward(sync);
    } catch (const RuntimeError& e) {
      // The Reducer's own message (PyTorch's words), said of which model and when, as `buckets` says it.
      throw RuntimeError(fmt::format("model {}: DDP raises at iteration {}: {}", model_.name, iteration, e.what()));
    }
    if (opts_.scaler.on) dev_.compute(costs_.memory("grad_scaler:scale", kGradScalerScalarBytes, 1));
    backward();
  }
  if (opts_.scaler.unscales(opts_.clip_grad_norm)) {  // on the reduced gradients, before clipping
    const GradScalerWork w =
        grad_scaler_work(static_cast<double>(model_.gradient_bytes()), static_cast<int>(model_.trainable().size()));
    dev_.compute(costs_.memory("grad_scaler:unscale", w.unscale_bytes, w.unscale_kernels));
  }
  if (opts_.clip_grad_norm) {  // on the reduced gradients
    dev_.compute(costs_.clip_grad_norm());
    if (opts_.clip_syncs) dev_.synchronize();  // `if clip_coef < 1:` reads the GPU's result
    dev_.compute(costs_.clip_grad_scale());
  }
  if (opts_.scaler.waits()) dev_.synchronize();  // found_inf's .item() before optimizer.step()
  // optimizer none (a forward and backward benchmark): no optimizer step, nothing on the GPU.
  if (const ComputeOp step = costs_.optimizer(); step.kernels > 0 || step.time_s > 0) dev_.compute(step);
  if (opts_.scaler.on) dev_.compute(costs_.memory("grad_scaler:update", kGradScalerScalarBytes, 1));
  dev_.synchronize();
  host_.end_iteration(iteration);
}

}  // namespace gradsync
