// op_coster.hpp: the costing of a format 2 model's ops (op_cost.hpp), shared by op_cost.cpp
// (layers, saved tensors) and op_backward.cpp (backward rules, compiled regions). Internal.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "models/compute_cost.hpp"
#include "models/contention.hpp"
#include "models/host_costs.hpp"
#include "models/kernel_waves.hpp"
#include "models/model.hpp"
#include "models/op_cost.hpp"
#include "models/op_tables.hpp"

namespace gradsync::op_detail {

inline bool is_gemm(const Op& op) { return op.gemm.has_value(); }
inline bool is_conv(const Op& op) {
  return op.conv.has_value() || op.name == "convolution" || op.name == "_convolution";
}
// winograd_eligible: a convolution that cuDNN can run with its Winograd algorithms
// (CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD[_NONFUSED], and the BWD_DATA and BWD_FILTER ones): a 3x3
// filter at stride 1, not grouped (cuDNN API reference, the algorithms' support tables). Layers of
// fewer than 16 input or output channels are left out: the transformed products run over the
// channels, and with 3 of them (an image net's first layer) direct convolution is the faster
// (Gray and Koester, "Still not slowing down: Benchmarking optimized Winograd implementations",
// Nervana/Intel, 2016, exclude VGG's first layer for that reason).
inline bool winograd_eligible(const Op& op) {
  if (!op.conv) return false;
  const auto& c = *op.conv;  // in channels, height, width, out channels, kernel h, w, stride, padding, groups
  return c[4] == 3 && c[5] == 3 && c[6] == 1 && c[8] == 1 && c[0] >= 16 && c[3] >= 16;
}

struct Sizes {
  std::vector<double> in, out;
  double flops = 0;
  std::array<double, 4> gemm{};  // batch, m, n, k
};

// Plan: one op's dtypes under autocast, what it needs in grad, its fusion region (compile).
struct Plan {
  std::vector<int> out_bytes;  // bytes per element of each output
  std::vector<int> in_bytes;   // what the op reads each input as (after autocast's casts)
  std::vector<bool> in_grad;   // whether each input requires grad
  bool grad = false;           // whether the output requires grad
  std::vector<std::pair<double, std::pair<int, int>>> casts;  // activation casts: elements, from -> to
  std::vector<std::size_t> weight_casts;                      // parameters cast for this op (first use)
  int region = -1;                                            // compile: the fused region
  bool skipped = false;                                       // part of an attention core that a fused kernel replaces
  bool flash = false;                                         // the fused attention kernel is charged here
};

struct Kernel {
  double flops = 0, bytes = 0;
  double time = 0;
  // For contention with NCCL beside it (models/contention.hpp): the time if bound by the SMs'
  // throughput (sm; sm_held with NCCL's blocks holding SMs) or by DRAM (hbm); neither when the
  // launch floor decides.
  double sm = 0, sm_held = 0, hbm = 0;
  bool misaligned = false;        // a tensor-core product at the narrow-load kernels' rate
  bool winograd = false;          // a convolution run as Winograd's F(2x2, 3x3) (op_conv.cpp)
  HostCall call = HostCall::kOp;  // what the eager ATen call that launches it costs the host
  // cls: what it does (models show's GPU time by class); unset until its op's kernels are tagged
  // (OpCoster::layer: by the op and the library call; casts and fused kernels where made).
  std::optional<KernelClass> cls = std::nullopt;
};

// kernel_class: the class of a kernel that op `op` launched through `call` (the product or
// convolution itself through its library; its bias sums and casts are other classes).
KernelClass kernel_class(const Op& op, HostCall call);

class OpCoster {
 public:
  OpCoster(const Model& m, const ComputeContext& ctx)
      : m_(m), ctx_(ctx), r_(rates_for(*ctx.gpu)), t_(m.seq_len(ctx.seq_len)), b_(ctx.batch) {
    vocab_ = static_cast<double>(vocabulary_size(m));
    padded_vocab_ = static_cast<double>(padded_vocabulary(vocabulary_size(m), ctx.mode.pad_to_multiple_of));
    sharing_ = sm_sharing(*ctx.gpu);
    held_ = held_sms(sharing_, ctx.nccl_blocks);
    low_ = static_cast<int>(activation_bytes(ctx.precision));
    autocast_ = low_ == 2 && !ctx.mode.master_weights;
    sizes_.resize(m.ops.size());
    plans_.resize(m.ops.size());
    consumers_.resize(m.ops.size());
    for (std::size_t i = 0; i < m.ops.size(); ++i) size_op(i);
    for (std::size_t i = 0; i < m.ops.size(); ++i) plan_op(i);
    if (ctx.mode.attention != AttentionImpl::kMath) plan_attention();
    if (ctx.mode.compile) plan_regions();
    // The layer whose backward runs a parameter's AccumulateGrad: the first in forward order that
    // uses it (a tied weight's gradients are summed before it); none for an unused parameter.
    owner_of_grad_.assign(m.parameters.size(), m.layers.size());
    for (std::size_t li = m.layers.size(); li-- > 0;)
      for (std::size_t p : m.layers[li].params) owner_of_grad_[p] = li;
    for (std::size_t u : m.unused_parameters) owner_of_grad_[u] = m.layers.size();
  }

