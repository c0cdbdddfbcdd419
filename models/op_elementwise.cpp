// op_elementwise.cpp: the bounds of elementwise and batch norm kernels that DRAM does not set
// (OpCoster in op_coster.hpp: strided and casting loops, batch norm's reductions and its caller).
#include <string>
#include <vector>

#include "models/op_coster.hpp"

namespace gradsync::op_detail {

bool OpCoster::strided_op(std::size_t i) const {
  const Op& op = m_.ops[i];
  const Sizes& s = sizes_[i];
  if (ctx_.mode.compile || s.out.empty()) return false;
  if (op.name == "clone" || op.name == "contiguous") return true;
  // Reductions and normalisations have kernels of their own (their per-channel weights are not
  // a broadcast operand of an elementwise loop); products, convolutions and gathers likewise.
  if (!pointwise_op(i)) return false;
  for (std::size_t k = 0; k < op.in.size(); ++k)
    if (op.in[k].ref.kind != OpRef::Kind::kConstant && s.in[k] > 1 && s.in[k] < s.out[0]) return true;
  return false;
}

bool OpCoster::pointwise_op(std::size_t i) const {
  const Op& op = m_.ops[i];
  return !(is_gemm(op) || is_conv(op) || kIndexed.count(op.name) || kReductions.count(op.name) ||
           op.name.find("norm") != std::string::npos || op.name == "native_dropout");
}

bool OpCoster::casting_op(std::size_t i) const {
  const Op& op = m_.ops[i];
  const Plan& p = plans_[i];
  if (p.out_bytes.empty()) return false;
  for (std::size_t k = 0; k < op.in.size(); ++k)
    if (op.in[k].bytes == 0 && op.in[k].ref.kind != OpRef::Kind::kConstant && p.in_bytes[k] != p.out_bytes[0])
      return true;
  return false;
}

Kernel OpCoster::sm_bound(Kernel k, double seconds) const {
  if (!(seconds > k.time)) return k;
  k.time = seconds;
  k.hbm = 0;
  k.sm = k.time;
  k.sm_held = k.time * linear_stretch(sharing_.sms, held_);
  return k;
}

Kernel OpCoster::strided_kernel(Kernel k, double elements, bool casting) const {
  const double rate = (casting ? r_.strided_cast : r_.strided) * sm_clock_rate();
  return rate > 0 ? sm_bound(k, elements / rate) : k;
}

Kernel OpCoster::unrolled_kernel(Kernel k, double elements, double accesses) const {
  const double rate = r_.unrolled_cast * sm_clock_rate();
  return rate > 0 && !ctx_.mode.compile ? sm_bound(k, elements * accesses / rate) : k;
}

Kernel OpCoster::cast_kernel(double n, int from, int to) const {
  const Kernel k = memory(n * (from + to));
  Kernel out = from < to ? unrolled_kernel(k, n, 2) : k;
  out.cls = KernelClass::kCast;
  return out;
}

void OpCoster::bn_floor(std::vector<Kernel>& out, std::size_t first, double elements, double per_sm_clock) const {
  if (ctx_.mode.compile || first >= out.size() || sm_clock_rate() <= 0) return;
  const double floor = elements / (per_sm_clock * sm_clock_rate());
  double sum = 0;
  for (std::size_t j = first; j < out.size(); ++j) sum += out[j].time;
  if (!(floor > sum) || sum <= 0) return;
  for (std::size_t j = first; j < out.size(); ++j) {
    Kernel& k = out[j];
    k.time *= floor / sum;
    k.hbm = 0;
    k.sm = k.time;
    k.sm_held = k.time * linear_stretch(sharing_.sms, held_);
  }
}

HostCall OpCoster::norm_call(const Op& op) const {
  return op.name == "native_batch_norm" && cudnn_batch_norm() ? HostCall::kCudnn : HostCall::kOp;
}

double OpCoster::bn_rate(bool backward) const {
  if (ctx_.mode.channels_last) return backward ? r_.bn_backward_nhwc : r_.bn_forward;
  if (cudnn_batch_norm()) return backward ? r_.bn_backward_nchw : r_.bn_forward;
  return backward ? r_.bn_backward_native_nchw : r_.bn_forward_native_nchw;
}

}  // namespace gradsync::op_detail
