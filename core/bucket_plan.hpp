// bucket_plan.hpp: which gradients DDP reduces together, as PyTorch decides it.
//
// compute_bucket_assignment_by_size is c10d's algorithm (reducer.cpp): per dtype a running
// bucket takes parameters until its size *reaches* the current limit (the parameter that crosses
// it stays in), then the limit advances through the list and stays on the last; a parameter that
// expects a sparse gradient gets a bucket of its own; without explicit indices the buckets are
// sorted by their smallest parameter index.
//
// DistributedDataParallel builds the initial buckets from model.parameters() with limits [inf]
// (one bucket) unless find_unused_parameters is set without static_graph ([1 MiB, cap], or
// [cap] when bucket_cap_mb is given), and reverses them. After the first synced backward (the
// second with static_graph) the Reducer rebuilds them once from the gradient-ready order with
// limits [first bucket, cap], never with find_unused_parameters, and not before PyTorch 1.6
// (SEMANTICS.md §2).
//
//   const BucketSchedule s = bucket_schedule(model, BucketOptions{});
//   s.at(1).buckets.size() == 1;   s.at(2).buckets[0].params  // the first gradients ready
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "core/dtype.hpp"
#include "core/pytorch_version.hpp"
#include "core/step_model.hpp"
#include "core/units.hpp"

namespace gradsync {

// kDefaultBucketCapBytes 25 MiB: PyTorch's default bucket_cap_mb.
inline constexpr Bytes kDefaultBucketCapBytes = 25 * kMiB;
// kDefaultFirstBucketBytes 1 MiB: torch.distributed._DEFAULT_FIRST_BUCKET_BYTES.
inline constexpr Bytes kDefaultFirstBucketBytes = 1 * kMiB;
// kNoSizeLimit: the limit c10d records for a sparse parameter's bucket of its own.
inline constexpr Bytes kNoSizeLimit = 0;

// BucketOptions: the DistributedDataParallel arguments (and environment) that shape buckets.
struct BucketOptions {
  // bucket_cap_mb: DDP's argument in MiB; unset means PyTorch's default of 25 with a 1 MiB first
  // bucket. Set explicitly, PyTorch >= 2.3 uses it for the first bucket too.
  std::optional<double> bucket_cap_mb;
  // first_bucket_mb: the first bucket's limit. Unset: 1 MiB (torch.distributed.
  // _DEFAULT_FIRST_BUCKET_BYTES) without bucket_cap_mb, the cap itself with it (PyTorch >= 2.3;
  // set 1 to reproduce older versions, which kept the 1 MiB bucket).
  std::optional<double> first_bucket_mb;
  // last_bucket_cap: DDP_SET_LAST_BUCKET_CAP=1, the small bucket goes last in the rebuilt plan.
  bool last_bucket_cap = false;
  bool find_unused_parameters = false;
  bool static_graph = false;
  // pytorch: the release whose rules apply (first bucket, first iteration's plan).
  PytorchVersion pytorch = kNewestPytorch;

  Bytes bucket_cap_bytes() const;
  Bytes first_bucket_bytes() const;
  // rebuilds: whether the Reducer rebuilds buckets after the first recorded backward (from 1.6).
  bool rebuilds() const { return rebuilds_buckets(pytorch) && (static_graph || !find_unused_parameters); }
  // rebuild_iteration: the iteration that first runs with rebuilt buckets (0: never).
  int rebuild_iteration() const { return !rebuilds() ? 0 : static_graph ? 3 : 2; }
};

// BucketTensor is what the assignment looks at: a tensor's bytes, dtype and sparsity.
struct BucketTensor {
  Bytes bytes = 0;
  DType dtype = DType::kFloat32;
  bool sparse = false;
};

// AssignedBucket is one bucket of c10d's result: tensor indices and the limit it was built with.
struct AssignedBucket {
  std::vector<std::size_t> indices;
  Bytes size_limit = 0;
};

// compute_bucket_assignment_by_size: c10d's function. tensor_indices (when not empty) gives
// each tensor's index, and the tensors are in gradient-ready order: no sort. Leftover buckets of
// several dtypes, which c10d emits in hash-map order, come out by their first tensor's position.
std::vector<AssignedBucket> compute_bucket_assignment_by_size(const std::vector<BucketTensor>& tensors,
                                                              const std::vector<Bytes>& bucket_size_limits,
                                                              const std::vector<std::size_t>& tensor_indices = {});

// Bucket is one DDP bucket: parameters (indexes into StepModel::params) in bucket order.
struct Bucket {
  std::vector<std::size_t> params;
  Bytes bytes = 0;
  Bytes size_limit = 0;
  DType dtype = DType::kFloat32;
};

// BucketPlan is the Reducer's buckets; bucket 0 is reduced first.
struct BucketPlan {
  std::vector<Bucket> buckets;
  // bucket_of[p] is parameter p's bucket, -1 for a parameter DDP does not reduce.
  std::vector<int> bucket_of;
};

// initial_buckets: the plan DistributedDataParallel's constructor gives the Reducer.
BucketPlan initial_buckets(const StepModel& model, const BucketOptions& opts);
// rebuilt_buckets: the Reducer's rebuild from the order in which gradients became ready
// (parameter indexes; the trainable ones, each once).
BucketPlan rebuilt_buckets(const StepModel& model, const std::vector<std::size_t>& ready, const BucketOptions& opts);

// BucketSchedule: the plan of each iteration.
struct BucketSchedule {
  BucketPlan initial;
  BucketPlan rebuilt;         // equal to initial when the Reducer never rebuilds
  int rebuild_iteration = 0;  // first iteration on `rebuilt` (0: never)
  const BucketPlan& at(int iteration) const {
    return rebuild_iteration != 0 && iteration >= rebuild_iteration ? rebuilt : initial;
  }
};

// rebuild_order: the order the Reducer records in the backward it rebuilds from:
// ready_order(model), then the parameters that get no gradient (static graph only) in
// registration order, which the end-of-backward callback pushes (c10d reducer.cpp).
std::vector<std::size_t> rebuild_order(const StepModel& model);

// bucket_schedule plans every iteration of `model` under `opts`.
BucketSchedule bucket_schedule(const StepModel& model, const BucketOptions& opts);

}  // namespace gradsync
