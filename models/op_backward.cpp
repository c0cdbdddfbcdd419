// op_backward.cpp: each op's backward kernels (PyTorch's derivatives.yaml) and torch.compile's
// fused regions (op_coster.hpp).
#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "models/op_coster.hpp"

namespace gradsync::op_detail {

// backward_kernels: op i's gradient kernels (PyTorch's derivatives.yaml), in its dtypes.
void OpCoster::backward_kernels(std::size_t i, std::vector<Kernel>& out, bool casts) const {
  const Op& op = m_.ops[i];
  const Plan& p = plans_[i];
  const Sizes& s = sizes_[i];
  if (!p.grad || p.skipped) return;
  if (p.flash) {
    out.push_back(attention(*op.attention, true));
    return;
  }
  const double n = s.out.front();
  const double ob = p.out_bytes.front();
  const auto in_b = [&](std::size_t k) { return static_cast<double>(p.in_bytes[k]); };
  if (is_gemm(op)) {
    // addmm(bias, A, B), baddbmm(C, A, B): the products' operands are the last two inputs.
    const std::size_t a = op.in.size() >= 3 ? op.in.size() - 2 : 0;
    const std::size_t bm = a + 1;
    const double batch = s.gemm[0], mm = s.gemm[1], nn = s.gemm[2], kk = s.gemm[3];
    const bool al = gemm_aligned(i);
    if (p.in_grad[a]) out.push_back(gemm(s.flops, (mm * nn + kk * nn) * ob + mm * kk * in_b(a), batch, mm, kk, al));
    if (p.in_grad[bm]) out.push_back(gemm(s.flops, (mm * nn + mm * kk) * ob + kk * nn * in_b(bm), batch, kk, nn, al));
    if (op.in.size() >= 3 && p.in_grad[0]) out.push_back(memory(n * ob + s.in[0] * in_b(0)));
  } else if (is_conv(op)) {
    const double w = s.in.size() > 1 ? s.in[1] : 0;
    if (p.in_grad[0]) out.push_back(conv(s.flops, n * ob + w * in_b(1) + s.in[0] * in_b(0)));
    if (op.in.size() > 1 && p.in_grad[1]) out.push_back(conv(s.flops, n * ob + s.in[0] * in_b(0) + w * 4));
    if (op.in.size() > 2 && p.in_grad[2]) out.push_back(memory(n * ob + s.in[2] * 4));
    if (transposes()) {  // the gradient in, the input's gradient out
      out.push_back(memory(2.0 * n * ob));
      if (p.in_grad[0]) out.push_back(memory(2.0 * s.in[0] * in_b(0)));
    }
  } else if (op.name == "native_layer_norm" || op.name == "native_group_norm" || op.name == "native_batch_norm") {
    // The input's gradient (reading the gradient, the input and its statistics), then the
    // weight's and bias's (a reduction over the rows).
    const std::size_t first = out.size();
    out.push_back(memory(3 * n * ob));
    const bool affine = std::any_of(p.in_grad.begin() + 1, p.in_grad.end(), [](bool g) { return g; });
    if (affine) out.push_back(memory(2 * n * ob));
    if (op.name == "native_batch_norm")
      bn_floor(out, first, n, ctx_.mode.channels_last ? r_.bn_backward_nhwc : r_.bn_backward_nchw);
  } else if (op.name == "embedding" || op.name == "index_select") {
    // embedding_dense_backward: the table's gradient zeroed (fp32), the rows scattered into it.
    const double table = op.in.empty() ? 0 : s.in[0];
    out.push_back(memory(table * 4));
    out.push_back(memory(2 * n * ob));
  } else if (op.name == "nll_loss_forward" || op.name == "nll_loss2d_forward") {
    out.push_back(memory(s.in[0] * in_b(0)));  // zeros, the targets' entries set
  } else if (op.name == "_to_copy") {
    out.push_back(memory(n * ob + s.in[0] * in_b(0)));
  } else if (op.name == "masked_fill" && p.in_grad[0]) {
    // grad.masked_fill(mask, 0) (derivatives.yaml): a clone of the gradient, then masked_fill_ over
    // the broadcast mask, as the forward.
    out.push_back(memory(2.0 * n * ob));
    const double bytes = 2.0 * n * ob + (op.in.size() > 1 ? s.in[1] * in_b(1) : 0.0);
    out.push_back(strided_op(i) ? strided_kernel(memory(bytes), n) : memory(bytes));
  } else if (kPassThrough.count(op.name)) {
    // The gradient passes through unchanged.
  } else if (op.name == "add" || op.name == "sub" || op.name == "add_" || op.name == "cat" || op.name == "stack") {
    // Addition and concatenation pass gradients through; an input broadcast to the output's
    // shape (a bias, a position embedding) gets the gradient summed over the broadcast.
    for (std::size_t k = 0; k < op.in.size(); ++k)
      if (p.in_grad[k] && s.in[k] < n && op.name != "cat" && op.name != "stack") out.push_back(memory(n * ob));
  } else {
    // One kernel per input needing a gradient: it reads the output's gradient and what the op
    // saved (the input or output, a mask) and writes the input's gradient.
    for (std::size_t k = 0; k < op.in.size(); ++k) {
      if (!p.in_grad[k]) continue;
      double extra = 0;
      for (std::size_t j = 0; j < op.in.size(); ++j)
        if (j != k) extra += s.in[j] * (op.in[j].bytes == 0 ? in_b(j) : op.in[j].bytes);
      out.push_back(memory(n * ob + s.in[k] * in_b(k) + std::min(extra, n * 8)));
    }
  }
  // Autocast's casts differentiate into casts of the gradient back.
  if (casts)
    for (const auto& [cn, ft] : p.casts) out.push_back(memory(cn * (ft.first + ft.second)));
  for (std::size_t w : p.weight_casts) out.push_back(memory(6.0 * static_cast<double>(m_.parameters[w].numel())));
}

// Compiled: a fused region reads what comes from outside it and writes what leaves it (read by
// another region or op, the saver of a tensor kept for backward among them); a tensor that only
// its own region reads is not written even when an op of the region saves it for backward:
// AOTAutograd's min-cut partitioner recomputes fusible ops in backward from the region's inputs
// rather than keep their outputs (functorch partitioners.py, min_cut_rematerialization_partition),
// as saved_bytes counts memory. Its backward reads the gradients of what left and the region's
// inputs, and writes the gradients of what came in.
Kernel OpCoster::region_forward(std::size_t first, std::size_t last, int* kernels) const {
  const int region = plans_[first].region;
  std::set<std::pair<int, std::size_t>> read;
  double bytes = 0;
  int reductions = 0;
  for (std::size_t i = first; i <= last; ++i) {
    const Op& op = m_.ops[i];
    if (kReductions.count(op.name)) ++reductions;
    for (std::size_t k = 0; k < op.in.size(); ++k) {
      const OpRef& r = op.in[k].ref;
      if (r.kind == OpRef::Kind::kOp && plans_[r.index].region == region) continue;
      if (r.kind == OpRef::Kind::kConstant) continue;
      const double n = read_elements(i, k);
      if (read.insert({static_cast<int>(r.kind) * 1000 + r.output, r.index}).second) bytes += n * plans_[i].in_bytes[k];
    }
    for (std::size_t k = 0; k < op.out.size(); ++k) {
      if (leaves_region(i, k, region)) bytes += sizes_[i].out[k] * plans_[i].out_bytes[k];
    }
  }
  *kernels = std::max(1, reductions);
  Kernel kk = memory(bytes);
  kk.time = std::max(kk.time, *kernels * r_.min_kernel_s);
  return kk;
}

bool OpCoster::leaves_region(std::size_t i, std::size_t k, int region) const {
  const OpRef me{OpRef::Kind::kOp, i, static_cast<int>(k)};
  const auto& cs = consumers_[i];
  if (cs.empty()) return k == 0;  // an output nothing reads: the layer's or the model's
  for (std::size_t c : cs) {
    if (plans_[c].region != region) {
      for (const OpInput& in : m_.ops[c].in)
        if (in.ref == me) return true;
    }
  }
  return false;
}

}  // namespace gradsync::op_detail
