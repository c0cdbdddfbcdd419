// dp_step.cpp: DataParallel's nine phases over a single-process group of local GPUs.
#include "core/dp_step.hpp"

#include <fmt/format.h>

#include "core/coalesce.hpp"
#include "core/error.hpp"

namespace gradsync {
namespace {

// kLossBytes 4: one fp32 loss per replica when forward returns the loss.
constexpr Bytes kLossBytes = 4;

Bytes scaled(double per_sample, std::int64_t samples) {
  return static_cast<Bytes>(per_sample * static_cast<double>(samples));
}

}  // namespace

int DpStep::replicas(std::int64_t global_batch, int devices) {
  const std::int64_t chunk = (global_batch + devices - 1) / devices;
  return static_cast<int>((global_batch + chunk - 1) / chunk);
}

std::vector<std::int64_t> DpStep::chunk_sizes(std::int64_t global_batch, int devices) {
  const std::int64_t chunk = (global_batch + devices - 1) / devices;
  std::vector<std::int64_t> sizes;
  for (std::int64_t left = global_batch; left > 0; left -= chunk) sizes.push_back(std::min(chunk, left));
  return sizes;
}

DpStep::DpStep(const StepModel& model, const CostModel& costs, const DpStepOptions& opts, std::int64_t global_batch,
               Host& host, std::vector<Device*> devices, ProcessGroup& group)
    : model_(model),
      costs_(costs),
      opts_(opts),
      global_batch_(global_batch),
      host_(host),
      devices_(std::move(devices)),
      group_(group) {
  if (global_batch < 1) throw ConfigError(fmt::format("DataParallel: batch {} must be >= 1", global_batch));
  chunks_ = chunk_sizes(global_batch, static_cast<int>(devices_.size()));
  if (group_.size() != static_cast<int>(chunks_.size()))
    throw RuntimeError(fmt::format("DataParallel: the local group spans {} devices, the batch of {} needs {}",
                                   group_.size(), global_batch, chunks_.size()));
}

void DpStep::micro_step(int micro) {
  const int m = static_cast<int>(chunks_.size());
  Device& gpu0 = *devices_[0];
  const bool loss_on_gpu0 = !model_.loss_inside;
  auto replica_layer = [&](std::size_t l) { return !(loss_on_gpu0 && model_.layers[l].loss); };
  // last[i]: the latest compute work issued on device i, what a copy out of it must wait for.
  std::vector<WorkPtr> last(static_cast<std::size_t>(m));
  auto compute = [&](int i, const ComputeOp& op) { last[static_cast<std::size_t>(i)] = devices_[i]->compute(op); };

  // 1. Scatter the inputs.
  if (opts_.input == DpInput::kGpu0) {
    // x.to(gpu0) on the current stream; from pageable memory the host waits for it (InputLocation).
    const Bytes input = scaled(model_.input_bytes_per_sample, global_batch_);
    if (input > 0 && opts_.location != InputLocation::kDevice) {
      WorkPtr h2d = gpu0.copy_from_host({"h2d:input", input}, Stream::kCompute);
      if (opts_.location == InputLocation::kPageable) h2d->wait();
    }
    for (int i = 1; i < m; ++i) {
      // A peer copy runs on the source device's current stream and both sides wait for it
      // (ATen copy_device_to_device): GPU0 computes only after its copies out.
      WorkPtr w = gpu0.copy_to(*devices_[i], {"dp:scatter", scaled(model_.input_bytes_per_sample, chunks_[i])});
      devices_[i]->stream_wait(Stream::kCompute, *w);
      gpu0.stream_wait(Stream::kCompute, *w);
    }
  } else {
    for (int i = 0; i < m; ++i) {
      WorkPtr w = devices_[i]->copy_from_host({"dp:scatter", scaled(model_.input_bytes_per_sample, chunks_[i])});
      devices_[i]->stream_wait(Stream::kCompute, *w);
    }
  }

  // 2. Replicate: parameters then buffers broadcast from GPU0, then the modules copied on the host
  // (replicate.py: _broadcast_coalesced_reshape of the parameters and of the buffers come before
  // the _replicate_for_data_parallel loop; the broadcasts are queued, not waited for, so the GPUs
  // broadcast while the host copies modules).
  if (m > 1) {
    auto broadcast_all = [&](const std::vector<CoalesceTensor>& tensors) {
      for (const auto& group : coalesce_reaching(tensors, kDataParallelBufferBytes)) {
        const Bytes bytes = group_bytes(tensors, group);
        host_.run({"dp:coalesce", costs_.host().coalesce_s, true});
        gpu0.compute(costs_.memory("dp:flatten", 2.0 * static_cast<double>(bytes), 1));
        WorkPtr broadcast = group_.broadcast({"dp:replicate", bytes, tensors[group.front()].dtype, -1}, 0);
        // torch.cuda.comm runs NCCL on the devices' current streams: nothing overlaps it.
        for (int i = 0; i < m; ++i) devices_[i]->stream_wait(Stream::kCompute, *broadcast);
      }
    };
    std::vector<CoalesceTensor> params;
    for (const ParamInfo& p : model_.params) params.push_back({p.bytes(), p.dtype});
    broadcast_all(params);
    std::vector<CoalesceTensor> buffers;
    for (const BufferInfo& b : model_.buffers) buffers.push_back({b.bytes(), b.dtype});
    broadcast_all(buffers);
    host_.run({"dp:replicate", static_cast<double>(model_.modules) * m * costs_.host().module_copy_s, true});
  }

  // 3. Parallel apply: one Python thread per replica.
  host_.parallel(m, [&](int i) {
    if (m > 1) host_.run({"dp:thread", costs_.host().thread_start_s, true});
    for (std::size_t l = 0; l < model_.layers.size(); ++l) {
      if (!replica_layer(l)) continue;
      ComputeOp op = costs_.forward(l, chunks_[i]);
      if (m > 1 && op.host_s > 0) {
        // The Python share of the launches holds the GIL: the replicas' threads take turns.
        const double python = op.host_s * costs_.host().python_share;
        host_.run({"dp:python", python, true});
        op.host_s -= python;
      }
      compute(i, op);
    }
  });

  // 4. Gather the outputs (and the per-replica losses) into one tensor on GPU0.
  auto output_bytes = [&](int i) {
    return scaled(model_.output_bytes_per_sample, chunks_[i]) + (model_.loss_inside ? kLossBytes : 0);
  };
  if (m > 1) {
    compute(0, costs_.memory("dp:gather_local", 2.0 * static_cast<double>(output_bytes(0)), 1));
    // One copy at a time: comm.gather copies chunk i with copy_(non_blocking), and a copy between
    // devices (ATen copy_device_to_device) first makes the source's stream wait for the
    // destination's current stream (dst_ready), which waits for the copy before it (src_ready):
    // copy i starts once GPU0 has finished its forward and copy i-1 has landed.
    WorkPtr gpu0_point = last[0];
    for (int i = 1; i < m; ++i) {
      Device& d = *devices_[i];
      if (last[static_cast<std::size_t>(i)]) d.stream_wait(Stream::kCopy, *last[static_cast<std::size_t>(i)]);
      if (gpu0_point) d.stream_wait(Stream::kCopy, *gpu0_point);
      WorkPtr w = d.copy_to(gpu0, {"dp:gather", output_bytes(i)});
      gpu0.stream_wait(Stream::kCompute, *w);
      d.stream_wait(Stream::kCompute, *w);
      gpu0_point = w;
    }
  }

  // 5. Loss on GPU0, and its backward.
  // scaler.scale(loss) is a forward op: after the loss, before its backward, on GPU0.
  const auto scale_loss = [&] {
    if (opts_.scaler.on) compute(0, costs_.memory("grad_scaler:scale", kGradScalerScalarBytes, 1));
  };
  if (loss_on_gpu0 && model_.adds_loss()) {
    const double logits = model_.output_bytes_per_sample * static_cast<double>(global_batch_);
    compute(0, implicit_loss(costs_, logits, false));
    scale_loss();
    compute(0, implicit_loss(costs_, logits, true));
  } else if (loss_on_gpu0) {
    for (std::size_t l = 0; l < model_.layers.size(); ++l)
      if (model_.layers[l].loss) compute(0, costs_.forward(l, global_batch_));
    scale_loss();
    for (std::size_t l = model_.layers.size(); l-- > 0;)
      if (model_.layers[l].loss) compute(0, costs_.backward(l, global_batch_));
  } else {
    if (m > 1) compute(0, costs_.memory("dp:loss_mean", 2.0 * static_cast<double>(kLossBytes) * m, 2));
    scale_loss();
  }

  // 6. Scatter the output gradient back (the loss's only, when forward computed it).
  if (m > 1) {
    for (int i = 1; i < m; ++i) {
      const Bytes bytes = model_.loss_inside ? kLossBytes : scaled(model_.output_bytes_per_sample, chunks_[i]);
      if (last[0]) gpu0.stream_wait(Stream::kCopy, *last[0]);
      WorkPtr w = gpu0.copy_to(*devices_[i], {"dp:scatter_grad", bytes});
      devices_[i]->stream_wait(Stream::kCompute, *w);
      gpu0.stream_wait(Stream::kCompute, *w);
    }
  }

  // 7. Backward on every replica, one autograd worker thread per device.
  host_.parallel(m, [&](int i) {
    for (std::size_t l = model_.layers.size(); l-- > 0;)
      if (replica_layer(l))
        compute(i, micro > 0 ? costs_.backward_into(l, chunks_[i]) : costs_.backward(l, chunks_[i]));
  });

  // 8. Reduce the gradients to GPU0, chunk by chunk, each flattened on every GPU first.
  if (m > 1) {
    std::vector<CoalesceTensor> grads;
    for (std::size_t p : model_.trainable()) grads.push_back({model_.params[p].bytes(), model_.params[p].dtype});
    for (const auto& chunk : coalesce_before_exceeding(grads, kDataParallelBufferBytes)) {
      const Bytes bytes = group_bytes(grads, chunk);
      host_.run({"dp:coalesce", costs_.host().coalesce_s, true});
      for (int i = 0; i < m; ++i)
        devices_[i]->compute(costs_.memory("dp:flatten", 2.0 * static_cast<double>(bytes), 1));
      WorkPtr reduce = group_.reduce({"dp:reduce", bytes, grads[chunk.front()].dtype, -1}, 0);
      for (int i = 0; i < m; ++i) devices_[i]->stream_wait(Stream::kCompute, *reduce);
    }
    if (opts_.accumulate_grads || micro > 0) {
      // Broadcast's backward hands each parameter its reduced gradient: variable_grad += new_grad
      // (AccumulateGrad), read twice and written once.
      double bytes = 0;
      for (const CoalesceTensor& g : grads) bytes += 3.0 * static_cast<double>(g.bytes);
      devices_[0]->compute(costs_.memory("dp:accumulate_grad", bytes, static_cast<int>(grads.size())));
    }
  }
}

void DpStep::run_iteration(int iteration) {
  host_.begin_iteration(iteration);
  for (int micro = 0; micro < opts_.grad_accum; ++micro) micro_step(micro);
  // 9. The optimizer on GPU0 only (after clip_grad_norm_ of the module's gradients, when asked).
  if (opts_.scaler.unscales(opts_.clip_grad_norm)) {  // the module's gradients, on GPU0
    const GradScalerWork w =
        grad_scaler_work(static_cast<double>(model_.gradient_bytes()), static_cast<int>(model_.trainable().size()));
    devices_[0]->compute(costs_.memory("grad_scaler:unscale", w.unscale_bytes, w.unscale_kernels));
  }
  if (opts_.clip_grad_norm) {
    devices_[0]->compute(costs_.clip_grad_norm());
    if (opts_.clip_syncs) devices_[0]->synchronize();  // `if clip_coef < 1:` reads GPU0's result
    devices_[0]->compute(costs_.clip_grad_scale());
  }
  if (opts_.scaler.waits()) devices_[0]->synchronize();  // found_inf's .item() before optimizer.step()
  // optimizer none (a forward and backward benchmark): no optimizer step, nothing on the GPU.
  if (const ComputeOp step = costs_.optimizer(); step.kernels > 0 || step.time_s > 0) devices_[0]->compute(step);
  if (opts_.scaler.on) devices_[0]->compute(costs_.memory("grad_scaler:update", kGradScalerScalarBytes, 1));
  for (Device* d : devices_) d->synchronize();
  host_.end_iteration(iteration);
}

}  // namespace gradsync