  // run: every layer's cost, with the host's time for module calls and view calls (op_cost.cpp).
  ModelCost run();

 private:
  // add_host: host time the pass spends beside its kernels' calls; the layer keeps its stream busy
  // for the longer of the host and the GPU.
  static void add_host(KernelCost& k, double seconds) {
    k.host_s += seconds;
    k.time_s = std::max(k.gpu_time(), k.host_s);
  }

  double ev(const BatchExpr& e) const { return static_cast<double>(e.eval(b_, t_)); }

  void size_op(std::size_t i) {
    const Op& op = m_.ops[i];
    Sizes& s = sizes_[i];
    for (const OpInput& in : op.in) {
      s.in.push_back(ev(in.elements));
      if (in.ref.kind == OpRef::Kind::kOp) consumers_[in.ref.index].push_back(i);
    }
    for (const OpOutput& o : op.out) s.out.push_back(ev(o.elements));
    s.flops = ev(op.flops);
    if (op.gemm) {
      for (std::size_t k = 0; k < 4; ++k) s.gemm[k] = ev((*op.gemm)[k]);
      // A padded vocabulary (ExecutionMode::pad_to_multiple_of) widens the products that span it;
      // the padded rows' other traffic (0.1% of GPT-2's logits at 64) is not added.
      if (padded_vocab_ != vocab_)
        for (std::size_t k : {std::size_t{2}, std::size_t{3}})
          if (s.gemm[k] == vocab_) {
            s.flops *= padded_vocab_ / vocab_;
            s.gemm[k] = padded_vocab_;
          }
    }
  }

  int ref_bytes(const OpRef& r) const {
    switch (r.kind) {
      case OpRef::Kind::kOp:
        return plans_[r.index].out_bytes[static_cast<std::size_t>(r.output)];
      case OpRef::Kind::kParameter:
        return static_cast<int>(dtype_bytes(m_.parameters[r.index].dtype));
      case OpRef::Kind::kBuffer:
        return static_cast<int>(dtype_bytes(m_.buffers[r.index].dtype));
      case OpRef::Kind::kInput:
        return r.index < m_.input_dtypes.size() ? static_cast<int>(dtype_bytes(m_.input_dtypes[r.index])) : 4;
      case OpRef::Kind::kConstant:
        return 4;
    }
    return 4;
  }
  bool ref_grad(const OpRef& r) const {
    if (r.kind == OpRef::Kind::kOp) return plans_[r.index].grad;
    if (r.kind == OpRef::Kind::kParameter) return m_.parameters[r.index].requires_grad;
    return false;
  }

