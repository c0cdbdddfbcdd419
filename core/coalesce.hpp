// coalesce.hpp: how PyTorch groups many small tensors into few large transfers, and the
// coalesced broadcast DDP uses for parameters and buffers.
//
// The two grouping rules differ and both matter (SEMANTICS.md §1):
//   coalesce_reaching          C++ take_tensors (DataParallel's broadcast_coalesced): a group
//                              closes once it *reaches* the limit, so it holds the tensor that
//                              crossed it;
//   coalesce_before_exceeding  Python _take_tensors (DataParallel's reduce_add_coalesced): a
//                              group closes *before* a tensor would exceed the limit; a tensor
//                              larger than the limit is a group of its own.
// Both group per dtype; groups still open at the end come out in the order their dtype was first
// seen.
//
//   coalesce_reaching({{6 MiB}, {6 MiB}, {1 MiB}}, 10 MiB) == {{0, 1}, {2}}
//   coalesce_before_exceeding({{6 MiB}, {6 MiB}, {1 MiB}}, 10 MiB) == {{0}, {1, 2}}
#pragma once

#include <string>
#include <vector>

#include "core/backend.hpp"
#include "core/cost_model.hpp"
#include "core/dtype.hpp"
#include "core/units.hpp"

namespace gradsync {

// kDataParallelBufferBytes 10 MiB: DataParallel's buffer_size for broadcast_coalesced and
// reduce_add_coalesced (torch/nn/parallel/comm.py, replicate.py).
inline constexpr Bytes kDataParallelBufferBytes = 10 * kMiB;
// kDdpBroadcastBucketBytes 250 MiB: DDP's broadcast_bucket_size for parameters at construction
// and buffers before forward.
inline constexpr Bytes kDdpBroadcastBucketBytes = 250 * kMiB;

struct CoalesceTensor {
  Bytes bytes = 0;
  DType dtype = DType::kFloat32;
};

using Groups = std::vector<std::vector<std::size_t>>;
Groups coalesce_reaching(const std::vector<CoalesceTensor>& tensors, Bytes limit);
Groups coalesce_before_exceeding(const std::vector<CoalesceTensor>& tensors, Bytes limit);

// group_bytes sums the bytes of one group.
Bytes group_bytes(const std::vector<CoalesceTensor>& tensors, const std::vector<std::size_t>& group);

// broadcast_coalesced is c10d's broadcast_coalesced as DDP calls it: buckets of at most `limit`
// (compute_bucket_assignment_by_size with [limit]), each flattened on the compute stream,
// broadcast from rank 0, and copied back into its tensors once done; at most two in flight.
// `name` names the broadcasts ("broadcast:buffers").
void broadcast_coalesced(const std::vector<CoalesceTensor>& tensors, Bytes limit, const std::string& name, Device& dev,
                         ProcessGroup& pg, const CostModel& costs);

}  // namespace gradsync
