// reducer.cpp: c10d's Reducer: gradient hooks, in-order bucket launches, finalize, rebuild.
#include "core/reducer.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.hpp"
#include "core/trace.hpp"

namespace gradsync {

Reducer::Reducer(const StepModel& model, const DdpOptions& opts, Device& dev, ProcessGroup& pg, Host& host,
                 const CostModel& costs)
    : model_(model), opts_(opts), dev_(dev), pg_(pg), host_(host), costs_(costs) {
  set_plan(initial_buckets(model, opts.buckets));
}

std::string unfinished_reduction_error(int rank, const std::vector<std::string>& missing) {
  return fmt::format(
      "Expected to have finished reduction in the prior iteration before starting a new one. This error "
      "indicates that your module has parameters that were not used in producing loss. You can enable unused "
      "parameter detection by passing the keyword argument `find_unused_parameters=True` to "
      "`torch.nn.parallel.DistributedDataParallel`. Parameter indices which did not receive grad for rank {}: {}",
      rank, fmt::join(missing, ", "));
}

void Reducer::set_plan(BucketPlan plan) {
  plan_ = std::move(plan);
  pending_.assign(plan_.buckets.size(), 0);
  bucket_work_.assign(plan_.buckets.size(), nullptr);
  ready_.assign(model_.params.size(), false);
}

void Reducer::prepare_for_forward(bool /*sync*/) {
  // rebuild_buckets() runs at every forward with grad enabled and first checks the prior
  // reduction (c10d: ensure_prior_reduction_finished).
  if (require_finalize_) {
    std::vector<std::string> missing;
    for (std::size_t p : model_.trainable())
      if (!ready_[p]) missing.push_back(fmt::format("{} ({})", p, model_.params[p].name));
    throw RuntimeError(unfinished_reduction_error(pg_.rank(), missing));
  }
  if (!should_rebuild() || recorded_.empty()) return;
  set_plan(rebuilt_buckets(model_, recorded_, opts_.buckets));
  recorded_.clear();
  has_rebuilt_ = true;
  // sync_bucket_indices: rank 0's plan as int32 [indices..., bucket count] and int32 [sizes],
  // two broadcasts, each waited for and copied to the CPU (the host blocks).
  const Bytes indices_bytes = 4 * (model_.trainable().size() + 1);
  const Bytes sizes_bytes = 4 * plan_.buckets.size();
  pg_.broadcast({"broadcast:bucket_indices", indices_bytes, DType::kInt32, -1}, 0)->wait();
  pg_.broadcast({"broadcast:bucket_sizes", sizes_bytes, DType::kInt32, -1}, 0)->wait();
}

void Reducer::prepare_for_backward() {
  ++synced_;
  armed_ = true;
  marked_unused_ = false;
  finalize_queued_ = false;
  next_bucket_ = 0;
  used_map_work_ = nullptr;
  std::fill(ready_.begin(), ready_.end(), false);
  std::fill(bucket_work_.begin(), bucket_work_.end(), nullptr);
  for (std::size_t b = 0; b < plan_.buckets.size(); ++b) pending_[b] = static_cast<int>(plan_.buckets[b].params.size());
  unused_.clear();
  const bool dynamic = opts_.buckets.find_unused_parameters && !opts_.buckets.static_graph;
  if (dynamic || (opts_.buckets.static_graph && synced_ > 1)) {
    for (std::size_t p : model_.trainable())
      if (model_.params[p].unused) unused_.push_back(p);
  }
}

void Reducer::autograd_hook(std::size_t p) {
  if (!armed_) return;  // expect_autograd_hooks_ is false outside a synced backward (no_sync)
  if (static_graph_first_iteration()) {
    // The first static-graph iteration only counts hooks; delay_all_reduce does the rest.
    if (ready_[p]) mark_variable_ready(p);  // raises
    ready_[p] = true;
    return;
  }
  if (!marked_unused_) {
    marked_unused_ = true;
    // Marked ready, not recorded for the rebuild: autograd_hook pushes only the parameter it was
    // called for (backward_done records these).
    for (std::size_t u : unused_) mark_variable_ready(u);
  }
  if (should_rebuild()) recorded_.push_back(p);
  mark_variable_ready(p);
}

void Reducer::mark_variable_ready(std::size_t p) {
  const ParamInfo& param = model_.params[p];
  if (ready_[p]) {
    throw RuntimeError(fmt::format(
        "Expected to mark a variable ready only once. Parameter at index {} with name {} has been marked as "
        "ready twice. This means that multiple autograd engine hooks have fired for this particular parameter "
        "during this iteration.",
        p, param.name));
  }
  ready_[p] = true;
  require_finalize_ = true;
  const int b = plan_.bucket_of[p];
  const double bytes = 2.0 * static_cast<double>(param.bytes());
  if (param.unused) {
    // No gradient: the bucket slot is zeroed (bucket_view.zero_()).
    ComputeOp op = costs_.memory("zero:" + param.name, static_cast<double>(param.bytes()), 1);
    op.bucket = b;
    dev_.compute(op);
  } else if (opts_.gradient_as_bucket_view && synced_ > 1) {
    // .grad already views the bucket: divide in place, or nothing when the hook divides.
    if (!hook_divides(opts_.hook)) {
      ComputeOp op = costs_.memory("div:" + param.name, bytes, 1);
      op.bucket = b;
      dev_.compute(op);
    }
  } else {
    // One kernel per parameter: copy into the bucket and multiply by 1/n (mul_out; before PyTorch
    // 1.6 a plain copy, the bucket divided once full).
    ComputeOp op = costs_.memory("copy_in:" + param.name, bytes, 1);
    op.bucket = b;
    dev_.compute(op);
  }
  if (--pending_[static_cast<std::size_t>(b)] == 0) {
    if (!divides_per_parameter(opts_.buckets.pytorch) && !hook_divides(opts_.hook)) {
      // Before PyTorch 1.6: the bucket is divided by the world size once it is full.
      const Bucket& bucket = plan_.buckets[static_cast<std::size_t>(b)];
      ComputeOp op = costs_.memory(bucket_event("div", b), 2.0 * static_cast<double>(bucket.bytes), 1);
      op.bucket = b;
      dev_.compute(op);
    }
    mark_bucket_ready(static_cast<std::size_t>(b));
  }
  if (!opts_.allreduce_after_backward && next_bucket_ == plan_.buckets.size() && !finalize_queued_) {
    if (opts_.buckets.find_unused_parameters && !opts_.buckets.static_graph) {
      used_map_work_ = pg_.allreduce({"allreduce:used_map", 4 * model_.trainable().size(), DType::kInt32, -1});
    }
    finalize_queued_ = true;
  }
}

void Reducer::mark_bucket_ready(std::size_t b) {
  // Buckets are reduced in sequence: a ready bucket waits for every lower one; after backward
  // when the reduction is delayed (backward_done launches them).
  if (opts_.allreduce_after_backward && !backward_finished_) return;
  if (b > next_bucket_) return;
  while (next_bucket_ < plan_.buckets.size() && pending_[next_bucket_] == 0) launch(next_bucket_++);
}

void Reducer::launch(std::size_t b) {
  const Bucket& bucket = plan_.buckets[b];
  std::vector<std::vector<std::int64_t>> shapes;
  for (std::size_t p : bucket.params) shapes.push_back(model_.params[p].shape);
  const int bi = static_cast<int>(b);
  bool after_collective = false;
  WorkPtr last;
  for (const HookStep& s : hook_steps(opts_.hook, shapes, pg_.size(), synced_, bucket.dtype)) {
    const std::string name = bucket_event(s.name, bi);
    if (s.kind == HookStep::Kind::kAllreduce || s.kind == HookStep::Kind::kAllgather) {
      const CollectiveOp op{name, s.bytes, s.dtype, bi};
      last = s.kind == HookStep::Kind::kAllreduce ? pg_.allreduce(op) : pg_.allgather(op);
      after_collective = true;
      continue;
    }
    ComputeOp op = s.kind == HookStep::Kind::kMatmul
                       ? costs_.matmul(name, s.flops, static_cast<double>(s.bytes), s.kernels)
                       : costs_.memory(name, static_cast<double>(s.bytes), s.kernels);
    op.bucket = bi;
    // The hook body runs in the autograd thread (compute stream); its callbacks run after a
    // collective, ordered behind it on the comm stream.
    WorkPtr w = dev_.compute(op, after_collective ? Stream::kComm : Stream::kCompute);
    if (after_collective) last = w;
  }
  bucket_work_[b] = last;
}

void Reducer::backward_done() {
  if (!armed_) return;
  if (static_graph_first_iteration()) {
    // delay_all_reduce: allreduce the used map, copy every gradient in, launch every bucket.
    used_map_work_ = pg_.allreduce({"allreduce:used_map", 4 * model_.trainable().size(), DType::kInt32, -1});
    std::fill(ready_.begin(), ready_.end(), false);
    for (std::size_t p : model_.trainable()) mark_variable_ready(p);
  }
  if (opts_.allreduce_after_backward) {
    // Every bucket is ready (its gradients copied in); reduce them in order now.
    backward_finished_ = true;
    mark_bucket_ready(next_bucket_);
    backward_finished_ = false;
    if (next_bucket_ == plan_.buckets.size() && !finalize_queued_) {
      if (opts_.buckets.find_unused_parameters && !opts_.buckets.static_graph) {
        used_map_work_ = pg_.allreduce({"allreduce:used_map", 4 * model_.trainable().size(), DType::kInt32, -1});
      }
      finalize_queued_ = true;
    }
  }
  if (finalize_queued_) {
    // mark_variable_ready's queued callback: with a static graph the parameters that got no
    // gradient join the rebuild order last, in registration order (c10d reducer.cpp:
    // "static_graph_after_first_iteration() && should_rebuild_buckets()": push_rebuilt_params for
    // each of unused_parameters_, which delay_all_reduce lists by index).
    if (opts_.buckets.static_graph && should_rebuild())
      for (std::size_t u : unused_) recorded_.push_back(u);
    finalize();
  }
  armed_ = false;
}

void Reducer::finalize() {
  for (const WorkPtr& w : bucket_work_)
    if (w) dev_.stream_wait(Stream::kCompute, *w);
  if (used_map_work_) {
    // local_used_map_.copy_(local_used_map_dev_) is a blocking device-to-host copy.
    used_map_work_->wait();
  }
  if (!opts_.gradient_as_bucket_view) {
    for (const Bucket& bucket : plan_.buckets) {
      for (std::size_t p : bucket.params) {
        const ParamInfo& param = model_.params[p];
        if (param.unused) continue;  // globally unused: .grad stays undefined
        ComputeOp op = costs_.memory("copy_out:" + param.name, 2.0 * static_cast<double>(param.bytes()), 1);
        op.bucket = plan_.bucket_of[p];
        dev_.compute(op);
      }
    }
  }
  require_finalize_ = false;
  finalize_queued_ = false;
}

}  // namespace gradsync
