// bucket_plan.cpp: c10d's compute_bucket_assignment_by_size and DDP's initial and rebuilt plans.
#include "core/bucket_plan.hpp"

#include <algorithm>
#include <limits>
#include <map>

namespace gradsync {
namespace {

// kInfiniteLimit: sys.maxsize, DDP's limit for "one bucket of everything".
constexpr Bytes kInfiniteLimit = std::numeric_limits<Bytes>::max();

Bytes mb_to_bytes(double mb) { return static_cast<Bytes>(mb * 1024.0 * 1024.0); }

// plan_from maps c10d's buckets (indexes into `params`) to a BucketPlan over the model.
BucketPlan plan_from(const StepModel& model, const std::vector<std::size_t>& params,
                     const std::vector<AssignedBucket>& assigned) {
  BucketPlan plan;
  plan.bucket_of.assign(model.params.size(), -1);
  for (const AssignedBucket& a : assigned) {
    Bucket b;
    b.size_limit = a.size_limit;
    for (std::size_t i : a.indices) {
      const std::size_t p = params[i];
      b.params.push_back(p);
      b.bytes += model.params[p].bytes();
      b.dtype = model.params[p].dtype;
      plan.bucket_of[p] = static_cast<int>(plan.buckets.size());
    }
    plan.buckets.push_back(std::move(b));
  }
  return plan;
}

std::vector<BucketTensor> tensors_of(const StepModel& model, const std::vector<std::size_t>& params) {
  std::vector<BucketTensor> t;
  t.reserve(params.size());
  for (std::size_t p : params)
    t.push_back({model.params[p].bytes(), model.params[p].dtype, model.params[p].sparse_grad});
  return t;
}

}  // namespace

Bytes BucketOptions::bucket_cap_bytes() const {
  return bucket_cap_mb ? mb_to_bytes(*bucket_cap_mb) : kDefaultBucketCapBytes;
}

Bytes BucketOptions::first_bucket_bytes() const {
  if (first_bucket_mb) return mb_to_bytes(*first_bucket_mb);
  return bucket_cap_mb && first_bucket_follows_cap(pytorch) ? bucket_cap_bytes() : kDefaultFirstBucketBytes;
}

std::vector<AssignedBucket> compute_bucket_assignment_by_size(const std::vector<BucketTensor>& tensors,
                                                              const std::vector<Bytes>& bucket_size_limits,
                                                              const std::vector<std::size_t>& tensor_indices) {
  struct Accumulator {
    std::vector<std::size_t> indices;
    Bytes size = 0;
    Bytes size_limit = 0;
  };
  std::vector<AssignedBucket> result;
  std::map<DType, std::size_t> limit_position;  // per dtype: where in bucket_size_limits
  std::map<DType, Accumulator> buckets;
  std::vector<DType> keys_inserted;  // the order each dtype first came
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const BucketTensor& t = tensors[i];
    const std::size_t index = tensor_indices.empty() ? i : tensor_indices[i];
    if (t.sparse) {
      result.push_back({{index}, kNoSizeLimit});
      continue;
    }
    if (!buckets.contains(t.dtype)) keys_inserted.push_back(t.dtype);
    Accumulator& b = buckets[t.dtype];
    b.indices.push_back(index);
    b.size += t.bytes;
    std::size_t& pos = limit_position[t.dtype];  // starts at 0, the first limit
    b.size_limit = bucket_size_limits[pos];
    if (b.size >= b.size_limit) {
      result.push_back({std::move(b.indices), b.size_limit});
      b = Accumulator();
      if (pos + 1 < bucket_size_limits.size()) ++pos;
    }
  }
  // Leftovers: c10d walks its std::unordered_map<BucketKey, BucketAccumulator> here. libstdc++'s
  // (PyTorch's Linux builds) links each new key in at the front of its list while the table has
  // fewer elements than its first rehash threshold (13 buckets from the first insertion), so a
  // handful of dtype/device keys come back newest first: the reverse of their first tensor's
  // order. Only the rebuilt plan keeps this order (the initial one is sorted below); it decides
  // which leftover bucket launches first (a float32 and a float64 bucket: float32's when a float32
  // tensor was seen after the first float64 one).
  for (auto k = keys_inserted.rbegin(); k != keys_inserted.rend(); ++k) {
    const Accumulator& b = buckets.at(*k);
    if (!b.indices.empty()) result.push_back({b.indices, b.size_limit});
  }

  if (tensor_indices.empty()) {
    std::stable_sort(result.begin(), result.end(), [](const AssignedBucket& a, const AssignedBucket& b) {
      return *std::min_element(a.indices.begin(), a.indices.end()) <
             *std::min_element(b.indices.begin(), b.indices.end());
    });
  }
  return result;
}

BucketPlan initial_buckets(const StepModel& model, const BucketOptions& opts) {
  const std::vector<std::size_t> params = model.trainable();
  std::vector<Bytes> limits;
  if ((opts.static_graph || !opts.find_unused_parameters) && single_initial_bucket(opts.pytorch)) {
    limits = {kInfiniteLimit};
  } else {
    // [1 MiB, cap] by default; [cap, cap], which is [cap], when bucket_cap_mb is given.
    limits = {opts.first_bucket_bytes(), opts.bucket_cap_bytes()};
  }
  std::vector<AssignedBucket> assigned = compute_bucket_assignment_by_size(tensors_of(model, params), limits);
  // DDP reverses the buckets: the last-registered parameters are expected to be ready first.
  std::reverse(assigned.begin(), assigned.end());
  return plan_from(model, params, assigned);
}

BucketPlan rebuilt_buckets(const StepModel& model, const std::vector<std::size_t>& ready, const BucketOptions& opts) {
  std::vector<std::size_t> order = ready;
  if (opts.last_bucket_cap) std::reverse(order.begin(), order.end());
  std::vector<std::size_t> positions(order.size());
  for (std::size_t i = 0; i < order.size(); ++i) positions[i] = i;
  std::vector<AssignedBucket> assigned = compute_bucket_assignment_by_size(
      tensors_of(model, order), {opts.first_bucket_bytes(), opts.bucket_cap_bytes()}, positions);
  // With DDP_SET_LAST_BUCKET_CAP the buckets were built from the reversed order: turn them back.
  if (opts.last_bucket_cap) std::reverse(assigned.begin(), assigned.end());
  return plan_from(model, order, assigned);
}

std::vector<std::size_t> rebuild_order(const StepModel& model) {
  std::vector<std::size_t> order = ready_order(model);
  for (std::size_t p : model.trainable())
    if (model.params[p].unused) order.push_back(p);
  return order;
}

BucketSchedule bucket_schedule(const StepModel& model, const BucketOptions& opts) {
  BucketSchedule s;
  s.initial = initial_buckets(model, opts);
  s.rebuild_iteration = opts.rebuild_iteration();
  s.rebuilt = s.rebuild_iteration != 0 ? rebuilt_buckets(model, rebuild_order(model), opts) : s.initial;
  return s;
}

}  // namespace gradsync
