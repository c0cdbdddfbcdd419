// shm_duplex.hpp: where SHM's duplex limit (topologies/transports/transport.hpp kShmDuplexBps)
// binds a collective: at a member whose hops in and out both go through host memory on GPUs
// before Ada/Hopper, and which both receives and sends in the call.
//
//   shm_duplex_cap_Bps(two_2080ti, Collective::kAllreduce, Algorithm::kRing, 0) == 4e9  // a ring: both ways
//   shm_duplex_cap_Bps(two_2080ti, Collective::kBroadcast, Algorithm::kRing, 0)        // inf: one way
#pragma once

#include "core/backend.hpp"
#include "sim/nccl_model.hpp"
#include "topologies/channels.hpp"

namespace gradsync::sim {

// shm_duplex_cap_Bps: the least Hop::duplex_cap_Bps of a member whose hops in and out both carry
// data: every member of a ring allreduce, allgather or reduce-scatter; the middle of a broadcast's
// or reduce's chain from `root`; both ends of a tree's hop (up and down run at once). Infinite
// when none, and for NVLS.
double shm_duplex_cap_Bps(const Channels& ch, Collective coll, Algorithm alg, int root);

}  // namespace gradsync::sim
