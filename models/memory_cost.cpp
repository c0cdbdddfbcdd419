// memory_cost.cpp: per-GPU peak memory for DP and DDP (see memory_cost.hpp).
#include "models/memory_cost.hpp"

#include <algorithm>
#include <vector>

namespace gradsync {

MemoryBreakdown memory_cost(const Model& model, const ComputeContext& ctx, const MemoryOptions& opts) {
  MemoryBreakdown m;
  // Optimizer state: `slots` tensors like each trainable parameter, in its own dtype (torch.optim's
  // zeros_like(p)), or float32 for the master copies of a 16-bit model.
  const double slots = optimizer_state_bytes_per_param(opts.optimizer) / 4.0;
  // A parameter forward never reads gets no gradient (its .grad stays None: autograd never reaches
  // it, and DDP's Reducer leaves a globally unused parameter's grad untouched), so torch.optim,
  // which skips parameters whose grad is None, keeps no state for it; DDP's buckets still hold it.
  std::vector<bool> unused(model.parameters.size(), false);
  for (std::size_t u : model.unused_parameters)
    if (u < unused.size()) unused[u] = true;
  double trainable = 0, elements = 0, all_elements = 0, float32_trainable = 0, state = 0, with_grad = 0;
  double largest_moment = 0;  // one state slot of the largest parameter with a gradient
  for (std::size_t i = 0; i < model.parameters.size(); ++i) {
    const auto& p = model.parameters[i];
    m.parameters += static_cast<double>(p.bytes());
    if (p.requires_grad) {
      trainable += static_cast<double>(p.bytes());
      all_elements += static_cast<double>(p.numel());
      if (unused[i]) continue;
      with_grad += static_cast<double>(p.bytes());
      elements += static_cast<double>(p.numel());
      if (p.dtype == DType::kFloat32) float32_trainable += static_cast<double>(p.bytes());
      const double moment =
          ctx.mode.master_weights ? 4.0 * static_cast<double>(p.numel()) : static_cast<double>(p.bytes());
      state += slots * moment;
      largest_moment = std::max(largest_moment, moment);
    }
  }
  m.parameters += static_cast<double>(model.buffer_bytes());
  m.gradients = with_grad;
  // The optimizer and its float32 master copies live where optimizer.step() runs: every DDP rank,
  // DataParallel's GPU0 (replicate() copies the 16-bit module to the others), and nowhere without
  // an optimizer (model.half() alone keeps no float32 copy; apex O2 makes them for its optimizer).
  const bool holds_optimizer =
      opts.optimizer != Optimizer::kNone && (opts.strategy == Strategy::kDDP || opts.dp_one_device || opts.dp_gpu0);
  if (ctx.mode.master_weights && holds_optimizer) {
    // A 16-bit model (half_model) and the optimizer's float32 master copies of its trainable
    // parameters, with float32 gradients for them (apex amp O2, DeepSpeed's and Megatron-LM's fp16
    // optimizers).
    m.parameters += 4 * all_elements;
    m.gradients += 4 * elements;
  } else if (activation_bytes(ctx.precision) == 2 && model.ops.empty()) {
    // Autocast keeps a bf16/fp16 copy of every weight it casts for the matmuls' backward: float32
    // ones (it never casts float64, and a 16-bit weight is used as it is). An op-level model counts
    // the copies of the weights its products cast among the saved tensors (op_cost.cpp
    // saved_bytes: the autocast cache's copy is the tensor autograd saves), so only a layer-level
    // one adds them here; counting both had the copies twice (2 bytes a weight; a new user's report).
    m.parameters += float32_trainable / 2;
  }
  m.activations = model_cost(model, ctx).saved_activation_bytes;
  m.context = static_cast<double>(kCudaContextBytes);

  const double e = static_cast<double>(activation_bytes(ctx.precision));
  const double t = static_cast<double>(model.seq_len(ctx.seq_len));
  const double out_elements = static_cast<double>(model.output_elements.eval(static_cast<std::int64_t>(t)));
  const double out_per_sample = out_elements * e;
  // The loss in float32 (autocast runs cross_entropy, log_softmax and nll_loss in float32); a
  // model.half() run computes it in its own 16-bit type. Measured with torch 1.13 on the CPU
  // (tests/tools/loss_memory_test.py, B=2, T=128; by hand also B=4, T=256): GPT-2 in fp32 peaks
  // inside cross_entropy and again after nll_loss_backward B x T x 50257 x 4 bytes (to within 300
  // bytes) above the live bytes at the end of forward, which equal gradsync's activations.
  // A loss computed inside forward works on the log-softmax's input, whatever forward returns (the
  // logits and the loss, or the loss alone): the largest log-softmax of an op-level model.
  double loss_elements = out_elements;
  if (model.loss_inside) {
    const auto t64 = static_cast<std::int64_t>(t);
    for (const Op& op : model.ops)
      if ((op.name == "_log_softmax" || op.name == "log_softmax") && !op.out.empty())
        loss_elements = std::max(loss_elements, static_cast<double>(op.out.front().elements.eval(1, t64)));
  }
  const double loss_bytes_per_sample = loss_elements * (ctx.mode.master_weights ? e : 4.0);
  // The batch the loop moved to the GPU (x = x.to(device)) stays referenced for the whole step. In
  // fp32 and tf32 the first op saves it as it is (counted among the activations); under autocast
  // it saves the bf16/fp16 copy it casts, so the float32 batch itself is more (an op-level model
  // with a floating-point input: images; token ids are saved as they are by the embedding).
  const bool float_input = std::any_of(model.input_dtypes.begin(), model.input_dtypes.end(), [](DType d) {
    return d == DType::kFloat32 || d == DType::kFloat16 || d == DType::kBFloat16 || d == DType::kFloat64;
  });
  const bool input_not_saved = float_input && !ctx.mode.master_weights && activation_bytes(ctx.precision) == 2;
  const double input_per_sample = static_cast<double>(model.input_bytes.eval(static_cast<std::int64_t>(t)));
  if (opts.strategy == Strategy::kDDP) {
    m.optimizer_state = state;
    if (input_not_saved) m.inputs = static_cast<double>(ctx.batch) * input_per_sample;
    if (!opts.gradient_as_bucket_view) m.buckets = trainable;
    m.hook_state = opts.hook_state_bytes;
    m.loss = static_cast<double>(ctx.batch) * loss_bytes_per_sample;
  } else if (opts.dp_one_device) {
    m.optimizer_state = state;
    if (input_not_saved) m.inputs = static_cast<double>(ctx.batch) * input_per_sample;
    m.loss = static_cast<double>(ctx.batch) * loss_bytes_per_sample;
  } else if (opts.dp_gpu0) {
    // GPU0 holds the module, its replica's activations, the gathered output and its gradient, and
    // the only optimizer state; the replica on GPU0 shares the module's parameters. A loss inside
    // forward returns (loss, logits): gather() runs one Gather per tensor of the tuple
    // (torch/nn/parallel/scatter_gather.py gather_map), and backward starts from the gathered
    // losses' mean, so the logits' Gather node is never reached and no gradient of them is made.
    m.optimizer_state = state;
    const double global = static_cast<double>(opts.dp_global_batch > 0 ? opts.dp_global_batch : ctx.batch);
    m.outputs = (model.loss_inside ? 1 : 2) * global * out_per_sample;
    m.inputs = (input_not_saved ? global : global - static_cast<double>(ctx.batch)) * input_per_sample;
    // A loss inside forward runs on every replica over its own chunk; one outside, on the
    // gathered outputs.
    m.loss = (model.loss_inside ? static_cast<double>(ctx.batch) : global) * loss_bytes_per_sample;
    // The 10 MiB coalescing buffers of broadcast and reduce.
    m.buckets = 2 * 10.0 * kMiB;
  } else {
    // A replica: broadcast parameters (fp32) and its own gradients until the reduce; no optimizer.
    m.buckets = 2 * 10.0 * kMiB;
    if (model.loss_inside) m.loss = static_cast<double>(ctx.batch) * loss_bytes_per_sample;
  }
  m.total = m.parameters + m.gradients + m.optimizer_state + m.activations + m.buckets + m.outputs + m.inputs + m.loss +
            m.hook_state + m.context;
  // optimizer.step(): the saved tensors and the loss's working tensor are freed by then; the state,
  // and what the step allocates beside it, are what only the rank holding the optimizer has.
  if (m.optimizer_state > 0 && slots > 0) {
    m.optimizer_temporaries =
        optimizer_temporary_bytes(opts.optimizer, ctx.optimizer_impl, ctx.foreach, state / slots, largest_moment);
    m.optimizer_peak = m.parameters + m.gradients + m.optimizer_state + m.optimizer_temporaries + m.buckets + m.inputs +
                       m.hook_state + m.context;
    if (m.optimizer_peak > m.total) {
      m.total = m.optimizer_peak;
      m.peak_in_optimizer = true;
    }
  }
  m.capacity = static_cast<double>(ctx.gpu->memory_bytes);
  m.oom = m.total > m.capacity;
  return m;
}

double optimizer_temporary_bytes(Optimizer o, OptimizerImpl impl, bool foreach_default, double moment_bytes,
                                 double largest_moment) {
  if (o != Optimizer::kAdam && o != Optimizer::kAdamW) return 0;
  switch (impl) {
    case OptimizerImpl::kForEach:
      return foreach_default ? moment_bytes : 2 * moment_bytes;
    case OptimizerImpl::kSingleTensor:
      return 2 * largest_moment;
    case OptimizerImpl::kFused:
      return 0;
  }
  return 0;
}

}  // namespace gradsync
