// op_forward.cpp: each op's forward kernels in eager mode: its autocast casts, then the op
// (op_coster.hpp; the backward rules are in op_backward.cpp).
#include <vector>

#include "models/op_coster.hpp"

namespace gradsync::op_detail {

void OpCoster::forward_kernels(std::size_t i, std::vector<Kernel>& out, bool casts) const {
  const Op& op = m_.ops[i];
  const Plan& p = plans_[i];
  const Sizes& s = sizes_[i];
  if (p.skipped) return;
  for (std::size_t w : p.weight_casts) out.push_back(cast_kernel(static_cast<double>(m_.parameters[w].numel()), 4, 2));
  if (casts)
    for (const auto& [n, ft] : p.casts) out.push_back(cast_kernel(n, ft.first, ft.second));
  if (p.flash) {
    out.push_back(attention(*op.attention, false));
    out.back().cls = KernelClass::kAttention;
    return;
  }
  double bytes = 0;
  for (std::size_t k = 0; k < op.in.size(); ++k) bytes += read_elements(i, k) * p.in_bytes[k];
  for (std::size_t k = 0; k < op.out.size(); ++k) bytes += s.out[k] * p.out_bytes[k];
  if (is_gemm(op)) {
    out.push_back(gemm(s.flops, bytes, s.gemm[0], s.gemm[1], s.gemm[2], gemm_aligned(i)));
  } else if (is_conv(op)) {
    out.push_back(conv(i, 0, bytes));
    if (transposes()) {
      out.push_back(inside(memory(2.0 * s.in[0] * p.in_bytes[0])));
      out.push_back(inside(memory(2.0 * s.out[0] * p.out_bytes[0])));
    }
  } else {
    // Batch norm in training reduces over the batch and the spatial positions, too many to hold
    // on chip, so it reads its input twice: the per-channel statistics first, then the
    // normalisation (PyTorch's aten/src/ATen/native/cuda/Normalization.cuh: batch_norm_stats,
    // then batch_norm_elemt; cuDNN's spatial batch norm forward is likewise two kernels).
    const std::size_t first = out.size();
    const bool bn = op.name == "native_batch_norm" && !op.in.empty();
    if (bn) {
      out.push_back(memory(read_elements(i, 0) * p.in_bytes[0]));
      out.back().call = norm_call(op);
    }
    // masked_fill out of place is a clone of its input, then masked_fill_ in place (ATen's
    // masked_fill: self.clone(), then masked_fill_ over the broadcast mask).
    if (op.name == "masked_fill" && !op.in.empty()) {
      out.push_back(memory(2.0 * s.out[0] * p.out_bytes[0]));
      out.push_back(strided_op(i) ? strided_kernel(memory(bytes), s.out[0]) : memory(bytes));
      return;
    }
    if (strided_op(i)) {
      out.push_back(strided_kernel(memory(bytes), s.out.empty() ? 0 : s.out[0], casting_op(i)));
      return;
    }
    // Contiguous operands of mixed dtypes (a bf16 result added to a float32 residual under
    // autocast) run the unrolled casting loop: each operand loaded and the result stored.
    if (!bn && pointwise_op(i) && casting_op(i)) {
      double operands = 1;
      for (const OpInput& in : op.in) operands += in.ref.kind != OpRef::Kind::kConstant ? 1 : 0;
      out.push_back(unrolled_kernel(memory(bytes), s.out[0], operands));
      return;
    }
    out.push_back(bn ? inside(memory(bytes)) : memory(bytes));
    if (bn) bn_floor(out, first, s.in[0], bn_rate(false));
  }
}

}  // namespace gradsync::op_detail
