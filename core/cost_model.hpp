// cost_model.hpp: what the strategy code asks about time, answered elsewhere. models/ answers
// with its roofline model (RooflineCostModel), a calibration refines it, tests answer with
// round numbers. The drivers never compute a duration themselves.
//
//   ComputeOp op = costs.forward(layer, /*batch=*/16);   // "fwd:<layer>", flops, bytes, time_s
//   ComputeOp cp = costs.memory("copy_in:fc.bias", 2.0 * bytes, 1);
#pragma once

#include <cstdint>
#include <string>

#include "core/backend.hpp"

namespace gradsync {

// HostCosts: CPU-side costs of the framework, per occurrence.
struct HostCosts {
  // module_copy_s 20 us: DataParallel's replicate() makes a shallow copy of every nn.Module for
  // every replica (_replicate_for_data_parallel: a new object, its __dict__, its parameter and
  // buffer dicts), Python work of the order of tens of microseconds per module.
  double module_copy_s = 20e-6;
  // thread_start_s 100 us: parallel_apply starts and joins one Python thread per replica.
  double thread_start_s = 100e-6;
  // graph_node_s 1 us: DDP with find_unused_parameters walks the autograd graph from the
  // outputs after every forward (a C++ traversal, about a microsecond per node).
  double graph_node_s = 1e-6;
  // coalesce_s 10 us: Python work per coalesced group (flatten, unflatten bookkeeping) in
  // DataParallel's broadcast_coalesced and reduce_add_coalesced.
  double coalesce_s = 10e-6;
  // python_share 0.5: the part of an eager op's host time spent in Python (the module's
  // forward, argument parsing) and so under the GIL; PyTorch's generated bindings release the GIL
  // around the C++ dispatch and launch (gil_scoped_release in tools/autograd/templates/
  // python_torch_functions.cpp and python_variable_methods.cpp). DataParallel's replica threads
  // launch their forwards concurrently and take turns for that share.
  double python_share = 0.5;
  // collective_call_s 20 us: the host's part of one collective call, five CUDA calls at about a
  // kernel launch each (Efficiency::launch_s, 4 us): ProcessGroupNCCL's syncStreams records an
  // event on the current stream and makes NCCL's stream wait for it (cudaEventRecord,
  // cudaStreamWaitEvent), NCCL launches its kernel (enqueue.cc ncclLaunchKernel), c10d records the
  // work's end event (cudaEventRecord), and work.wait() makes the current stream wait for it
  // (cudaStreamWaitEvent). Spent by the simulator only (sim/simulate.cpp): real runs make the calls.
  double collective_call_s = 20e-6;
};

// CostModel: durations and sizes of the work a step issues on one device.
class CostModel {
 public:
  virtual ~CostModel() = default;
  // forward and backward of layer `layer` (index into StepModel::layers) for `batch` samples.
  virtual ComputeOp forward(std::size_t layer, std::int64_t batch) const = 0;
  virtual ComputeOp backward(std::size_t layer, std::int64_t batch) const = 0;
  // backward_into: the backward of a later micro-step of a gradient accumulation, whose
  // AccumulateGrad adds into the gradients the earlier ones summed (as backward when the cost
  // model has no such add).
  virtual ComputeOp backward_into(std::size_t layer, std::int64_t batch) const { return backward(layer, batch); }
  // optimizer is one optimizer step over every trainable parameter.
  virtual ComputeOp optimizer() const = 0;
  // clip_grad_norm is torch.nn.utils.clip_grad_norm_'s norm over every trainable gradient (the
  // clip coefficient included), clip_grad_scale its product of every gradient with the coefficient.
  virtual ComputeOp clip_grad_norm() const = 0;
  virtual ComputeOp clip_grad_scale() const = 0;
  // memory is `kernels` memory-bound kernels touching `bytes` (read plus written).
  virtual ComputeOp memory(const std::string& name, double bytes, int kernels) const = 0;
  // matmul is `kernels` fp32 matrix products doing `flops` in all and touching `bytes`
  // (PowerSGD's compression of gradients, which are fp32 whatever the autocast precision).
  virtual ComputeOp matmul(const std::string& name, double flops, double bytes, int kernels) const = 0;
  virtual const HostCosts& host() const = 0;
};

// implicit_loss: the loss of a model whose file has no loss layer (torchvision models: the
// training loop calls cross_entropy on the logits). Forward reads the logits and writes their
// log-softmax (2 kernels); backward reads and writes logits-sized gradients (2 kernels).
inline ComputeOp implicit_loss(const CostModel& costs, double output_bytes, bool backward) {
  return costs.memory(backward ? "bwd:loss" : "fwd:loss", 2.0 * output_bytes, 2);
}

}  // namespace gradsync
