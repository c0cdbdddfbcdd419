// ddp_step.hpp: one DistributedDataParallel training step on one rank, as PyTorch runs it.
//
// Construction (once, iteration 0): the parameter-count allgather and shape-metadata broadcast
// of _verify_param_shape_across_processes, then parameters and buffers broadcast from rank 0 in
// 250 MiB buckets. Each iteration runs `grad_accum` micro-steps, all but the last inside
// no_sync: forward (buffer broadcast when the previous forward synced, input copy, every
// layer), backward (every layer in reverse, the Reducer's hooks as gradients become ready),
// then the optimizer on every rank and a synchronize (the host waits for the device, as a
// training loop that reads the loss does).
//
//   DdpStep step(model, costs, opts, /*batch=*/16, host, dev, pg);
//   step.construct();
//   for (int it = 1; it <= 3; ++it) step.run_iteration(it);
#pragma once

#include <cstdint>
#include <vector>

#include "core/backend.hpp"
#include "core/cost_model.hpp"
#include "core/grad_scaler.hpp"
#include "core/reducer.hpp"
#include "core/step_model.hpp"

namespace gradsync {

// DdpStepOptions: the DDP arguments plus how the training loop drives it.
struct DdpStepOptions {
  DdpOptions ddp;
  int grad_accum = 1;           // micro-steps per optimizer step; the first grad_accum - 1 in no_sync
  bool clip_grad_norm = false;  // clip_grad_norm_ between backward and the optimizer
  bool clip_syncs = false;      // the host waits for the GPU inside it (PyTorch < 1.10: clip_grad_norm_syncs)
  InputLocation input = InputLocation::kPageable;  // where each local batch starts
  GradScalerOptions scaler;                        // torch.cuda.amp.GradScaler (core/grad_scaler.hpp)
};

class DdpStep {
 public:
  DdpStep(const StepModel& model, const CostModel& costs, const DdpStepOptions& opts, std::int64_t batch, Host& host,
          Device& dev, ProcessGroup& pg);

  // construct: what DistributedDataParallel.__init__ communicates (iteration 0).
  void construct();
  // run_iteration: one optimizer step (1-based iteration number).
  void run_iteration(int iteration);

  const Reducer& reducer() const { return reducer_; }

 private:
  void forward(bool sync);
  void backward();
  ComputeOp layer_backward(std::size_t layer) const;
  // issue: a pass's ops, each on its own when the micro-step syncs, else as one compute_run
  // ("fwd:micro-step 2 of 8 (no_sync)").
  void issue(const std::vector<ComputeOp>& ops, bool sync, const char* pass);

  const StepModel& model_;
  const CostModel& costs_;
  DdpStepOptions opts_;
  std::int64_t batch_;
  Host& host_;
  Device& dev_;
  ProcessGroup& pg_;
  Reducer reducer_;
  std::vector<int> ready_layer_;
  std::int64_t graph_nodes_ = 0;
  bool previous_synced_ = true;  // require_forward_param_sync: the first forward syncs buffers
  int micro_ = 0;                // the micro-step running (0-based)
};

}  // namespace gradsync
