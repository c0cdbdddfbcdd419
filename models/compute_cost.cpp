// compute_cost.cpp: roofline costs of layers, copies and optimizer steps (see compute_cost.hpp).
#include "models/compute_cost.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "core/grad_scaler.hpp"
#include "core/launch_queue.hpp"
#include "core/text.hpp"
#include "models/op_cost.hpp"
#include "topologies/link_model.hpp"

namespace gradsync {
namespace {

// finish fills time_s: the roofline, floored by the launch cost of its kernels.
KernelCost finish(KernelCost k, double peak_flops, double flops_eff, const ComputeContext& ctx) {
  const double compute_s = k.flops > 0 ? k.flops / (peak_flops * flops_eff) : 0.0;
  const double memory_s = k.bytes / (ctx.gpu->memory_bandwidth_Bps * ctx.efficiency.memory);
  k.time_s = std::max({compute_s, memory_s, k.kernels * ctx.efficiency.launch_s});
  return k;
}

}  // namespace

LayerCost layer_cost(const Model& model, const Layer& layer, const ComputeContext& ctx) {
  if (ctx.gpu == nullptr) throw std::invalid_argument("layer_cost: ComputeContext has no GPU");
  if (!model.ops.empty()) {
    const auto index = static_cast<std::size_t>(&layer - model.layers.data());
    return op_model_cost(model, ctx).layers.at(index);
  }
  const auto d = [&](std::string_view name) {
    return static_cast<double>(layer.dim(name, model.seq_len(ctx.seq_len)));
  };
  const double b = static_cast<double>(ctx.batch);
  const double e = static_cast<double>(activation_bytes(ctx.precision));
  const double peak = ctx.gpu->peak_flops(ctx.precision);
  const Efficiency& eff = ctx.efficiency;
  double weight_bytes = 0;
  for (auto p : layer.params) weight_bytes += static_cast<double>(model.parameters[p].numel()) * e;
  const bool has_bias = layer.params.size() > 1;

  KernelCost f, g;
  double saved = 0;
  double flops_eff = eff.memory;  // unused when flops == 0
  switch (layer.kind) {
    case LayerKind::kLinear: {
      const double tokens = b * d("tokens"), in = d("in"), out = d("out");
      f = {2 * tokens * in * out, e * (tokens * in + tokens * out) + weight_bytes, 1, 0};
      // dX = dY W and dW = dY^T X: twice the forward FLOPs; a bias adds a reduction kernel.
      g = {4 * tokens * in * out, e * (2 * tokens * in + tokens * out) + 2 * weight_bytes, has_bias ? 3 : 2, 0};
      saved = e * tokens * in;
      flops_eff = eff.matmul;
      break;
    }
    case LayerKind::kConv2d: {
      const double in = d("in"), out = d("out"), k = d("kernel"), s = d("stride"), p = d("padding"),
                   groups = d("groups");
      const double h = d("height"), w = d("width");
      const double ho = std::floor((h + 2 * p - k) / s) + 1, wo = std::floor((w + 2 * p - k) / s) + 1;
      if (ho <= 0 || wo <= 0) {
        throw ConfigError(fmt::format("{}: layer {}: kernel {} does not fit input {}x{} (padding {})", model.origin,
                                      layer.name, k, h, w, p));
      }
      const double macs = b * ho * wo * out * (in / groups) * k * k;
      f = {2 * macs, e * b * (in * h * w + out * ho * wo) + weight_bytes, 1, 0};
      g = {4 * macs, e * b * (2 * in * h * w + out * ho * wo) + 2 * weight_bytes, has_bias ? 3 : 2, 0};
      saved = e * b * in * h * w;
      flops_eff = eff.conv;
      break;
    }
    case LayerKind::kEmbedding: {
      const double tokens = b * d("tokens"), dim = d("dim"), num = d("num");
      f = {0, 8 * tokens + 2 * e * tokens * dim, 1, 0};
      // The dense gradient of the whole table is zeroed and scattered into (fp32).
      g = {0, 4 * num * dim + 2 * e * tokens * dim + 8 * tokens, 2, 0};
      saved = 8 * tokens;
      break;
    }
    case LayerKind::kLayerNorm:
    case LayerKind::kRMSNorm:
    case LayerKind::kBatchNorm: {
      const double n = b * d("elements");
      // BatchNorm reads its input twice in training (statistics, then normalisation).
      const double reads = layer.kind == LayerKind::kBatchNorm ? 2 : 1;
      f = {0, e * n * (reads + 1), 1, 0};
      g = {0, e * n * 3, 2, 0};
      saved = e * n;
      break;
    }
    case LayerKind::kAttention: {
      const double heads = d("heads"), hd = d("head_dim"), q = d("q_len"), kv = d("kv_len"), kvh = d("kv_heads");
      const double io = e * b * (2 * q * heads * hd + 2 * kv * kvh * hd);
      if (ctx.mode.attention == AttentionImpl::kMath) {
        // Eager attention (the default): QK^T and PV over the whole T x T scores (4 q kv hd FLOPs
        // a head, masked or not), which are written, scaled, masked, softmaxed and read by PV; the
        // softmax output is saved. Backward: four GEMMs and the same passes in reverse.
        const double fl = 4 * b * heads * q * kv * hd;
        const double scores = e * b * heads * q * kv;
        const double mask = layer.causal ? 2 : 0;
        f = {fl, io + scores * (6 + mask), layer.causal ? 5 : 4, 0};
        g = {2 * fl, 2 * io + scores * (9 + mask), layer.causal ? 7 : 6, 0};
        saved = io + scores;  // q, k, v and the softmax's output
        flops_eff = eff.matmul;
        break;
      }
      // SDPA's fused kernels (flash, mem-efficient): the masked half skipped, the scores on chip.
      const double causal = layer.causal ? 0.5 : 1.0;
      const double fl = 4 * b * heads * q * kv * hd * causal;
      f = {fl, io, 1, 0};
      // Backward recomputes P and does four more matmuls: 2.5x forward (FlashAttention-2 paper).
      g = {2.5 * fl, 2 * io, 2, 0};
      saved = io + 4 * b * heads * q;  // q, k, v, out and the fp32 log-sum-exp
      flops_eff = eff.attention;
      break;
    }
    case LayerKind::kActivation:
    case LayerKind::kSoftmax: {
      const double n = b * d("elements");
      f = {0, 2 * e * n, 1, 0};
      g = {0, 3 * e * n, 1, 0};
      saved = e * n;
      break;
    }
    case LayerKind::kDropout: {
      const double n = b * d("elements");
      f = {0, 2 * e * n + n, 1, 0};  // plus a one-byte mask
      g = {0, 2 * e * n + n, 1, 0};
      saved = n;
      break;
    }
    case LayerKind::kPooling: {
      const double in = b * d("in_elements"), out = b * d("out_elements");
      f = {0, e * (in + out), 1, 0};
      g = {0, e * (2 * in + out), 2, 0};
      saved = e * in;
      break;
    }
    case LayerKind::kElementwise: {
      const double n = b * d("elements");
      f = {0, 3 * e * n, 1, 0};
      // The gradient of an addition passes through without a kernel; a product needs two.
      const bool add = layer.op.empty() || layer.op == "add";
      g = add ? KernelCost{0, 0, 0, 0} : KernelCost{0, 4 * e * n, 2, 0};
      saved = add ? 0 : 2 * e * n;
      break;
    }
    case LayerKind::kLoss: {
      // Cross-entropy runs in fp32 under autocast: log-softmax read and write, then the gradient.
      const double n = b * d("elements");
      f = {0, 4.0 * 3 * n, 2, 0};
      g = {0, 4.0 * 3 * n, 2, 0};
      saved = 4.0 * n;
      break;
    }
    case LayerKind::kOps:
      // A functional segment has no closed form: its ops are costed one by one (op_cost.hpp).
      throw std::invalid_argument("layer_cost: an ops segment is costed from its ops (op_model_cost)");
  }
  LayerCost c;
  c.forward = finish(f, peak, flops_eff, ctx);
  c.backward = finish(g, peak, flops_eff, ctx);
  c.saved_bytes = saved;
  return c;
}

namespace {

// measured_time: a KernelCost whose time a measured step gives: the sizes (FLOPs, bytes, kernels,
// contention load) stay the model's, the device time is the measurement, nothing is left to the
// host (launches are inside the measured time).
KernelCost measured_time(KernelCost k, double time_s) {
  // The contention breakdown keeps its proportions, scaled to the measured time.
  const double base = k.gpu_time();
  const double f = base > 0 ? time_s / base : 0.0;
  k.load.gpu_s *= f;
  k.load.sm_s *= f;
  k.load.sm_held_s *= f;
  k.load.hbm_s *= f;
  k.time_s = time_s;
  k.gpu_s = time_s;
  k.host_s = 0;
  return k;
}

// measured_scale: the costed batch's work over the measured one's: samples, times tokens for a
// sequence model (compute in proportion to the work; exact at the measured batch and T).
double measured_scale(const MeasuredStep& ms, const ComputeContext& ctx) {
  double scale = static_cast<double>(ctx.batch) / static_cast<double>(ms.batch);
  if (ms.seq_len) scale *= static_cast<double>(ctx.seq_len) / static_cast<double>(*ms.seq_len);
  return scale;
}

// with_measured: a model cost whose layer times are the measured step's: each layer's share of
// the forward and backward, scaled to the costed batch; the rest of the measured step (other_s)
// is device time before the first layer, as the profiler saw the device wait for it.
ModelCost with_measured(const Model& model, const ModelCost& base, const ComputeContext& ctx) {
  const MeasuredStep& ms = *model.measured;
  const double scale = measured_scale(ms, ctx);
  ModelCost m;
  for (std::size_t i = 0; i < model.layers.size(); ++i) {
    LayerCost c = base.layers[i];
    c.forward = measured_time(c.forward, model.layers[i].measured_forward_s * scale + (i == 0 ? ms.other_s : 0.0));
    c.backward = measured_time(c.backward, model.layers[i].measured_backward_s * scale);
    m.add(c);
  }
  return m;
}

}  // namespace

std::vector<bool> holds_gradient(const Model& model) {
  std::vector<bool> holds(model.parameters.size(), false);
  for (std::size_t i = 0; i < holds.size(); ++i) holds[i] = model.parameters[i].requires_grad;
  for (std::size_t u : model.unused_parameters)
    if (u < holds.size()) holds[u] = false;
  return holds;
}

std::pair<double, int> trainable_gradients(const Model& model) {
  double bytes = 0;
  int tensors = 0;
  const std::vector<bool> holds = holds_gradient(model);
  for (std::size_t i = 0; i < model.parameters.size(); ++i) {
    const Parameter& p = model.parameters[i];
    if (!holds[i]) continue;
    bytes += static_cast<double>(p.bytes());  // a gradient has its parameter's dtype
    ++tensors;
  }
  return {bytes, tensors};
}

ModelCost model_cost(const Model& model, const ComputeContext& ctx) {
  ModelCost m;
  if (!model.ops.empty()) {
    m = op_model_cost(model, ctx);
  } else {
    for (const auto& layer : model.layers) m.add(layer_cost(model, layer, ctx));
  }
  // A measured step holds its own copies (its other time); otherwise the batch from the host, one
  // cudaMemcpyAsync over the GPU's PCIe link at NCCL's payload rate for it (topologies/link_model.hpp),
  // as the simulator's host-to-GPU flow: pageable memory makes the host wait for it (x.to(device)
  // without non_blocking synchronizes), pinned memory with non_blocking=True does not.
  if (!model.measured && ctx.input != InputLocation::kDevice && ctx.gpu != nullptr && ctx.gpu->pcie_gen > 0) {
    const double bytes = static_cast<double>(model.input_bytes.eval(ctx.seq_len)) * static_cast<double>(ctx.batch);
    const double rate =
        pcie_Bps(ctx.gpu->pcie_gen, ctx.gpu->pcie_lanes) * payload_efficiency(LinkType::kPcie, ctx.gpu->sm_version);
    m.input = KernelCost{0, bytes, 1, bytes / rate};
    m.input.host_s = ctx.efficiency.launch_s;
    m.input.gpu_s = m.input.time_s;
    m.input_waits = ctx.input == InputLocation::kPageable;
  }
  // GradScaler (core/grad_scaler.hpp) over the trainable parameters' gradients; a measured step's
  // optimizer time holds what its own run did.
  if (ctx.grad_scaler && !model.measured) {
    const auto [bytes, tensors] = trainable_gradients(model);
    const GradScalerOptions scaler{true, ctx.optimizer_impl == OptimizerImpl::kFused};
    m.scaler_scale = memory_kernel_cost(kGradScalerScalarBytes, 1, ctx);
    m.scaler_update = m.scaler_scale;
    if (scaler.unscales(false)) {
      const GradScalerWork w = grad_scaler_work(bytes, tensors);
      m.scaler_unscale = memory_kernel_cost(w.unscale_bytes, w.unscale_kernels, ctx);
    }
    m.scaler_waits = scaler.waits();
  }
  return model.measured ? with_measured(model, m, ctx) : m;
}

std::string_view optimizer_name(Optimizer o) {
  switch (o) {
    case Optimizer::kSGD:
      return "sgd";
    case Optimizer::kSGDMomentum:
      return "sgd-momentum";
    case Optimizer::kAdam:
      return "adam";
    case Optimizer::kAdamW:
      return "adamw";
    case Optimizer::kNone:
      return "none";
  }
  return "?";
}

Optimizer parse_optimizer(std::string_view text) {
  const std::string t = ascii_lower(text);  // "AdamW" as "adamw"
  for (Optimizer o :
       {Optimizer::kSGD, Optimizer::kSGDMomentum, Optimizer::kAdam, Optimizer::kAdamW, Optimizer::kNone}) {
    if (optimizer_name(o) == t) return o;
  }
  throw ConfigError(fmt::format("optimizer \"{}\" is unknown; expected sgd, sgd-momentum, adam, adamw or none", text));
}

int optimizer_state_bytes_per_param(Optimizer o) {
  switch (o) {
    case Optimizer::kSGD:
    case Optimizer::kNone:
      return 0;
    case Optimizer::kSGDMomentum:
      return 4;
    case Optimizer::kAdam:
    case Optimizer::kAdamW:
      return 8;
  }
  return 0;
}

void half_model(Model& model, Precision p) {
  if (p != Precision::kBF16 && p != Precision::kFP16) {
    throw ConfigError(
        fmt::format("a model in 16 bits with float32 master weights needs a 16-bit precision, not {}; "
                    "expected precision bf16 or fp16, or mixed_precision autocast",
                    precision_name(p)));
  }
  const DType half = p == Precision::kBF16 ? DType::kBFloat16 : DType::kFloat16;
  const auto floating = [](DType t) { return t == DType::kFloat32 || t == DType::kFloat64; };
  for (Parameter& q : model.parameters)
    if (floating(q.dtype)) q.dtype = half;
  for (Buffer& b : model.buffers)
    if (floating(b.dtype)) b.dtype = half;
  for (DType& t : model.input_dtypes)
    if (floating(t)) t = half;
}

OptimizerPasses optimizer_passes(Optimizer opt, OptimizerImpl impl, bool lerp) {
  // Fused (one kernel per chunk of tensors): each fp32 state read and written once: read p and g,
  // write p (12 bytes per element); momentum reads and writes its buffer (+8); Adam its m and v (+16).
  if (impl == OptimizerImpl::kFused) {
    switch (opt) {
      case Optimizer::kSGD:
        return {12, 1};
      case Optimizer::kSGDMomentum:
        return {20, 1};
      case Optimizer::kAdam:
      case Optimizer::kAdamW:
        return {28, 1};
      case Optimizer::kNone:
        return {0, 0};
    }
  }
  // foreach and single-tensor run the same sequence of tensor operations (torch/optim/{sgd,adam,
  // adamw}.py, _multi_tensor_* and _single_tensor_*): one kernel each (per tensor list, or per
  // parameter), each reading its operands and writing its result, 4 bytes per element each:
  //   SGD:       p.add_(g, alpha=-lr)                                   r2 w1  = 12
  //   momentum:  buf.mul_(m) r1w1, buf.add_(g) r2w1, p.add_(buf) r2w1   = 32
  //   Adam:      m.mul_(b1) r1w1 + m.add_(g) r2w1 (one m.lerp_(g) r2w1 from 2.1), v.mul_(b2) r1w1,
  //              v.addcmul_(g, g) r2w1 (g read once per element), s = v.sqrt() r1w1,
  //              s.div_(bc2) r1w1, s.add_(eps) r1w1, p.addcdiv_(m, s) r3w1
  //              = 80 bytes, 8 kernels (72 and 7 with lerp)
  //   AdamW:     p.mul_(1 - lr * wd) r1w1 first: +8 bytes, +1 kernel
  // Checked on an H100 (validation/gpu/h100-2026-11-27, PyTorch 2.11, AdamW over BERT-large's 335M
  // parameters): _foreach_mul_ x2, _foreach_lerp_, _foreach_addcmul_, _foreach_sqrt,
  // _foreach_div_, _foreach_add_, _foreach_addcdiv_ in 9.9 ms: 80 bytes per element at 2.7 TB/s, 0.81
  // of its 3.35 (KernelRates::memory is 0.80).
  switch (opt) {
    case Optimizer::kSGD:
      return {12, 1};
    case Optimizer::kSGDMomentum:
      return {32, 3};
    case Optimizer::kAdam:
      return lerp ? OptimizerPasses{72, 7} : OptimizerPasses{80, 8};
    case Optimizer::kAdamW:
      return lerp ? OptimizerPasses{80, 8} : OptimizerPasses{88, 9};
    case Optimizer::kNone:
      return {0, 0};
  }
  return {12, 1};
}

KernelCost optimizer_cost(const Model& model, Optimizer opt, bool fused, const ComputeContext& ctx) {
  // torch.optim steps (and zero_grad fills) only the parameters whose .grad exists: never one that
  // forward does not use (holds_gradient).
  const int tensors = trainable_gradients(model).second;
  double elements = 0;
  const std::vector<bool> holds = holds_gradient(model);
  for (std::size_t i = 0; i < model.parameters.size(); ++i)
    if (holds[i]) elements += static_cast<double>(model.parameters[i].numel());
  const OptimizerPasses passes =
      optimizer_passes(opt, fused ? OptimizerImpl::kFused : OptimizerImpl::kForEach, ctx.lerp_moments);
  const double per_elem = passes.bytes_per_element;
  const int ops = passes.kernels;
  // multi_tensor_apply handles up to ~36 tensors per launch at depth 4 (ATen MultiTensorApply.cuh).
  const int chunks = opt == Optimizer::kNone ? 0 : (tensors + 35) / 36;
  KernelCost k{0, per_elem * elements, fused ? chunks : ops * chunks, 0};
  if (ctx.mode.master_weights && opt != Optimizer::kNone) {
    // The update runs on float32 master copies: the 16-bit gradients copied (and unscaled) into
    // float32 ones first, the updated masters copied back into the 16-bit model after (apex amp
    // O2's multi_tensor_scale both ways; DeepSpeed's and Megatron-LM's fp16 optimizers likewise):
    // 2 + 4 bytes per element each way, one multi-tensor launch per chunk each.
    k.bytes += 12 * elements;
    k.kernels += 2 * chunks;
  }
  if (ctx.zero_grad_fill) {
    // zero_grad(set_to_none=False): torch._foreach_zero_ of the gradients (Optimizer.zero_grad,
    // grouped by device and dtype): written once, one launch per 110 tensors at depth 1.
    k.bytes += 4 * elements;
    k.kernels += (tensors + 109) / 110;
  }
  // A measured step's optimizer is what the profiler timed, whatever the scenario's optimizer; a
  // run without one (optimizer none) leaves it out (it kept the measured time until 2026-12-02,
  // with no optimizer state).
  if (model.measured)
    return measured_time(finish(k, 1.0, 1.0, ctx), opt == Optimizer::kNone ? 0.0 : model.measured->optimizer_s);
  return finish(k, 1.0, 1.0, ctx);
}

KernelCost optimizer_cost(const Model& model, Optimizer opt, OptimizerImpl impl, const ComputeContext& ctx) {
  if (model.measured) return optimizer_cost(model, opt, false, ctx);
  if (impl != OptimizerImpl::kSingleTensor) return optimizer_cost(model, opt, impl == OptimizerImpl::kFused, ctx);
  ComputeContext no_fill = ctx;  // the loop's own fill below, not _foreach_zero_
  no_fill.zero_grad_fill = false;
  KernelCost k = optimizer_cost(model, opt, false, no_fill);
  const int tensors = trainable_gradients(model).second;
  double elements = 0;
  const std::vector<bool> holds = holds_gradient(model);
  for (std::size_t i = 0; i < model.parameters.size(); ++i)
    if (holds[i]) elements += static_cast<double>(model.parameters[i].numel());
  // One kernel per parameter and operation of torch.optim's _single_tensor_* loops (optimizer_passes),
  // each issued from Python; zero_grad(set_to_none=False), the default before 2.0, adds a fill_(0)
  // per parameter.
  const int per_param = optimizer_passes(opt, OptimizerImpl::kSingleTensor, ctx.lerp_moments).kernels;
  const int fill = ctx.zero_grad_fill ? 1 : 0;
  k.kernels = tensors * (per_param + fill);
  if (ctx.mode.master_weights && opt != Optimizer::kNone) k.kernels += 2 * ((tensors + 35) / 36);  // master copies
  if (ctx.zero_grad_fill) k.bytes += 4 * elements;                                                 // the zero fill
  const KernelRates r = rates_for(*ctx.gpu);
  k.host_s = k.kernels * r.host.loop_op_s;
  const double gpu = std::max(k.bytes / (ctx.gpu->memory_bandwidth_Bps * r.memory), k.kernels * r.min_kernel_s);
  k.gpu_s = gpu;
  k.time_s = std::max(gpu, k.host_s);
  return k;
}

KernelCost copy_cost(double bytes, int tensors, const ComputeContext& ctx) {
  return finish(KernelCost{0, 2 * bytes, tensors, 0}, 1.0, 1.0, ctx);
}

KernelCost memory_kernel_cost(double bytes, int kernels, const ComputeContext& ctx) {
  return finish(KernelCost{0, bytes, kernels, 0}, 1.0, 1.0, ctx);
}

KernelCost matmul_kernel_cost(double flops, double bytes, int kernels, const ComputeContext& ctx) {
  const Precision p = ctx.precision == Precision::kTF32 ? Precision::kTF32 : Precision::kFP32;
  return finish(KernelCost{flops, bytes, kernels, 0}, ctx.gpu->peak_flops(p), ctx.efficiency.matmul, ctx);
}

}  // namespace gradsync
