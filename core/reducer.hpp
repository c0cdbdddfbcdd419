// reducer.hpp: DDP's Reducer, event-driven as in c10d (reducer.cpp).
//
// The DDP step driver calls it where PyTorch does: prepare_for_forward at a forward with grad
// enabled (the bucket rebuild happens here, once), prepare_for_backward after a forward that
// will sync (arms the hooks; with find_unused_parameters walks the autograd graph),
// autograd_hook(p) when backward has accumulated parameter p's gradient, and backward_done at
// the end of backward (autograd's queued callback, which finalizes).
//
// autograd_hook copies the gradient into its bucket slot and multiplies it by 1/n in the same
// kernel (an in-place divide with gradient_as_bucket_view; a plain copy when a comm hook divides);
// a bucket whose last gradient arrived is launched only when every lower bucket has been, on the
// process group's comm stream (which first waits for the compute stream). After the last bucket,
// with find_unused_parameters, the used-parameter map is allreduced. Finalize makes the compute
// stream wait for every bucket and copies the results back into .grad (not with
// gradient_as_bucket_view).
//
//   Reducer r(model, opts, dev, pg, host, costs);
//   r.prepare_for_forward(); ... r.prepare_for_backward();
//   for each gradient ready: r.autograd_hook(p);
//   r.backward_done();
#pragma once

#include <cstdint>
#include <vector>

#include "core/backend.hpp"
#include "core/bucket_plan.hpp"
#include "core/comm_hook.hpp"
#include "core/cost_model.hpp"
#include "core/step_model.hpp"

namespace gradsync {

// DdpOptions: DistributedDataParallel's arguments that change a step.
struct DdpOptions {
  BucketOptions buckets;
  bool gradient_as_bucket_view = false;
  bool broadcast_buffers = true;
  // allreduce_after_backward: the buckets are reduced only once backward has finished (apex's
  // DDP(delay_allreduce=True); DDP under no_sync() followed by a manual allreduce), in order.
  bool allreduce_after_backward = false;
  CommHook hook;
};

// unfinished_reduction_error: PyTorch's error at the forward after a backward in which `missing`
// ("index (name)" of each parameter) got no gradient, without find_unused_parameters
// (c10d reducer.cpp ensure_prior_reduction_finished), as rank `rank` raises it.
std::string unfinished_reduction_error(int rank, const std::vector<std::string>& missing);

class Reducer {
 public:
  Reducer(const StepModel& model, const DdpOptions& opts, Device& dev, ProcessGroup& pg, Host& host,
          const CostModel& costs);

  // prepare_for_forward: a forward with grad enabled starts; `sync` says whether its backward
  // will reduce (not inside no_sync). Raises PyTorch's error when the previous synced backward
  // did not finish its reduction (a parameter that got no gradient without
  // find_unused_parameters); rebuilds the buckets when due (two blocking broadcasts of the plan).
  void prepare_for_forward(bool sync);
  // prepare_for_backward: after a forward that will sync; arms the hooks for the coming backward.
  void prepare_for_backward();
  // autograd_hook: parameter p's gradient is ready. Ignored unless armed (no_sync micro-steps).
  // Raises "Expected to mark a variable ready only once" for a second call in one backward.
  void autograd_hook(std::size_t p);
  // backward_done: end of backward; finalizes if every bucket was launched.
  void backward_done();

  // plan: the buckets in use now.
  const BucketPlan& plan() const { return plan_; }
  // synced_iterations: backward passes that reduced so far.
  int synced_iterations() const { return synced_; }
  // rebuilt: whether the buckets have been rebuilt.
  bool rebuilt() const { return has_rebuilt_; }

 private:
  bool should_rebuild() const { return opts_.buckets.rebuilds() && !has_rebuilt_; }
  bool static_graph_first_iteration() const { return opts_.buckets.static_graph && synced_ == 1; }
  void mark_variable_ready(std::size_t p);
  void mark_bucket_ready(std::size_t b);
  void launch(std::size_t b);
  void finalize();
  void set_plan(BucketPlan plan);

  const StepModel& model_;
  DdpOptions opts_;
  Device& dev_;
  ProcessGroup& pg_;
  Host& host_;
  const CostModel& costs_;

  BucketPlan plan_;
  std::vector<int> pending_;           // per bucket: gradients still to come this backward
  std::vector<WorkPtr> bucket_work_;   // per bucket: the work finalize waits for
  std::vector<bool> ready_;            // per parameter: marked ready this backward
  std::vector<std::size_t> unused_;    // parameters without gradient (find_unused or static graph)
  std::vector<std::size_t> recorded_;  // gradient-ready order recorded for the rebuild
  WorkPtr used_map_work_;
  std::size_t next_bucket_ = 0;
  int synced_ = 0;  // synced backward passes begun
  bool armed_ = false;
  bool marked_unused_ = false;
  bool finalize_queued_ = false;
  bool backward_finished_ = false;  // allreduce_after_backward: backward_done is launching the buckets
  bool require_finalize_ = false;
  bool has_rebuilt_ = false;
};

}  // namespace gradsync