  // plan_op: autocast's dtypes and casts (eager: every cast a kernel; a weight is cast once per
  // forward, autocast's cache), and what requires grad.
  void plan_op(std::size_t i) {
    const Op& op = m_.ops[i];
    Plan& p = plans_[i];
    const bool lp = kLowerPrecision.count(op.name) > 0;
    const bool f32 = kFloat32.count(op.name) > 0;
    const bool bias = linear_bias_add(i);
    int widest = 0;
    bool any_grad = false;
    for (std::size_t k = 0; k < op.in.size(); ++k) {
      const OpInput& in = op.in[k];
      const bool is_float = in.bytes == 0;
      int b = is_float ? ref_bytes(in.ref) : in.bytes;
      if (is_float && autocast_ && (lp || (bias && in.ref.kind == OpRef::Kind::kParameter)) && b == 4) {
        if (in.ref.kind == OpRef::Kind::kParameter) {
          if (cast_params_.insert(in.ref.index).second) p.weight_casts.push_back(in.ref.index);
        } else {
          p.casts.push_back({sizes_[i].in[k], {4, 2}});
        }
        b = 2;
      } else if (is_float && autocast_ && f32 && b == 2) {
        p.casts.push_back({sizes_[i].in[k], {2, 4}});
        b = 4;
      }
      p.in_bytes.push_back(b);
      const bool g = is_float && ref_grad(in.ref);
      p.in_grad.push_back(g);
      any_grad = any_grad || g;
      if (is_float && in.ref.kind != OpRef::Kind::kConstant) widest = std::max(widest, b);
    }
    // Batch norm keeps its input's dtype (cuDNN's mixed-precision batch norm takes float32 weights
    // and statistics beside half activations); other ops promote to their widest float input.
    const bool norm_keeps =
        op.name == "native_batch_norm" || op.name == "cudnn_batch_norm" || op.name == "_native_batch_norm_legit";
    const int first_float = !op.in.empty() && op.in[0].bytes == 0 ? p.in_bytes[0] : 4;
    // A 16-bit model (master_weights) runs every op in its inputs' type.
    const int out_float = ctx_.mode.master_weights ? (widest > 0 ? widest : low_)
                          : lp                     ? (autocast_ ? 2 : 4)
                          : f32                    ? 4
                          : norm_keeps             ? first_float
                          : widest > 0             ? widest
                                                   : 4;
    for (const OpOutput& o : op.out) p.out_bytes.push_back(o.bytes == 0 ? out_float : o.bytes);
    p.grad = any_grad && kNoGrad.count(op.name) == 0 && op.out.front().bytes == 0;
  }

  // linear_bias_add: op i adds a parameter to a product's result, as F.linear does on an input it
  // does not flatten to one addmm (aten/src/ATen/native/Linear.cpp: matmul, then the bias added;
  // nn.MultiheadAttention's packed in-projection of a transposed input). The exporter records the
  // two ops, but autocast casts linear's arguments before either runs (autocast_mode.cpp: linear
  // is lower_precision_fp), the bias among them: the add is 16-bit and the bias a cast weight.
  bool linear_bias_add(std::size_t i) const {
    const Op& op = m_.ops[i];
    if (!autocast_ || (op.name != "add" && op.name != "add_") || op.in.size() != 2) return false;
    bool product = false, parameter = false;
    for (const OpInput& in : op.in) {
      if (in.bytes != 0) return false;
      if (in.ref.kind == OpRef::Kind::kParameter) parameter = true;
      if (in.ref.kind == OpRef::Kind::kOp && kLowerPrecision.count(m_.ops[in.ref.index].name) > 0) product = true;
    }
    return product && parameter;
  }

  // plan_attention: the cores SDPA's fused kernels replace: the first product carries the kernel,
  // the other members (copies, scale, mask, softmax, dropout, the second product) vanish.
  void plan_attention() {
    for (std::size_t i = 0; i < m_.ops.size(); ++i) {
      const Op& op = m_.ops[i];
      if (op.attn < 0) continue;
      plans_[i].skipped = !op.attention.has_value();
      plans_[i].flash = op.attention.has_value();
    }
  }

  bool fusible(std::size_t i) const {
    const Op& op = m_.ops[i];
    return !is_gemm(op) && !is_conv(op) && !plans_[i].flash && !plans_[i].skipped;
  }

