// dp_step.hpp: one DataParallel training step, as PyTorch runs it: one process, GPU0 the hub,
// nine phases every iteration (SEMANTICS.md §1):
//
//   1 dp:scatter        the batch split in ceil(B/n) chunks, GPU0 copies the others out
//   2 dp:replicate      parameters, then buffers, broadcast from GPU0 in 10 MiB groups that close
//                       once they reach 10 MiB (each flattened on GPU0 first); every module
//                       shallow-copied for every replica on the host
//   3 dp:parallel_apply one host thread per replica runs its forward
//   4 dp:gather         every replica's output copied into one tensor on GPU0
//   5 dp:loss           the loss on GPU0 only (unless forward computes it)
//   6 dp:scatter_grad   the output gradient from GPU0 back to the replicas
//   7 backward          replicas concurrently, one autograd thread per device
//   8 dp:reduce         gradients reduced to GPU0 at the end of backward, in chunks that close
//                       before they would exceed 10 MiB, each flattened on every GPU
//   9 optimizer         on GPU0 only
//
// With fewer samples than GPUs only ceil(B / ceil(B/n)) replicas work. Gradient accumulation
// repeats 1-8 per micro-step (DataParallel reduces every backward) before one optimizer step.
//
//   const int m = DpStep::replicas(global_batch, devices.size());   // the group must span m
//   DpStep step(model, costs, opts, global_batch, host, devices, local_group);
//   step.run_iteration(1);
#pragma once

#include <cstdint>
#include <vector>

#include "core/backend.hpp"
#include "core/cost_model.hpp"
#include "core/grad_scaler.hpp"
#include "core/step_model.hpp"

namespace gradsync {

// DpInput: where the batch is when model(inputs) is called. gpu0: moved there first, as in
// PyTorch's DataParallel tutorial (then scattered by peer copies); cpu: scattered straight from
// host memory.
enum class DpInput { kGpu0, kCpu };

struct DpStepOptions {
  DpInput input = DpInput::kGpu0;
  InputLocation location = InputLocation::kPageable;  // where the global batch starts (kGpu0)
  int grad_accum = 1;
  bool clip_grad_norm = false;  // clip_grad_norm_ on GPU0 before the optimizer
  bool clip_syncs = false;      // the host waits for GPU0 inside it (PyTorch < 1.10: clip_grad_norm_syncs)
  // accumulate_grads: the module's gradients are still there when the reduced ones arrive
  // (zero_grad(set_to_none=False)): AccumulateGrad adds them in place on GPU0, one kernel per
  // parameter; with None it takes the reduced tensors, no kernel. Micro-steps after the first of a
  // gradient accumulation add whatever zero_grad did.
  bool accumulate_grads = false;
  GradScalerOptions scaler;  // torch.cuda.amp.GradScaler on GPU0 (core/grad_scaler.hpp)
};

class DpStep {
 public:
  // devices: the GPUs of device_ids, GPU0 first; at least replicas(global_batch, n) of them.
  // group: a single-process group over the first replicas(...) devices (root 0 = GPU0).
  DpStep(const StepModel& model, const CostModel& costs, const DpStepOptions& opts, std::int64_t global_batch,
         Host& host, std::vector<Device*> devices, ProcessGroup& group);

  // replicas: how many GPUs get a chunk: torch.chunk into ceil(B/n)-sized pieces.
  static int replicas(std::int64_t global_batch, int devices);
  // chunk_sizes: the samples each replica gets.
  static std::vector<std::int64_t> chunk_sizes(std::int64_t global_batch, int devices);

  void run_iteration(int iteration);

 private:
  // micro_step: micro-step `micro` (0-based) of a gradient accumulation.
  void micro_step(int micro);

  const StepModel& model_;
  const CostModel& costs_;
  DpStepOptions opts_;
  std::int64_t global_batch_;
  Host& host_;
  std::vector<Device*> devices_;
  ProcessGroup& group_;
  std::vector<std::int64_t> chunks_;
};

}  // namespace gradsync
