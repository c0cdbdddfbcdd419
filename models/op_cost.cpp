// op_cost.cpp: forward and backward kernels of a format 2 model's ops (see op_cost.hpp).
#include "models/op_cost.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/error.hpp"
#include "models/op_coster.hpp"

namespace gradsync {
namespace op_detail {

ModelCost OpCoster::run() {
  ModelCost mc;
  // Eager: each nn.Module call costs the host its Python (module_calls); a layer without
  // kernels passes its calls to the next that has some. Compiled: Dynamo traces through the
  // modules, and the generated code calls none.
  // Eager, view calls cost the host too (OpHostCosts::view_s): a layer's forward views with
  // its forward, the backward nodes of views of tensors requiring grad with its backward; a
  // layer without kernels in that pass hands them on in the pass's order. Compiled, they are
  // inside the graph.
  const std::vector<int> calls = module_calls(m_);
  const bool eager = !ctx_.mode.compile;
  std::vector<LayerCost> costs;
  costs.reserve(m_.layers.size());
  double pending = 0;
  for (std::size_t i = 0; i < m_.layers.size(); ++i) {
    LayerCost c = layer(m_.layers[i]);
    if (eager) pending += calls[i] * r_.module_call_s + m_.layers[i].views * r_.host.view_s;
    if (c.forward.kernels > 0 && pending > 0) {
      add_host(c.forward, pending);
      pending = 0;
    }
    costs.push_back(c);
  }
  pending = 0;
  for (std::size_t i = costs.size(); eager && i-- > 0;) {
    pending += m_.layers[i].grad_views * r_.host.view_s;
    if (costs[i].backward.kernels > 0 && pending > 0) {
      add_host(costs[i].backward, pending);
      pending = 0;
    }
  }
  for (const LayerCost& c : costs) mc.add(c);
  return mc;
}

LayerCost OpCoster::layer(const Layer& l) const {
  LayerCost c;
  std::vector<Kernel> fwd, bwd;
  int fwd_kernels = 0, bwd_kernels = 0;
  const std::size_t end = l.first_op + l.op_count;
  for (std::size_t i = l.first_op; i < end;) {
    if (ctx_.mode.compile && plans_[i].region >= 0) {
      const auto region = static_cast<std::size_t>(plans_[i].region);
      const std::size_t first = region_first_[region], last = region_last_[region];
      if (i != last) {
        ++i;  // charged with its region's last op
        continue;
      }
      int k = 0;
      fwd.push_back(region_forward(first, last, &k));
      fwd.back().cls = KernelClass::kFused;
      fwd_kernels += k;
      // Backward of the region: gradients in and out, saved inputs read, weight reductions.
      int reductions = 0;
      bool any_grad = false;
      for (std::size_t x = first; x <= last; ++x) {
        if (!plans_[x].grad) continue;
        any_grad = true;
        const Op& op = m_.ops[x];
        if (kReductions.count(op.name)) ++reductions;
        if (op.name == "native_layer_norm" || op.name == "native_group_norm" || op.name == "native_batch_norm")
          ++reductions;
      }
      if (any_grad) {
        const int kernels = std::max(1, reductions);
        Kernel kk = memory(2 * fwd.back().bytes);
        kk.time = std::max(kk.time, kernels * r_.min_kernel_s);
        kk.cls = KernelClass::kFused;
        bwd.push_back(kk);
        bwd_kernels += kernels;
      }
      for (std::size_t x = first; x <= last; ++x)
        for (std::size_t w : plans_[x].weight_casts) {
          fwd.push_back(memory(6.0 * static_cast<double>(m_.parameters[w].numel())));
          bwd.push_back(memory(6.0 * static_cast<double>(m_.parameters[w].numel())));
          fwd.back().cls = bwd.back().cls = KernelClass::kCast;
          ++fwd_kernels;
          ++bwd_kernels;
        }
      ++i;
      continue;
    }
    // Compiled, a product or convolution between regions is its own kernel; casts fold into
    // the regions around it.
    const std::size_t before_f = fwd.size(), before_b = bwd.size();
    forward_kernels(i, fwd, !ctx_.mode.compile);
    backward_kernels(i, bwd, !ctx_.mode.compile);
    for (std::vector<Kernel>* ks : {&fwd, &bwd})
      for (std::size_t j = ks == &fwd ? before_f : before_b; j < ks->size(); ++j)
        if (!(*ks)[j].cls) (*ks)[j].cls = kernel_class(m_.ops[i], (*ks)[j].call);
    fwd_kernels += static_cast<int>(fwd.size() - before_f);
    bwd_kernels += static_cast<int>(bwd.size() - before_b);
    ++i;
  }
  // AccumulateGrad into a gradient that is still there (zero_grad(set_to_none=False) filled it
  // with zeros, or an earlier micro-step summed into it): variable_grad += new_grad, one in-place add per parameter
  // (torch/csrc/autograd/ functions/accumulate_grad.h, accumulateGrad's branch for a defined gradient with grad mode
  // off); a gradient set to None takes new_grad itself, no kernel. Read twice, written once.
  if (ctx_.grads_defined && ctx_.accumulate_in_backward) {
    for (std::size_t p : l.params) {
      const Parameter& param = m_.parameters[p];
      if (!param.requires_grad || owner_of_grad_[p] != static_cast<std::size_t>(&l - m_.layers.data())) continue;
      const double element =
          ctx_.mode.master_weights ? static_cast<double>(low_) : static_cast<double>(dtype_bytes(param.dtype));
      Kernel add = memory(3.0 * element * static_cast<double>(param.numel()));
      add.call = HostCall::kAccumulate;
      add.cls = KernelClass::kGradSum;
      bwd.push_back(add);
      ++bwd_kernels;
    }
  }
  // Eager, the host pays each ATen call by its class (host_costs.hpp); compiled, each generated
  // kernel's launch from the wrapper.
  const bool compiled = ctx_.mode.compile;
  const auto total = [r = r_, compiled](const std::vector<Kernel>& ks, int kernels) {
    KernelCost k;
    double gpu = 0, host = 0;
    for (const Kernel& x : ks) {
      host += r.host.of(x.call);
      k.flops += x.flops;
      k.bytes += x.bytes;
      gpu += x.time;
      k.class_s[static_cast<std::size_t>(x.cls.value_or(KernelClass::kElementwise))] += x.time;
      k.load.sm_s += x.sm;
      k.load.sm_held_s += x.sm_held;
      k.load.hbm_s += x.hbm;
      if (x.misaligned) {
        k.misaligned_s += x.time;
        ++k.misaligned_kernels;
      }
      if (x.winograd) {
        k.winograd_s += x.time;
        ++k.winograd_kernels;
      }
    }
    k.load.gpu_s = kernels == 0 ? 0.0 : gpu;
    k.load.hbm_demand = r.memory;
    k.kernels = kernels;
    k.host_s = compiled ? kernels * r.compiled_kernel_s : host;
    // The host issues the layer's kernels one by one while the GPU runs them: the layer keeps
    // its stream busy for the longer of the two.
    k.gpu_s = kernels == 0 ? 0.0 : gpu;
    k.time_s = kernels == 0 ? 0.0 : std::max(gpu, k.host_s);
    return k;
  };
  c.forward = total(fwd, fwd_kernels);
  c.backward = total(bwd, bwd_kernels);
  c.saved_bytes = saved_bytes(l);
  return c;
}

double OpCoster::saved_bytes(const Layer& l) const {
  double bytes = 0;
  for (const SavedTensor& st : l.saved) {
    const std::size_t saver = st.saver;
    if (saver < plans_.size() && (plans_[saver].skipped || plans_[saver].flash)) continue;
    // A parameter or buffer that autograd saves (BatchNorm's running statistics) is the model's,
    // counted with it: no activation memory (counted twice until 2026-12-02).
    if (st.ref.kind == OpRef::Kind::kParameter || st.ref.kind == OpRef::Kind::kBuffer) continue;
    if (st.ref.kind == OpRef::Kind::kOp) {
      const Plan& prod = plans_[st.ref.index];
      if (prod.skipped) continue;  // a score tensor a fused attention kernel never makes
      // Compiled: a tensor made and used inside one fused region is recomputed, not kept.
      if (ctx_.mode.compile && prod.region >= 0) {
        bool internal = true;
        for (std::size_t c : consumers_[st.ref.index])
          if (plans_[c].region != prod.region) internal = false;
        if (internal) continue;
      }
    }
    int b = st.bytes > 0 ? st.bytes : ref_bytes(st.ref);
    // A lower-precision op keeps its cast input (autocast saves the cast copy). The op that made the
    // tensor may keep its float32 result too (softmax, log_softmax: their backward reads it; the
    // model file names one saver per tensor): then both copies stay, as in GPT-2's attention without
    // dropout, where softmax's float32 probabilities and their bf16 copy for att @ v are both kept
    // (12 x 805 MB at B=16, T=1024; measured on the H100/H200, validation/gpu/).
    if (st.bytes == 0 && autocast_ && saver < m_.ops.size() && kLowerPrecision.count(m_.ops[saver].name)) {
      if (st.ref.kind == OpRef::Kind::kOp) {
        const std::string& maker = m_.ops[st.ref.index].name;
        const bool float32 = ref_bytes(st.ref) == 4;  // so the product's copy is another tensor
        if (float32 && (maker == "_softmax" || kReadsResult.count(maker))) bytes += ev(st.elements) * 4;
      }
      b = 2;
    }
    bytes += ev(st.elements) * b;
  }
  // Fused attention keeps q, k, v, the output and the row log-sum-exp (fp32).
  for (std::size_t i = l.first_op; i < l.first_op + l.op_count; ++i) {
    if (!plans_[i].flash) continue;
    const AttentionCore& a = *m_.ops[i].attention;
    const double heads = ev(a.heads), q = static_cast<double>(a.q_len.eval(t_)),
                 kv = static_cast<double>(a.kv_len.eval(t_)), d = static_cast<double>(a.head_dim.eval(t_));
    bytes += heads * d * (2 * q + 2 * kv) * low_ + 4 * heads * q;
  }
  // Autocast's weight copies are kept for backward: a weight that requires grad has its copy
  // cached (autocast_mode.cpp cached_cast: leaves that require grad only) and saved; a frozen
  // weight's copy is a temporary, kept only where its op saves it for the input's gradient (the
  // op's output requires grad), and freed after forward where nothing before it does (a frozen
  // backbone's first layers: measured on PyTorch 1.13 with saved_tensors_hooks, a new user's
  // report).
  for (std::size_t i = l.first_op; i < l.first_op + l.op_count; ++i)
    for (std::size_t w : plans_[i].weight_casts)
      if (m_.parameters[w].requires_grad || plans_[i].grad)
        bytes += 2.0 * static_cast<double>(m_.parameters[w].numel());
  return bytes;
}

KernelClass kernel_class(const Op& op, HostCall call) {
  const std::string& n = op.name;
  const auto has = [&n](std::string_view part) { return n.find(part) != std::string::npos; };
  if (has("norm")) return KernelClass::kNorm;  // cuDNN's batch norm included
  // A library call's other kernels (a convolution's weight gradient and layout transposes, run
  // inside cudnn's call: HostCall::kInside) are the call's class.
  const bool library = call == HostCall::kInside;
  if (is_conv(op) && (call == HostCall::kCudnn || library)) return KernelClass::kConv;
  if (is_gemm(op) && (call == HostCall::kBlas || library)) return KernelClass::kGemm;
  if (has("softmax")) return KernelClass::kSoftmax;
  if (has("dropout")) return KernelClass::kDropout;
  if (n == "_to_copy" || n == "copy_" || n == "clone" || n == "contiguous" || n == "to") return KernelClass::kCast;
  return KernelClass::kElementwise;
}

}  // namespace op_detail

std::vector<int> module_calls(const Model& m) {
  std::vector<int> calls(m.layers.size(), 0);
  std::vector<std::string> entered;  // the module path the previous layer ran in
  const auto is_functional = [](const std::string& part) {
    return part.size() >= 2 && part.compare(0, 2, "fn") == 0 &&
           std::all_of(part.begin() + 2, part.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
  };
  for (std::size_t i = 0; i < m.layers.size(); ++i) {
    std::vector<std::string> path;
    const std::string& name = m.layers[i].name;
    for (std::size_t from = 0; from <= name.size();) {
      const std::size_t dot = std::min(name.find('.', from), name.size());
      path.push_back(name.substr(from, dot - from));
      from = dot + 1;
    }
    std::string& last = path.back();
    if (const std::size_t colon = last.find(':'); colon != std::string::npos) last.resize(colon);  // a call again
    const bool functional = is_functional(last);
    if (functional) path.pop_back();  // the module's own code between its children's calls
    std::size_t common = 0;
    while (common < std::min(entered.size(), path.size()) && entered[common] == path[common]) ++common;
    int n = static_cast<int>(path.size() - common);
    if (!functional && n == 0) n = 1;  // the same module called again
    calls[i] = n + (i == 0 ? 1 : 0);   // and the model's own call before its first layer
    entered = std::move(path);
  }
  return calls;
}

ModelCost op_model_cost(const Model& model, const ComputeContext& ctx) {
  if (ctx.gpu == nullptr) throw std::invalid_argument("op_model_cost: ComputeContext has no GPU");
  return op_detail::OpCoster(model, ctx).run();
}

}  // namespace gradsync