  // plan_regions (torch.compile): each run of fusible ops between two matrix products or
  // convolutions is one generated kernel (TorchInductor fuses pointwise ops and reductions between
  // its extern GEMM/convolution calls, across module boundaries: a residual add with the next
  // layer norm). A region is charged to the layer of its last op, where its backward also runs.
  void plan_regions() {
    int region = -1;
    bool open = false;
    for (std::size_t i = 0; i < m_.ops.size(); ++i) {
      if (!fusible(i)) {
        open = false;
        continue;
      }
      if (!open) {
        ++region;
        region_first_.push_back(i);
        region_last_.push_back(i);
        open = true;
      }
      plans_[i].region = region;
      region_last_.back() = i;
    }
  }

  // read_elements: what op i reads of input k: a gather reads only the rows it indexes (an
  // embedding's output rows); a loss reads one entry per target.
  double read_elements(std::size_t i, std::size_t k) const {
    const Op& op = m_.ops[i];
    if (!kIndexed.count(op.name) || op.in[k].bytes != 0) return sizes_[i].in[k];
    if (op.name == "nll_loss_forward" || op.name == "nll_loss2d_forward")
      return sizes_[i].in.size() > 1 ? sizes_[i].in[1] : sizes_[i].out.front();
    return sizes_[i].out.front();
  }

  double dram(double bytes) const { return bytes / (ctx_.gpu->memory_bandwidth_Bps * r_.memory); }

  // sm_clock_rate: SMs x clock, the clock being the FP32 peak over 2 x lanes x SMs.
  double sm_clock_rate() const {
    const GpuSpec& g = *ctx_.gpu;
    return g.sms > 0 ? g.fp32_flops / (2.0 * r_.fp32_lanes) : 0.0;
  }
  // strided_op: an elementwise op that PyTorch runs without vectorised loads: a layout copy
  // (clone/contiguous of a transposed view) or an input broadcast to the output (a mask, a bias of
  // other shape; not a scalar). Eager only: torch.compile generates its own kernels.
  bool strided_op(std::size_t i) const;
  // casting_op: an elementwise op whose float operands are not all of its output's type: ATen's
  // TensorIterator then runs gpu_kernel_impl's dynamically casting loop (Loops.cuh: needs_dynamic_
  // casting), not gpu_kernel_impl_nocast's (BERT's additive mask: bf16 scores + a float32 mask).
  bool casting_op(std::size_t i) const;
  // strided_kernel: kernel k over `elements`, at most KernelRates::strided (strided_cast for a
  // casting op) per SM and clock; then bound by the SMs.
  Kernel strided_kernel(Kernel k, double elements, bool casting = false) const;
  // unrolled_kernel: kernel k as gpu_kernel_impl's loop for contiguous operands of mixed dtypes
  // (Loops.cuh: launch_unrolled_kernel with LoadWithCast and StoreWithCast, no vectorised loads):
  // `accesses` operand elements loaded or stored per element, at most KernelRates::unrolled_cast
  // of them per SM and clock; then bound by the SMs. Eager only.
  Kernel unrolled_kernel(Kernel k, double elements, double accesses) const;
  // sm_bound: kernel k taking `seconds` when that is longer than its DRAM time, then bound by the SMs.
  Kernel sm_bound(Kernel k, double seconds) const;
  // cast_kernel: a cast of n elements from `from` to `to` bytes per element (autocast's casts, their
  // gradients' casts back): float32 to 16 bits runs Copy.cu's vectorised bfloat16_copy_kernel_cuda /
  // float16_copy_kernel_cuda at the DRAM rate; 16 bits to float32 has no such kernel outside ROCm
  // and runs direct_copy_kernel_cuda's casting loop (unrolled_kernel: one load, one store).
  Kernel cast_kernel(double n, int from, int to) const;
  // pointwise_op: op i is one of TensorIterator's elementwise loops (not a product, convolution,
  // indexed read, reduction, normalisation or dropout: those have kernels of their own).
  bool pointwise_op(std::size_t i) const;

