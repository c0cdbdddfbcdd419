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
  accumulate_gradients(i, out);
  if (p.flash) {
    out.push_back(attention(*op.attention, true));
    out.back().cls = KernelClass::kAttention;
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
    // convolution_backward is one call: the input's gradient, the weight's and the bias's, and
    // cuDNN's transposes, under its first kernel's host cost.
    const std::size_t first = out.size();
    const double w = s.in.size() > 1 ? s.in[1] : 0;
    if (p.in_grad[0]) out.push_back(conv(i, 1, n * ob + w * in_b(1) + s.in[0] * in_b(0)));
    if (op.in.size() > 1 && p.in_grad[1]) out.push_back(conv(i, 2, n * ob + s.in[0] * in_b(0) + w * 4));
    if (op.in.size() > 2 && p.in_grad[2]) out.push_back(memory(n * ob + s.in[2] * 4));
    if (transposes()) {  // the gradient in, the input's gradient out
      out.push_back(memory(2.0 * n * ob));
      if (p.in_grad[0]) out.push_back(memory(2.0 * s.in[0] * in_b(0)));
    }
    for (std::size_t j = first; j < out.size(); ++j) out[j].call = j == first ? HostCall::kCudnn : HostCall::kInside;
  } else if (op.name == "native_layer_norm" || op.name == "native_group_norm" || op.name == "native_batch_norm") {
    // The input's gradient (reading the gradient, the input and its statistics), then the
    // weight's and bias's (a reduction over the rows).
    const std::size_t first = out.size();
    out.push_back(memory(3 * n * ob));
    out.back().call = norm_call(op);  // one call (native_layer_norm_backward, cudnn_batch_norm_backward)
    const bool affine = std::any_of(p.in_grad.begin() + 1, p.in_grad.end(), [](bool g) { return g; });
    if (affine) out.push_back(inside(memory(2 * n * ob)));
    if (op.name == "native_batch_norm") bn_floor(out, first, n, bn_rate(true));
  } else if (op.name == "embedding" || op.name == "index_select") {
    // embedding_dense_backward: the table's gradient zeroed (fp32), the rows scattered into it.
    const double table = op.in.empty() ? 0 : s.in[0];
    out.push_back(memory(table * 4));
    out.push_back(inside(memory(2 * n * ob)));
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
  } else if (op.name == "_softmax") {
    // softmax_backward_cuda_out (aten/src/ATen/native/cuda/SoftMax.cu, unchanged from 1.x to 2.x):
    // `Tensor tmp = grad * output;` (a mul kernel), then host_softmax_backward reads tmp and the
    // output and writes the input's gradient. On the H100 (BERT-large, fp32 T x T scores) the two
    // took 7.17 and 7.15 ms over 24 layers: three tensors' traffic each.
    const double saved_out = n * ob;
    out.push_back(memory(2 * n * ob + saved_out));
    if (p.in_grad[0]) out.push_back(inside(memory(n * ob + saved_out + s.in[0] * in_b(0))));
  } else if (kPassThrough.count(op.name)) {
    // The gradient passes through, but a layout copy (clone/contiguous of a transposed view, or
    // matmul's reshape of one) returns it in the copy's layout: permuted back, it reaches the
    // view's own backward (ViewBackward: grad.reshape to the viewed tensor's shape), which must
    // copy it. On the H100 BERT-large's 4 forward copies per layer came with 4 in backward (193
    // direct_copy kernels a step).
    if (p.in_grad[0] && strided_op(i)) out.push_back(strided_kernel(memory(2.0 * n * ob), n));
  } else if (op.name == "add" || op.name == "sub" || op.name == "add_" || op.name == "cat" || op.name == "stack") {
    // Addition and concatenation pass gradients through; an input broadcast to the output's
    // shape (a bias, a position embedding) gets the gradient summed over the broadcast.
    for (std::size_t k = 0; k < op.in.size(); ++k)
      if (p.in_grad[k] && s.in[k] < n && op.name != "cat" && op.name != "stack") out.push_back(memory(n * ob));
  } else {
    // One kernel per input needing a gradient: it reads the output's gradient and what the op
    // saved (derivatives.yaml): the other inputs (a product's), its own input (gelu, silu, pow:
    // kReadsInput), its result (relu, tanh, rsqrt, log_softmax: kReadsResult), a dropout's mask or
    // a max pool's indices (its second output); and it writes the input's gradient.
    double own = 0;
    if (kReadsResult.count(op.name)) own += n * ob;
    if ((op.name == "native_dropout" || op.name == "max_pool2d_with_indices") && s.out.size() > 1)
      own += s.out[1] * p.out_bytes[1];
    for (std::size_t k = 0; k < op.in.size(); ++k) {
      if (!p.in_grad[k]) continue;
      double extra = own;
      for (std::size_t j = 0; j < op.in.size(); ++j)
        if (j != k) extra += s.in[j] * (op.in[j].bytes == 0 ? in_b(j) : op.in[j].bytes);
      if (kReadsInput.count(op.name)) extra += s.in[k] * in_b(k);
      out.push_back(memory(n * ob + s.in[k] * in_b(k) + std::min(extra, n * 8)));
    }
  }
  // The autograd engine hands each input the gradient in that input's dtype (torch/csrc/autograd/
  // engine.cpp, validate_outputs: grad.to(metadata.scalar_type()) where they differ): an op that
  // promoted a bf16 input to a float32 result (a bf16 branch added to the float32 residual, bf16
  // scores plus a float32 mask) sends that input a float32 gradient, cast back to bf16.
  if (!ctx_.mode.compile && pointwise_op(i) && casting_op(i))
    for (std::size_t k = 0; k < op.in.size(); ++k)
      if (p.in_grad[k] && op.in[k].bytes == 0 && p.in_bytes[k] != p.out_bytes.front())
        out.push_back(cast_kernel(s.in[k], p.out_bytes.front(), p.in_bytes[k]));
  // Autocast's casts differentiate into casts of the gradient back.
  if (casts)
    for (const auto& [cn, ft] : p.casts) out.push_back(cast_kernel(cn, ft.second, ft.first));
  for (std::size_t w : p.weight_casts) out.push_back(cast_kernel(static_cast<double>(m_.parameters[w].numel()), 2, 4));
}

