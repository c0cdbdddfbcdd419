// host_costs.cpp: the host's time per eager ATen call (host_costs.hpp).
//
// Isolated calls: tools/gpu_reference.py's host loop (validation/gpu/h100-2026-11-27/reference.json,
// `host`): one H100 SXM, PyTorch 2.11 (CUDA 13.0, cuDNN 9.19), a 16-core Xeon VM; each call
// repeated on small CUDA tensors until the host, not the GPU, sets the pace, without profiling:
//   add 7.27 us, add_ 6.26, relu 8.70      -> kOp: 7.27 us (an out-of-place TensorIterator op)
//   mm 11.99, linear 12.06                 -> kBlas: 11.99 us
//   conv2d 27.01, batch_norm 26.95         -> kCudnn: 27.01 us
//   add_ 6.26                              -> loop_op_s (torch.optim's single-tensor loop)
// The H200's loop (same image, another VM) gave add 7.98, add_ 5.88, relu 7.62, linear 10.70.
//
// In a step a call costs more than in a loop that repeats it: every call of a model is a new
// shape, its cached cuDNN plan, allocator bins and the library's code cold in the CPU's caches,
// and the step adds what the loop has not: the autograd graph recorded in forward, its nodes run
// by the engine in backward (AccumulateGrad too). `in_model` scales the isolated costs to steps
// that the host, not the GPU, set (un-profiled): chosen from the training cases where the host
// decides, ResNet-50 at batch 1 and 4 (torchbench's eager V100 rows, PyTorch 1.11; the H200's
// 31.0 and 31.6 ms, PyTorch 2.11, validation/gpu/h200-2026-11-27/reference.json), as the factor of
// least median |error| over them; README, "Host time", has the table. 3.1 until AccumulateGrad's
// add_ into gradients that zero_grad(set_to_none=False) left (kAccumulate) was counted in the
// torchbench rows (PyTorch 1.11); re-chosen by the same rule with it: 3.0.
//
// View calls (view, transpose, t, expand, slice, split, detach, ...: an alias of their input, no
// kernel) and the backward node each view of a tensor requiring grad adds: view_s, 7.6 us in a
// step. From the same machines' profiled steps (profile.json.gz of validation/gpu/h200-2026-11-27
// and h100-2026-11-27, torch.profiler, PyTorch 2.11): the self host time of every view-family aten
// op in a step (the call and what it nests, as_strided), over the view calls that the zoo's model
// file records for that step (forward and backward: nanogpt 438 + 388, bert-large 901 + 891):
//   H200: gpt2 bf16 6.40 us, fp32 7.53, tf32 7.79; bert-large bf16 8.49
//   H100: gpt2 bf16 6.52, fp32 8.89; bert-large bf16 8.61 and 7.39 (a second call), fp16 4.51,
//   tf32 7.71                                                        -> median 7.62 us
// Already a cost in a step, so not scaled by in_model; an upper bound, as the profiler's own time per
// recorded call is in it and the optimizer's views are counted with the model's. Not used: the
// GPT-2 step at T=128, the check of README "Host time". In a loop on this development machine's
// CPU (PyTorch 1.13, CPU tensors: the same ATen code, no device work) a view costs 0.8-3.6 us alone.
#include "models/host_costs.hpp"

namespace gradsync {

double OpHostCosts::of(HostCall c) const {
  switch (c) {
    case HostCall::kOp:
      return op_s * in_model;
    case HostCall::kBlas:
      return blas_s * in_model;
    case HostCall::kCudnn:
      return cudnn_s * in_model;
    case HostCall::kInside:
      return 0;
    case HostCall::kAccumulate:
      return loop_op_s;
  }
  return 0;
}

OpHostCosts op_host_costs() {
  OpHostCosts h;
  h.op_s = 7.27e-6;
  h.blas_s = 11.99e-6;
  h.cudnn_s = 27.01e-6;
  h.loop_op_s = 6.26e-6;  // add_
  h.view_s = 7.6e-6;
  h.in_model = 3.0;
  return h;
}

}  // namespace gradsync