  // bn_floor: batch norm's kernels out[first..] in training, stretched to `elements` at
  // `per_sm_clock` elements per SM and clock when that is slower than their DRAM traffic; they are
  // then bound by the SMs (NCCL's blocks slow them as they slow convolutions). KernelRates::bn_*.
  void bn_floor(std::vector<Kernel>& out, std::size_t first, double elements, double per_sm_clock) const;

  bool tf32_tensor_cores() const { return ctx_.gpu->sm_version >= 80 && ctx_.gpu->tf32_flops > 0; }
  // tf32_convs: float32 convolutions on TF32 tensor cores: from Ampere on, where cudnn.allow_tf32
  // exists (PyTorch 1.7) and is left at its default, True (ComputeContext::cudnn_tf32).
  bool tf32_convs() const { return tf32_tensor_cores() && (ctx_.cudnn_tf32 || ctx_.precision == Precision::kTF32); }

  // gemm_peak: the matrix peak and efficiency of a product in this run's precision.
  std::pair<double, double> gemm_peak() const {
    const GpuSpec& g = *ctx_.gpu;
    switch (ctx_.precision) {
      case Precision::kFP32:
        return {g.fp32_flops, r_.gemm_fp32};
      case Precision::kTF32:
        // TF32 runs on the tensor cores from Ampere (SM 8.0) on. On GA102/AD102 the TF32 tensor
        // peak (dense, FP32 accumulate) equals the datasheet FP32 figure, but it is a tensor rate:
        // cuBLAS reaches it as closely as the other tensor-core types.
        return tf32_tensor_cores() ? std::make_pair(g.tf32_flops, r_.gemm_tf32)
                                   : std::make_pair(g.fp32_flops, r_.gemm_fp32);
      default:
        return {g.peak_flops(ctx_.precision), r_.gemm_tensor};
    }
  }