// accumulate_gradients: autograd sums the gradients of a tensor that several ops read
// (torch/csrc/autograd/input_buffer.cpp, InputBuffer::accumulate: the first kept, each later one
// added into it, in place): for each of op i's outputs, one add (two read, one written) per
// gradient after the first. A transformer layer's input feeds the query, key and value products
// and the residual: three adds. Ops that read a part of it (q, k and v sliced from one packed
// projection: split, unbind) send their gradients to the slicing op's backward, which writes them
// into one tensor (SplitBackward, UnbindBackward: a cat, every element read and written once),
// and that is one gradient. Eager only: a compiled backward sums inside its fused regions.
void OpCoster::accumulate_gradients(std::size_t i, std::vector<Kernel>& out) const {
  if (ctx_.mode.compile) return;
  const Op& op = m_.ops[i];
  for (std::size_t k = 0; k < op.out.size(); ++k) {
    const OpRef me{OpRef::Kind::kOp, i, static_cast<int>(k)};
    const double elements = sizes_[i].out[k];
    int whole = 0, parts = 0;
    std::set<std::size_t> seen;
    for (std::size_t c : consumers_[i]) {
      if (!seen.insert(c).second) continue;  // a fused attention kernel passes q, k and v their gradients too
      const Op& user = m_.ops[c];
      for (std::size_t j = 0; j < user.in.size(); ++j) {
        if (!(user.in[j].ref == me) || j >= plans_[c].in_grad.size() || !plans_[c].in_grad[j]) continue;
        if (sizes_[c].in[j] < elements)
          ++parts;
        else
          ++whole;
      }
    }
    const double bytes = elements * plans_[i].out_bytes[k];
    if (parts > 0) out.push_back(memory(2.0 * bytes));
    const int grads = whole + (parts > 0 ? 1 : 0);
    for (int g = 1; g < grads; ++g) out.push_back(memory(3.0 * bytes));
  }
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
