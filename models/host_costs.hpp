// host_costs.hpp: what the host spends issuing an eager PyTorch step, per ATen call and by what the
// call runs (host_costs.cpp has the measurements and how they were chosen).
//
//   const OpHostCosts h = op_host_costs();
//   h.of(HostCall::kCudnn);   // one cuDNN convolution or batch norm call, forward or backward
//
// A layer's host time is the sum over its calls (op_cost.cpp); a kernel that a call launches
// beside its first (cuDNN's layout transposes, batch norm's second pass, a weight gradient that
// convolution_backward computes in the same call) costs nothing more (HostCall::kInside).
#pragma once

namespace gradsync {

// HostCall: what an eager ATen call runs, which sets its host cost.
enum class HostCall {
  kOp,         // an ATen op launching its own kernel: TensorIterator ops, casts, copies, reductions
  kBlas,       // a cuBLAS product (mm, addmm, bmm) or a fused attention kernel
  kCudnn,      // a cuDNN call: a convolution, its backward, batch norm forward or backward
  kInside,     // a further kernel of the call before it in the same op
  kAccumulate  // AccumulateGrad's add_ into a gradient still there: the engine repeats one
               // in-place op over the parameters, from C++, as torch.optim's loop does from
               // Python: the isolated add_ (loop_op_s), not scaled to a model's calls
};

// OpHostCosts: seconds per call of each class on the host, in a training step.
struct OpHostCosts {
  double op_s = 0;
  double blas_s = 0;
  double cudnn_s = 0;
  // loop_op_s: an in-place op that a Python loop repeats over the parameters under no_grad
  // (torch.optim's single-tensor loop, clip_grad_norm_ before foreach): the isolated cost, as
  // measured, without `in_model`.
  double loop_op_s = 0;
  // view_s: a view call (view, transpose, t, expand, slice, ...: no kernel) or the backward
  // node it adds, in a step, as profiled (not scaled by in_model).
  double view_s = 0;
  // in_model: how much more a call costs inside a model's step than in a loop that repeats it
  // (the factor applied to the isolated costs).
  double in_model = 1;
  double of(HostCall c) const;
};

// host_costs: PyTorch 2.x eager on a server CPU (host_costs.cpp).
OpHostCosts op_host_costs();

}  // namespace gradsync