  // on_tensor_cores: whether this run's products run on the tensor cores (fp16/bf16 autocast;
  // TF32 from Ampere on), not as FP32 SIMT SGEMM.
  bool on_tensor_cores() const {
    if (ctx_.precision == Precision::kFP32) return false;
    if (ctx_.precision == Precision::kTF32) return tf32_tensor_cores();
    return true;
  }
  // aligned: cuBLAS's condition for its full-rate tensor-core kernels (cuBLAS docs, "Tensor Core
  // Usage"): every operand's and the output's innermost dimension a multiple of 16 bytes. For
  // C (m x n) = A (m x k) B (k x n) in row-major storage, forward and both backward products have
  // innermost dimensions among n and k (m, the rows, is never innermost); `elem_bytes` is what
  // the operands are read as.
  static bool aligned(double n, double k, int elem_bytes) {
    const auto multiple = [elem_bytes](double d) { return std::fmod(d * elem_bytes, 16.0) == 0; };
    return multiple(n) && multiple(k);
  }
  // gemm_time: FLOPs at the peak, in whole waves of 128 x 128 output tiles over the SMs, K split
  // when the tiles do not fill one wave (kernel_waves.hpp), or the bytes; a misaligned product on
  // the tensor cores at the narrow-load kernels' rate (KernelRates).
  Kernel gemm(double flops, double bytes, double batch, double m, double n, bool is_aligned = true) const {
    auto [peak, eff] = gemm_peak();
    if (!is_aligned && on_tensor_cores()) eff *= r_.gemm_misaligned;  // peak, eff: copies
    const double b = std::max(1.0, batch);
    const double k_depth = m > 0 && n > 0 ? flops / (2 * b * m * n) : 0.0;
    const Waves w = waves({b, m, n, k_depth}, bytes);
    Kernel k{flops, bytes, 0};
    k.call = HostCall::kBlas;
    k.misaligned = !is_aligned && on_tensor_cores();
    const double compute = flops / (peak * eff * w.efficiency);
    k.time = std::max({compute, dram(bytes), r_.min_kernel_s});
    return bound(k, compute, dram(bytes), compute * gemm_stretch(w.ctas, sharing_.sms, held_));
  }
  // waves: a GEMM-shaped kernel's wave quantisation on this GPU; a split K adds its fp32 partial
  // sums, written and read, to `bytes`.
  Waves waves(const GemmShape& g, double& bytes) const {
    const Waves w = gemm_waves_of(g, r_.tile, ctx_.gpu->sms);
    if (w.split > 1) bytes += 2.0 * 4.0 * g.m * g.n * g.batch * w.split;
    return w;
  }
  // bound records what limits kernel k (time already set): its compute term, its DRAM term, or
  // neither (the launch floor); `held` is the compute term with NCCL's blocks holding SMs.
  Kernel bound(Kernel k, double compute, double memory, double held) const {
    if (compute >= memory && compute >= k.time) {
      k.sm = k.time;
      k.sm_held = held;
    } else if (memory > compute && memory >= k.time) {
      k.hbm = k.time;
    }
    return k;
  }
  // conv: cuDNN at the conv rate of the tensor peak; fp32 convolutions on Ampere and later run as
  // TF32 (torch.backends.cudnn.allow_tf32 defaults to True, unlike matmuls), at the SIMT rate before,
  // there in whole waves of tiles and with cuDNN's Winograd kernels where faster (op_conv.cpp).
  // `pass`: 0 the forward, 1 the input's gradient, 2 the weight's, of convolution op i.
  Kernel conv(std::size_t i, int pass, double bytes) const;
  // layout: NCHW tensors on the tensor cores: cuDNN's tensor-core kernels work in NHWC, so each
  // convolution transposes its input and output (a read and a write of each; NVIDIA Deep Learning
  // Performance Guide, "Tensor Layouts In Memory: NCHW vs NHWC"). That is fp16/bf16 autocast, and
  // fp32 and tf32 from Ampere on, whose convolutions run as TF32 (cudnn.allow_tf32 defaults to True):
  // on the H200, ResNet-50's TF32 step spent 7.4 ms in cuDNN's nchwToNhwc/nhwcToNchw kernels
  // against 1.5 ms with TF32 off (validation/gpu/h200-2026-11-27/profile.json.gz). GeForce GA102 and
  // AD102 list a TF32 tensor rate no higher than their FP32 one (dense, FP32 accumulate): there
  // cuDNN gains nothing from the tensor-core engines and is taken to keep the NCHW FP32 kernels
  // (an inference, not measured: Lambda's RTX 3090 TF32 ResNet-50 matches without transposes, and
  // would be 19% too slow with them).
  bool transposes() const {
    const GpuSpec& g = *ctx_.gpu;
    const bool tensor_core_convs = (ctx_.precision == Precision::kFP32 || ctx_.precision == Precision::kTF32) &&
                                   tf32_convs() && g.tf32_flops > g.fp32_flops;
    return (low_ == 2 || tensor_core_convs) && !ctx_.mode.channels_last;
  }
  Kernel memory(double bytes) const {
    Kernel k{0, bytes, 0};
    k.time = std::max(dram(bytes), r_.min_kernel_s);
    return bound(k, 0, dram(bytes), 0);
  }
  // inside: kernel k launched by the call before it (no host cost of its own).
  static Kernel inside(Kernel k) {
    k.call = HostCall::kInside;
    return k;
  }
  // cudnn_batch_norm: whether PyTorch runs a batch norm with cuDNN (aten/src/ATen/native/
  // Normalization.cpp, _select_batch_norm_backend): in NCHW, but not for a bf16 input or weight,
  // nor for a half input whose weight is half too. Autocast leaves batch norm in the input's dtype
  // with float32 weights, so fp16 autocast runs cuDNN and bf16 does not. A 16-bit model is taken
  // as apex amp O2 runs it, batch norm's weights kept float32 (keep_batchnorm_fp32's default): cuDNN
  // in fp16; a plain model.half() would run PyTorch's own kernels, which gradsync does not tell apart.
  bool cudnn_batch_norm() const { return !ctx_.mode.channels_last && ctx_.precision != Precision::kBF16; }
  // norm_call: batch norm's call: cuDNN's (cudnn_batch_norm and its backward) where PyTorch uses it,
  // else PyTorch's own kernels; layer and group norm are PyTorch's own.
  HostCall norm_call(const Op& op) const;
  // bn_rate: batch norm's elements per SM and clock, forward or backward, by who runs it.
  double bn_rate(bool backward) const;
  Kernel attention(const AttentionCore& a, bool backward) const {
    const double heads = ev(a.heads), q = static_cast<double>(a.q_len.eval(t_)),
                 kv = static_cast<double>(a.kv_len.eval(t_)), d = static_cast<double>(a.head_dim.eval(t_));
    const double flops = 4 * heads * q * kv * d * (a.causal ? 0.5 : 1.0) * (backward ? 2.5 : 1.0);
    const double io = heads * d * (2 * q + 2 * kv) * low_ * (backward ? 2.0 : 1.0) + 4 * heads * q;
    const double eff = ctx_.mode.attention == AttentionImpl::kFlash ? r_.flash : r_.mem_efficient;
    const double peak = ctx_.gpu->peak_flops(low_ == 2 ? ctx_.precision : Precision::kTF32);
    Kernel k{flops, io, 0};
    k.call = HostCall::kBlas;  // one library call, like a product's
    const double compute = flops / (peak * eff);
    k.time = std::max({compute, dram(io), r_.min_kernel_s});
    return bound(k, compute, dram(io), compute * linear_stretch(sharing_.sms, held_));
  }

  // forward_kernels: op i's kernels in eager mode (its casts, then the op).
  // (compiled: an activation's cast is folded into the region that makes it).
  void forward_kernels(std::size_t i, std::vector<Kernel>& out, bool casts) const;

  // gemm_aligned: whether product i meets cuBLAS's alignment (aligned), its operands read in
  // this run's dtype (the last two inputs: addmm's and baddbmm's first is the added term).
  bool gemm_aligned(std::size_t i) const {
    const Op& op = m_.ops[i];
    const std::size_t a = op.in.size() >= 3 ? op.in.size() - 2 : 0;
    const int elem = a < plans_[i].in_bytes.size() ? plans_[i].in_bytes[a] : low_;
    return aligned(sizes_[i].gemm[2], sizes_[i].gemm[3], elem);
  }

  // backward_kernels: op i's gradient kernels (PyTorch's derivatives.yaml), in its dtypes.
  void backward_kernels(std::size_t i, std::vector<Kernel>& out, bool casts) const;
  // accumulate_gradients (op_backward.cpp): the adds summing the gradients of an output several
  // ops read.
  void accumulate_gradients(std::size_t i, std::vector<Kernel>& out) const;

  // Compiled: a fused region reads what comes from outside it and writes what leaves it
  // (op_backward.cpp); its backward reads the gradients of what left and the region's inputs,
  // and writes the gradients of what came in.
  Kernel region_forward(std::size_t first, std::size_t last, int* kernels) const;
  bool leaves_region(std::size_t i, std::size_t k, int region) const;

  LayerCost layer(const Layer& l) const;

  double saved_bytes(const Layer& l) const;

  const Model& m_;
  const ComputeContext& ctx_;
  KernelRates r_;
  SmSharing sharing_;
  int held_ = 0;  // SMs NCCL's blocks hold while a collective overlaps (ComputeContext::nccl_blocks)
  double vocab_ = 0, padded_vocab_ = 0;  // the vocabulary, and as the products see it (padded)
  std::int64_t t_, b_;
  int low_ = 4;
  bool autocast_ = false;
  std::vector<Sizes> sizes_;
  std::vector<Plan> plans_;
  std::vector<std::vector<std::size_t>> consumers_;
  std::set<std::size_t> cast_params_;
  std::vector<std::size_t> owner_of_grad_;               // per parameter: the layer running its AccumulateGrad
  std::vector<std::size_t> region_first_, region_last_;  // compile: each region's first and last op
};

}  // namespace gradsync::op_detail
